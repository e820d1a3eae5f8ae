"""The oracle of the parallel layer: a sharded net on N ranks equals the serial net.

`check(make_net, *inputs)` runs the net stand-alone (every rank alone, no communication)
and sharded in semi_auto_parallel graph mode, gathers the sharded output to every rank
and compares. It returns the compiled local graph so tests can also count collectives.
"""
import numpy as np

import msops as ms
from msops import Tensor, nn
from msops.communication import get_group_size
from msops.parallel import gather_full


def run_serial(make_net, *inputs, train=False):
    ms.reset_auto_parallel_context()
    ms.set_context(mode=ms.GRAPH_MODE)
    net = make_net()
    net.set_train(train)
    out = net(*inputs)
    return [o.asnumpy() for o in out] if isinstance(out, tuple) else out.asnumpy()


def run_parallel(make_net, *inputs, train=False, mode="semi_auto_parallel", **context):
    ms.set_auto_parallel_context(parallel_mode=mode, device_num=get_group_size(),
                                 full_batch=True, **context)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = make_net()
        net.set_train(train)
        graph = net.compile(*inputs)
        out = net(*inputs)
        outs = out if isinstance(out, tuple) else (out,)
        full = [gather_full(o).asnumpy() for o in outs]
    finally:
        ms.reset_auto_parallel_context()
    return (full if isinstance(out, tuple) else full[0]), graph


def check(make_net, *inputs, train=False, rtol=1e-5, atol=1e-5, mode="semi_auto_parallel",
          **context):
    """Assert sharded == serial; returns the local compiled graph (`context`: more
    auto-parallel context keys, e.g. search_mode)."""
    want = run_serial(make_net, *inputs, train=train)
    got, graph = run_parallel(make_net, *inputs, train=train, mode=mode, **context)
    for g, w in zip(got if isinstance(got, list) else [got],
                    want if isinstance(want, list) else [want]):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return graph


def check_grads(grads, rtol=1e-4, atol=1e-5):
    """`grads()` (gradient Tensors, e.g. of ms.grad) run serially and sharded
    (semi_auto_parallel, full_batch) agree, every sharded gradient gathered whole."""
    ms.reset_auto_parallel_context()
    ms.set_context(mode=ms.GRAPH_MODE)
    want = [g.asnumpy() for g in grads()]
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=get_group_size(),
                                 full_batch=True)
    try:
        got = [gather_full(g).asnumpy() for g in grads()]
    finally:
        ms.reset_auto_parallel_context()
    assert len(got) == len(want) > 0
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def comm_ops(graph):
    """Names of the communication nodes of a compiled graph, in execution order."""
    return [n.op for n in graph.nodes if n.is_communication]


def assert_held(param, whole, layout=None, rtol=1e-5, atol=1e-5, err_msg=""):
    """`param` holds only this rank's slice of `layout` (its parameter_layout_dict layout;
    None or unsplit: the whole array), and it equals that slice of the serial `whole`."""
    from msops.communication import get_rank
    whole = np.asarray(whole)
    if layout is not None and any(layout.dim_axes):
        want = whole[layout.slice_of(get_rank())]
        assert tuple(param.shape) == tuple(layout.slice_shape), (param.name, param.shape)
    else:
        want = whole
    np.testing.assert_allclose(param.asnumpy(), want, rtol=rtol, atol=atol,
                               err_msg=err_msg or param.name)


def data(*shape, seed=0):
    """A float32 Tensor of normal values seeded by its shape (the same on every rank)."""
    rng = np.random.default_rng(sum(shape) * 7 + len(shape) + seed)
    return Tensor(rng.standard_normal(shape).astype(np.float32))


class DenseDP(nn.Cell):
    """Dense(16, 32) -> ReLU -> Dense(32, 8) with fixed weights: the data-parallel net of
    the training tests."""

    def __init__(self):
        super().__init__()
        self.d1 = nn.Dense(16, 32, weight_init=data(32, 16))
        self.act = nn.ReLU()
        self.d2 = nn.Dense(32, 8, weight_init=data(8, 32, seed=1))

    def construct(self, x):
        return self.d2(self.act(self.d1(x)))
