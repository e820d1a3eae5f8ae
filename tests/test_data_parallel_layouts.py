"""data_parallel's default strategy on a simulated world of 4: the batch is split where the
graph carries it, every Parameter stays whole, and only what mixes the batch communicates."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops


@pytest.fixture
def dp(sim):
    sim(4, rank=1)
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=4)
    yield
    ms.reset_auto_parallel_context()


def ones(*shape):
    return Tensor(np.ones(shape, np.float32))


class ParamsFirst(nn.Cell):
    """Ops whose first input is a Parameter (a reshaped bias, a transposed weight) and a
    MatMul whose batch sits on its second input's dim 1."""

    def __init__(self):
        super().__init__()
        self.b = Parameter(ones(8), name="b")
        self.w = Parameter(ones(8, 8), name="w")
        self.mm = ops.MatMul()

    def construct(self, x):
        wt = ops.transpose(self.w, (1, 0))
        y = self.mm(x, wt) + ops.reshape(self.b, (1, 8))
        return self.mm(wt, ops.transpose(y, (1, 0)))          # (8, batch)


def comm(graph):
    return [n.op for n in graph.nodes if n.is_communication]


def test_parameters_stay_whole_and_the_batch_follows_the_graph(dp):
    net = ParamsFirst()
    graph = net.compile(ones(8, 8))
    layouts = net.parameter_layout_dict
    assert list(layouts["b"].slice_shape) == [8] and list(layouts["w"].slice_shape) == [8, 8]
    assert comm(graph) == []
    out = graph.outputs[0].layout                    # each rank fed 8 of the 32 rows
    assert tuple(out.tensor_shape) == (8, 32) and tuple(out.tensor_map) == (-1, 0)


def test_a_reduction_over_the_batch_combines_it(dp):
    class Mean(nn.Cell):
        def construct(self, x):
            return ops.mean(ops.transpose(x, (1, 0)), 1)

    graph = Mean().compile(ones(8, 3))
    assert comm(graph) == ["AllReduce"]
