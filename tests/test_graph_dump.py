"""Graph.dump() text IR and Graph.to_dot() Graphviz output of a small graph."""
import re

import numpy as np

from msops import Parameter, Tensor, nn, ops


class Small(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(8, 4, has_bias=True)
        self.allgather = ops.AllGather()
        self.scale = Parameter(Tensor(np.ones((4,), np.float32)))

    def construct(self, x):
        y = self.dense(x)
        return self.allgather(y * self.scale)


def _graph(sim):
    sim(2, 0)
    return Small().compile(Tensor(np.ones((3, 8), np.float32)))


def test_nodes_in_execution_order_with_op_shape_dtype(sim):
    g = _graph(sim)
    assert [(n.op, n.shape, str(n.dtype)) for n in g.nodes] == [
        ("MatMul", (3, 4), "Float32"), ("Add", (3, 4), "Float32"),
        ("Mul", (3, 4), "Float32"), ("AllGather", (6, 4), "Float32")]


def test_dump_text(sim):
    text = _graph(sim).dump()
    lines = text.splitlines()
    assert lines[0] == "graph Small (1 inputs, 3 parameters, 4 ops) {"
    assert "  %0 = input x : [3, 8] Float32" in lines
    assert "  %1 = parameter dense.weight : [4, 8] Float32" in lines
    assert "  %3 = parameter dense.bias : [4] Float32" in lines
    assert "  %5 = parameter scale : [4] Float32" in lines
    matmul = next(l for l in lines if "MatMul" in l)
    assert re.fullmatch(r"  %2 = MatMul\(%0, %1\) : \[3, 4\] Float32  "
                        r"\{transpose_a=False, transpose_b=True\}  # test_graph_dump\.py:\d+",
                        matmul)
    gather = next(l for l in lines if "AllGather" in l)
    assert re.fullmatch(r"  %7 = AllGather\(%6\) : \[6, 4\] Float32  \{group='\w+', rank_size=2, "
                        r"rank=0, fusion=0, mean_flag=False, no_eliminate=True\}  "
                        r"# test_graph_dump\.py:\d+", gather)
    assert lines[-2:] == ["  return %7", "}"]


def test_dump_shows_layout_when_set(sim):
    g = _graph(sim)
    g.nodes[0].layout = "L(dev=[2], map=[0, -1])"
    line = next(l for l in g.dump().splitlines() if "MatMul" in l)
    assert "[3, 4] Float32  layout=L(dev=[2], map=[0, -1])  {" in line


def test_dot_marks_communication_and_labels_edges(sim):
    dot = _graph(sim).to_dot()
    assert dot.startswith('digraph "Small" {') and dot.rstrip().endswith("}")
    node_lines = {m.group(1): m.group(2) for m in re.finditer(r"^  n(\d+) \[(.*)\];$", dot, re.M)}
    gather, matmul = node_lines["7"], node_lines["2"]
    assert gather.startswith('label="AllGather\\n[6, 4] Float32"')
    assert "shape=hexagon" in gather and 'fillcolor="#fca5a5"' in gather
    assert "shape=box" in matmul and "hexagon" not in matmul and "#fca5a5" not in matmul
    assert 'label="parameter dense.weight\\n[4, 8] Float32"' in node_lines["1"]
    assert '  n0 -> n2 [label="[3, 8]"];' in dot
    assert '  n6 -> n7 [label="[3, 4]"];' in dot
    assert '  n7 -> output [label="[6, 4]"];' in dot
    # every op and leaf is a node, every data edge is drawn
    assert set(node_lines) == {"0", "1", "2", "3", "4", "5", "6", "7"}
    assert len(re.findall(r" -> n\d+ ", dot)) == 7


def test_dump_multi_output_and_const_operands():
    from msops.graph.tracer import trace
    split = ops.Split(axis=0, output_num=2)
    g = trace(lambda x: split(ops.Reshape()(x, (4, 2)))[1], [Tensor(np.ones(8, np.float32))])
    lines = g.dump().splitlines()
    assert "  %2 = Reshape(%0, (4, 2)) : [4, 2] Float32" in lines[2]
    assert "  %3 = Split(%2) : ([2, 2], [2, 2]) (Float32, Float32)  {axis=0, output_num=2}" \
        in lines[3]
    assert lines[4].startswith("  %5 = TupleGetItem(%3, 0) : [2, 2] Float32")
    assert lines[5].startswith("  %7 = TupleGetItem(%3, 1) : [2, 2] Float32")
    dot = g.to_dot()
    assert 'label="TupleGetItem[1]\\n[2, 2] Float32"' in dot
    assert '  n3 -> n7 [label="([2, 2], [2, 2])"];' in dot
