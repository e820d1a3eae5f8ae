"""Training outside TrainOneStepCell's GRAPH_MODE path, under real MPI on 2 and 4 ranks.

PYNATIVE_MODE data parallel: each rank differentiates its local loss on its own batch
slice and `DistributedGradReducer` (made by TrainOneStepCell, or by hand) averages the
gradients over the world; with gradients_mean=True it trains as GRAPH_MODE data_parallel
and as the serial network on the whole batch.
"""
import numpy as np
import pytest

from parallel_oracle import DenseDP, comm_ops, data

import msops as ms
from msops import Tensor, nn
from msops.communication import get_group_size, get_rank

RANKS = (2, 4)
N, R = get_group_size(), get_rank()
STEPS = 5


OPTIMIZERS = {
    "sgd_momentum": lambda ps: nn.SGD(ps, learning_rate=0.02, momentum=0.9),
    "adam": lambda ps: nn.Adam(ps, learning_rate=0.01, weight_decay=0.01),
}
X, Y = data(4 * N, 16, seed=3), data(4 * N, 8, seed=4)


def local(t):
    """This rank's dim-0 slice of the global batch."""
    b = t.shape[0] // N
    return Tensor(t.asnumpy()[R * b:(R + 1) * b])


def _train_cell(mode, optimizer, x, y, parallel=None, **context):
    """STEPS of TrainOneStepCell; (losses, trained parameters)."""
    ms.reset_auto_parallel_context()
    if parallel:
        ms.set_auto_parallel_context(parallel_mode=parallel, device_num=N, **context)
    try:
        ms.set_context(mode=mode)
        net = DenseDP()
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                   OPTIMIZERS[optimizer](net.trainable_params()))
        losses = [float(step(x, y).asnumpy()) for _ in range(STEPS)]
    finally:
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.PYNATIVE_MODE)
    return np.array(losses), {p.name: p.asnumpy().copy() for p in net.trainable_params()}


def _assert_params(got, want):
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_pynative_data_parallel_equals_graph_and_serial(optimizer):
    """Each rank feeds its batch slice; PYNATIVE losses are the ranks' local losses (their
    mean is the global loss), GRAPH_MODE's the global loss; the parameters agree."""
    want_losses, want = _train_cell(ms.GRAPH_MODE, optimizer, X, Y)
    graph_losses, graph = _train_cell(ms.GRAPH_MODE, optimizer, local(X), local(Y),
                                      "data_parallel", gradients_mean=True)
    py_losses, py = _train_cell(ms.PYNATIVE_MODE, optimizer, local(X), local(Y),
                                "data_parallel", gradients_mean=True)
    _, hybrid = _train_cell(ms.GRAPH_MODE, optimizer, local(X), local(Y), "hybrid_parallel",
                            gradients_mean=True)        # compiled stand-alone + the reducer
    _assert_params(graph, want)
    _assert_params(py, want)
    _assert_params(hybrid, want)
    np.testing.assert_allclose(graph_losses, want_losses, rtol=1e-4, atol=1e-6)
    from mpi4py import MPI
    mean_losses = MPI.COMM_WORLD.allreduce(py_losses) / N
    np.testing.assert_allclose(mean_losses, want_losses, rtol=1e-4, atol=1e-6)
    assert want_losses[-1] < want_losses[0]


def _serial_grads():
    ms.reset_auto_parallel_context()
    net = DenseDP()
    loss, grads = ms.value_and_grad(nn.WithLossCell(net, nn.MSELoss()), None,
                                    net.trainable_params())(X, Y)
    return float(loss.asnumpy()), [g.asnumpy() for g in grads]


@pytest.mark.parametrize("mean", [True, False])
def test_pynative_value_and_grad_with_a_reducer_by_hand(mean):
    """MindSpore 2.x's loop: value_and_grad gives the local loss's gradients, the reducer
    sums them over the world (and divides by the degree when mean): the serial gradients
    of the global mean loss, or N times them without mean."""
    _, want = _serial_grads()
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=N,
                                 gradients_mean=mean)
    try:
        net = DenseDP()
        params = net.trainable_params()
        grad_fn = ms.value_and_grad(nn.WithLossCell(net, nn.MSELoss()), None, params)
        reducer = nn.DistributedGradReducer(params, mean=mean)
        _, grads = grad_fn(local(X), local(Y))
        got = reducer(grads)
    finally:
        ms.reset_auto_parallel_context()
    for p, g, w in zip(params, got, want):
        np.testing.assert_allclose(g.asnumpy(), w if mean else N * w, rtol=1e-4, atol=1e-5,
                                   err_msg=p.name)


@pytest.mark.parametrize("mean", [True, False])
def test_graph_mode_tutorial_loop_with_a_reducer_equals_serial(mean):
    """MindSpore's data-parallel tutorial loop in GRAPH_MODE, outside ms.jit: each call of
    value_and_grad compiles a partitioned graph whose backward already reduced the
    gradients (they carry a layout), so the reducer returns them as they are and the
    optimizer's update (compiled on its own) trains as the serial network does."""
    ms.set_context(mode=ms.GRAPH_MODE)
    want_losses, want = _train_cell(ms.GRAPH_MODE, "sgd_momentum", X, Y)
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=N,
                                 gradients_mean=mean)
    try:
        ms.set_context(mode=ms.GRAPH_MODE)
        net = DenseDP()
        optimizer = OPTIMIZERS["sgd_momentum"](net.trainable_params())
        grad_fn = ms.value_and_grad(nn.WithLossCell(net, nn.MSELoss()), None,
                                    optimizer.parameters)
        reducer = nn.DistributedGradReducer(optimizer.parameters, mean=mean)
        losses = []
        for _ in range(STEPS):
            loss, grads = grad_fn(local(X), local(Y))
            optimizer(reducer(grads))
            losses.append(float(loss.asnumpy()))
        got = {p.name: p.asnumpy().copy() for p in net.trainable_params()}
    finally:
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5, atol=1e-6)
    _assert_params(got, want)


def test_pynative_semi_auto_parallel_is_refused():
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N)
    try:
        net = nn.WithLossCell(DenseDP(), nn.MSELoss())
        with pytest.raises(RuntimeError, match=r"For 'value_and_grad', the parallel mode "
                                               r"'semi_auto_parallel' .* should run in "
                                               r"GRAPH_MODE .* or inside ms.jit, but got "
                                               r"PYNATIVE_MODE"):
            ms.value_and_grad(net, None, net.trainable_params())(X, Y)
    finally:
        ms.reset_auto_parallel_context()


class Megatron(nn.Cell):
    """W1 split by columns, W2 by rows (semi_auto_parallel)."""

    def __init__(self):
        super().__init__()
        self.d1 = nn.Dense(16, 32, weight_init=data(32, 16))
        self.d1.matmul.shard(((1, 1), (N, 1)))
        self.d1.bias_add.shard(((1, N), (N,)))
        self.act = nn.ReLU()
        self.act.relu.shard(((1, N),))
        self.d2 = nn.Dense(32, 8, weight_init=data(8, 32, seed=1))
        self.d2.matmul.shard(((1, N), (1, N)))

    def construct(self, x):
        return self.d2(self.act(self.d1(x)))


def _train_jit(make_net, optimizer, x, y, parallel=None, cell=False, **context):
    """STEPS of MindSpore 2.x's loop: value_and_grad + the optimizer in one ms.jit step (or
    in a Cell's construct, GRAPH_MODE). Returns (losses, {name: (array, layout)})."""
    ms.reset_auto_parallel_context()
    if parallel:
        ms.set_auto_parallel_context(parallel_mode=parallel, device_num=N, **context)
    try:
        ms.set_context(mode=ms.GRAPH_MODE if cell else ms.PYNATIVE_MODE)
        net = make_net()
        loss_net = nn.WithLossCell(net, nn.MSELoss())
        opt = OPTIMIZERS[optimizer](net.trainable_params())
        grad_fn = ms.value_and_grad(loss_net, None, opt.parameters)

        def step(x, y):
            loss, grads = grad_fn(x, y)
            opt(grads)
            return loss

        if cell:
            class Step(nn.Cell):
                def construct(self, x, y):
                    return step(x, y)
            run = Step()
        else:
            run = ms.jit(step)
        losses = [float(run(x, y).asnumpy()) for _ in range(STEPS)]
        graph = (run._compile_cache if cell else run._cache).last_graph()
    finally:
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.PYNATIVE_MODE)
    layouts = {id(p.value): p.layout for p in graph.parameters}
    return np.array(losses), {p.name: (p.asnumpy().copy(), layouts.get(id(p)))
                              for p in net.trainable_params()}, graph


def _step_graph(make_net, optimizer, x, y, parallel, **context):
    """TrainOneStepCell's compiled parallel step (GRAPH_MODE), after one call."""
    ms.set_auto_parallel_context(parallel_mode=parallel, device_num=N, **context)
    try:
        ms.set_context(mode=ms.GRAPH_MODE)
        net = make_net()
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                   OPTIMIZERS[optimizer](net.trainable_params()))
        step(x, y)
        return step._compile_cache.last_graph()
    finally:
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.PYNATIVE_MODE)


JIT_CASES = {       # (network, parallel mode, fed batch is the rank's slice, context)
    "data_parallel": (DenseDP, "data_parallel", True, {}),
    "megatron": (Megatron, "semi_auto_parallel", False, {"full_batch": True}),
}


@pytest.mark.parametrize("case,cell,optimizer", [
    ("data_parallel", False, "sgd_momentum"), ("data_parallel", True, "adam"),
    ("megatron", False, "adam"), ("megatron", True, "sgd_momentum")])
def test_gradient_inside_a_parallel_step_equals_serial(case, cell, optimizer):
    """`loss, grads = grad_fn(x, y); opt(grads)` in an ms.jit function (PYNATIVE_MODE) or a
    Cell's construct (GRAPH_MODE) compiles TrainOneStepCell's parallel step: the same
    collectives, each rank updating its slice, the serial parameters after STEPS."""
    make, parallel, sliced, context = JIT_CASES[case]
    want_losses, want, _ = _train_jit(make, optimizer, X, Y)
    x, y = (local(X), local(Y)) if sliced else (X, Y)
    losses, got, graph = _train_jit(make, optimizer, x, y, parallel, cell=cell, **context)
    for name, (value, layout) in got.items():
        part = layout.slice_of(R)
        np.testing.assert_allclose(value, want[name][0][part], rtol=1e-4, atol=1e-5,
                                   err_msg=name)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-4, atol=1e-5)
    reference = _step_graph(make, optimizer, x, y, parallel, **context)
    assert comm_ops(graph) == comm_ops(reference) and comm_ops(graph)


def test_parallel_step_refusals():
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=N)
    try:
        net = nn.WithLossCell(DenseDP(), nn.MSELoss())
        grad_fn = ms.value_and_grad(net, None, net.trainable_params())

        @ms.jit
        def scaled_first(x, y):
            return grad_fn(x * 2, y)[0]

        @ms.jit
        def swapped(x, y):
            return grad_fn(y, x)[0]

        @ms.jit
        def other_op_first(x, y):
            doubled = x * 2
            return grad_fn(x, y)[0] + ms.ops.ReduceSum()(doubled, ())
        with pytest.raises(NotImplementedError, match=r"For 'value_and_grad', a parallel step's "
                                                      r"gradient function should take the step's "
                                                      r"own Tensor inputs, but got a computed "
                                                      r"Tensor"):
            scaled_first(local(X), local(Y))
        with pytest.raises(NotImplementedError, match=r"For 'value_and_grad', in a parallel "
                                                      r"step .* should be called first, on the "
                                                      r"step's own Tensor inputs .* but got "
                                                      r"'Mul' before it"):
            other_op_first(local(X), local(Y))
        with pytest.raises(NotImplementedError, match=r"should take the step's Tensor inputs, "
                                                      r"each once and in order, but got "
                                                      r"inputs \[1, 0\] of 2"):
            swapped(local(X), local(Y))
    finally:
        ms.reset_auto_parallel_context()


@pytest.mark.parametrize("case,whole_sens", [("data_parallel", True), ("data_parallel", False),
                                             ("megatron", True)])
def test_sens_param_in_a_parallel_context_equals_serial(case, whole_sens):
    """GradOperation(sens_param=True) in GRAPH_MODE parallel: the sens is the whole output's
    (or this rank's slice of it); the weight gradients are the serial ones for that sens."""
    make, parallel, sliced, context = JIT_CASES[case]
    sens = data(4 * N, 8, seed=7)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = make()
        params = net.trainable_params()
        want = ops_grad(net, params)(X, sens)
        ms.set_auto_parallel_context(parallel_mode=parallel, device_num=N, **context)
        net = make()
        params = net.trainable_params()
        fed = (local(X), sens if whole_sens else local(sens)) if sliced else (X, sens)
        got = ops_grad(net, params)(*fed)
        for p, g, w in zip(params, got, want):
            part = g.layout.slice_of(R)
            np.testing.assert_allclose(g.asnumpy(), w.asnumpy()[part], rtol=1e-4, atol=1e-4,
                                       err_msg=p.name)
        with pytest.raises(ValueError, match=r"the sens 0 should have the shape and dtype of "
                                             r"output 0: \[.*\] or \[.*\] Float32"):
            ops_grad(net, params)(fed[0], data(3, 8))
    finally:
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.PYNATIVE_MODE)


def ops_grad(net, params):
    from msops import ops
    return ops.GradOperation(get_by_list=True, sens_param=True)(net, params)


class ClippedStep(nn.TrainOneStepCell):
    """MindSpore's custom training cell: its own construct, the cell's `grad` and
    `grad_reducer`, global-norm clipping and `depend`."""

    def construct(self, *inputs):
        from msops import ops
        from msops.ops import functional as F, operations as P
        loss = self.network(*inputs)
        sens = P.Fill()(P.DType()(loss), P.Shape()(loss), self.sens)
        grads = self.grad_reducer(self.grad(self.network, self.weights)(*inputs, sens))
        return F.depend(loss, self.optimizer(ops.clip_by_global_norm(grads, 0.05)))


def _train_custom(mode, x, y, parallel=None, make=DenseDP, **context):
    ms.reset_auto_parallel_context()
    if parallel:
        ms.set_auto_parallel_context(parallel_mode=parallel, device_num=N, gradients_mean=True,
                                     **context)
    try:
        ms.set_context(mode=mode)
        net = make()
        step = ClippedStep(nn.WithLossCell(net, nn.MSELoss()),
                           nn.SGD(net.trainable_params(), 0.5))
        for _ in range(STEPS):
            step(x, y)
        graph = step._compile_cache.last_graph()
    finally:
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.PYNATIVE_MODE)
    layouts = {} if graph is None else {id(p.value): p.layout for p in graph.parameters}
    return {p.name: p.asnumpy().copy() for p in net.trainable_params()}, \
        {p.name: layouts.get(id(p)) for p in net.trainable_params()}


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
def test_a_mindspore_custom_training_cell_in_data_parallel_equals_serial(mode):
    """Each rank feeds its batch slice. PYNATIVE_MODE: the cell's grad_reducer averages the
    local gradients. GRAPH_MODE: the step compiles as a parallel step (its network call
    before the gradient function is the partitioned forward's output, its constant sens
    seeds the backward, the reducer passes the already reduced gradients on). Either
    way the clipped update is the serial one on the whole batch."""
    want, _ = _train_custom(ms.GRAPH_MODE, X, Y)
    _assert_params(_train_custom(mode, local(X), local(Y), "data_parallel")[0], want)


def test_a_mindspore_custom_training_cell_with_megatron_strategies_equals_serial():
    """The same cell over a semi_auto_parallel network (column- then row-split weights,
    full batch): the global norm of the split gradients sums every rank's part (the step's
    tail combines the reduction), so each rank's clipped update of its weight slices is
    the serial one."""
    want, _ = _train_custom(ms.GRAPH_MODE, X, Y, make=Megatron)
    got, layouts = _train_custom(ms.GRAPH_MODE, X, Y, "semi_auto_parallel", make=Megatron,
                                 full_batch=True)
    assert sum(got[n].shape != want[n].shape for n in got) >= 2      # split weights held
    for name, value in got.items():
        np.testing.assert_allclose(value, want[name][layouts[name].slice_of(R)], rtol=1e-4,
                                   atol=1e-5, err_msg=name)


def test_tail_reductions_of_split_gradients_are_combined():
    """After the gradients, ReduceSum / ReduceMean / ReduceMax over the split dim of a
    row-split weight's gradient (and over every dim) give the serial values on every rank;
    over its unsplit dim, this rank's rows (a split result, as the serial one's slice)."""
    from msops import ops

    class Step(nn.Cell):
        def __init__(self, grad_fn):
            super().__init__()
            self.grad_fn = grad_fn

        def construct(self, x, y):
            loss, grads = self.grad_fn(x, y)
            g = grads[0]                                  # d1.weight (32, 16): rows split
            return (ops.ReduceSum()(g, 0), ops.ReduceMean()(g, ()), ops.ReduceMax()(g, 0),
                    ops.ReduceSum()(g, 1))

    def run(parallel):
        ms.reset_auto_parallel_context()
        if parallel:
            ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                         full_batch=True)
        try:
            ms.set_context(mode=ms.GRAPH_MODE)
            net = nn.WithLossCell(Megatron(), nn.MSELoss())
            return [o.asnumpy() for o in Step(ms.value_and_grad(
                net, None, net.trainable_params()))(X, Y)]
        finally:
            ms.reset_auto_parallel_context()
            ms.set_context(mode=ms.PYNATIVE_MODE)

    want, got = run(False), run(True)
    for k in range(3):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-6)
    rows = want[3].shape[0] // N
    np.testing.assert_allclose(got[3], want[3][R * rows:(R + 1) * rows], rtol=1e-4, atol=1e-6)
