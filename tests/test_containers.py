"""nn.CellList and nn.SequentialCell: list behaviour, MindSpore's Parameter names (kept
in step with positions), and networks built on them equal to numpy, eager and compiled,
before and after the list changes."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn

RNG = np.random.default_rng(8)


def dense(seed):
    layer = nn.Dense(3, 3, weight_init="normal", dtype=ms.float64)
    rng = np.random.default_rng(seed)
    layer.weight.set_data(Tensor(rng.standard_normal((3, 3))))
    layer.bias.set_data(Tensor(rng.standard_normal(3)))
    return layer


class Stack(nn.Cell):
    def __init__(self, n):
        super().__init__()
        self.blocks = nn.CellList([dense(i) for i in range(n)])

    def construct(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def numpy_stack(blocks, x):
    for b in blocks:
        x = x @ b.weight.asnumpy().T + b.bias.asnumpy()
    return x


@pytest.fixture(params=[ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
def mode(request):
    ms.set_context(mode=request.param)
    yield request.param
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _names(net):
    return [p.name for p in net.get_parameters()]


def test_cell_list_network_equals_numpy_before_and_after_edits(mode):
    net = Stack(3)
    x = RNG.standard_normal((2, 3))
    assert _names(net) == [f"blocks.{i}.{w}" for i in range(3) for w in ("weight", "bias")]
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), numpy_stack(net.blocks, x), rtol=1e-12)
    first = net.blocks[0]
    del net.blocks[0]                                   # the compiled net sees the change
    assert len(net.blocks) == 2 and net.blocks[-1] is not first
    assert _names(first) == ["weight", "bias"]           # taken out: its own names again
    assert _names(net) == [f"blocks.{i}.{w}" for i in range(2) for w in ("weight", "bias")]
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), numpy_stack(net.blocks, x), rtol=1e-12)
    net.blocks.insert(0, first)
    net.blocks.append(dense(9))
    net.blocks[1] = dense(10)
    net.blocks += [dense(11)]
    assert len(net.blocks) == 5 and net.blocks[0] is first
    assert _names(net) == [f"blocks.{i}.{w}" for i in range(5) for w in ("weight", "bias")]
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), numpy_stack(net.blocks, x), rtol=1e-12)
    assert [type(c) for c in net.blocks[1:3]] == [nn.Dense, nn.Dense]
    assert isinstance(net.blocks[1:3], nn.CellList) and len(net.blocks[::2]) == 3


def test_cell_list_trains_and_checkpoints_under_its_names(tmp_path):
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = Stack(2)
        x, y = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
        before = [p.asnumpy().copy() for p in net.trainable_params()]
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                   nn.SGD(net.trainable_params(), 0.1))
        step(Tensor(x), Tensor(y))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    # one SGD step by hand: the gradient of mean((f(x) - y)^2) through both layers
    w0, b0, w1, b1 = before
    h = x @ w0.T + b0
    out = h @ w1.T + b1
    d = 2 * (out - y) / out.size
    dh = d @ w1
    want = [w0 - 0.1 * dh.T @ x, b0 - 0.1 * dh.sum(0), w1 - 0.1 * d.T @ h, b1 - 0.1 * d.sum(0)]
    for p, w in zip(net.trainable_params(), want):
        np.testing.assert_allclose(p.asnumpy(), w, rtol=1e-10)
    path = str(tmp_path / "stack.ckpt")
    ms.save_checkpoint(net, path)
    fresh = Stack(2)
    assert ms.load_param_into_net(fresh, ms.load_checkpoint(path)) == ([], [])
    for a, b in zip(fresh.get_parameters(), net.get_parameters()):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_sequential_cell_slices_and_edits(mode):
    seq = nn.SequentialCell([dense(1), nn.ReLU(), dense(2)])
    x = RNG.standard_normal((2, 3))
    h = np.maximum(x @ seq[0].weight.asnumpy().T + seq[0].bias.asnumpy(), 0)
    want = h @ seq[2].weight.asnumpy().T + seq[2].bias.asnumpy()
    np.testing.assert_allclose(seq(Tensor(x)).asnumpy(), want, rtol=1e-12)
    head = seq[:2]
    assert isinstance(head, nn.SequentialCell) and len(head) == 2
    assert _names(seq) == ["0.weight", "0.bias", "2.weight", "2.bias"]   # a slice renames nothing
    np.testing.assert_allclose(head(Tensor(x)).asnumpy(), h, rtol=1e-12)
    del seq[1]
    assert _names(seq) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    np.testing.assert_allclose(seq(Tensor(x)).asnumpy(), numpy_stack(list(seq), x), rtol=1e-12)


def test_container_errors_name_the_container():
    cells = nn.CellList([nn.ReLU()])
    with pytest.raises(TypeError, match=r"For 'CellList', the cell should be a Cell, but got int"):
        cells.append(3)
    with pytest.raises(TypeError, match=r"For 'CellList', the cell 1 should be a Cell"):
        nn.CellList([nn.ReLU(), "relu"])
    with pytest.raises(IndexError, match=r"For 'CellList', the index should be in \[-1, 1\), "
                                         r"but got 1"):
        cells[1]
    with pytest.raises(TypeError, match=r"For 'SequentialCell', the index should be an int or "
                                        r"a slice, but got str"):
        nn.SequentialCell(nn.ReLU())["0"]
    with pytest.raises(TypeError, match=r"For 'CellList', a CellList is not callable"):
        cells(Tensor(np.ones(2)))


class Heads(nn.Cell):
    def __init__(self):
        super().__init__()
        self.heads = nn.CellDict({"a": dense(1), "b": dense(2)})

    def construct(self, x):
        return self.heads["a"](x) + self.heads["b"](x)


def test_cell_dict_network_equals_numpy_and_behaves_as_a_dict(mode):
    net = Heads()
    x = RNG.standard_normal((2, 3))
    assert _names(net) == ["heads.a.weight", "heads.a.bias", "heads.b.weight", "heads.b.bias"]
    a, b = net.heads["a"], net.heads["b"]
    want = numpy_stack([a], x) + numpy_stack([b], x)
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), want, rtol=1e-12)
    assert list(net.heads) == ["a", "b"] and "a" in net.heads and len(net.heads) == 2
    assert net.heads.keys() == ["a", "b"] and net.heads.values() == [a, b]
    net.heads["a"] = dense(3)                            # replaced: the old one's names back
    assert _names(a) == ["weight", "bias"]
    assert net.heads.pop("b") is b and _names(b) == ["weight", "bias"]
    net.heads.update([("b", b)])
    assert _names(net) == ["heads.a.weight", "heads.a.bias", "heads.b.weight", "heads.b.bias"]
    want = numpy_stack([net.heads["a"]], x) + numpy_stack([b], x)
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), want, rtol=1e-12)
    net.heads.clear()
    assert len(net.heads) == 0 and net.trainable_params() == []
    with pytest.raises(KeyError, match=r"For 'CellDict', there is no cell 'a'; the keys are \[\]"):
        net.heads["a"]
    with pytest.raises(TypeError, match=r"a key should be a non-empty str without '.', but got 'x.y'"):
        net.heads["x.y"] = dense(1)
    with pytest.raises(TypeError, match=r"the cell of 'c' should be a Cell, but got int"):
        net.heads["c"] = 3


def test_identity_layer_returns_its_input(mode):
    x = RNG.standard_normal((2, 3))
    np.testing.assert_array_equal(nn.Identity()(Tensor(x)).asnumpy(), x)


class Replaced(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = dense(1)
        self.act = ms.ops.ReLU()

    def construct(self, x):
        return self.act(self.fc(x))


def test_a_layer_parameter_or_primitive_put_in_after_a_call_is_what_runs(mode):
    """What a graph mode call runs follows the Cell tree as it is now: a compiled graph of
    the replaced layer, Parameter or Primitive was a stale answer."""
    net, x = Replaced(), RNG.standard_normal((2, 3))
    relu = lambda v: np.maximum(v, 0)                                  # noqa: E731
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), relu(numpy_stack([net.fc], x)))
    net.fc = dense(2)
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), relu(numpy_stack([net.fc], x)))
    net.fc.weight = ms.Parameter(Tensor(np.eye(3)), "weight")
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), relu(x + net.fc.bias.asnumpy()))
    net.act = ms.ops.Sigmoid()
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(),
                               1 / (1 + np.exp(-(x + net.fc.bias.asnumpy()))), rtol=1e-12)


def test_a_function_compiled_over_a_network_follows_its_changes(mode):
    """ms.jit and ms.grad of a function that calls a network (not a Cell of their own):
    the Cells a trace called are watched, so a layer replaced later compiles anew."""
    net, x = Replaced(), RNG.standard_normal((2, 3))

    @ms.jit
    def twice(v):
        return net(v) * 2.0

    grad = ms.grad(lambda v: ms.ops.ReduceSum()(net.fc(v), ()))
    for _ in range(2):
        w = net.fc.weight.asnumpy()
        want = np.maximum(numpy_stack([net.fc], x), 0) * 2.0
        np.testing.assert_allclose(twice(Tensor(x)).asnumpy(), want, rtol=1e-12)
        np.testing.assert_allclose(grad(Tensor(x)).asnumpy(), np.tile(w.sum(0), (2, 1)),
                                   rtol=1e-12)
        net.fc = dense(7)
