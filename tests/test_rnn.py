"""nn.RNNCell / LSTMCell / GRUCell and nn.RNN / LSTM / GRU against numpy written here from the
gate equations (LSTM rows i, f, g, o; GRU rows r, z, n): outputs and final states for
several layer counts, directions, layouts and per-sequence lengths, eagerly and compiled;
gradients of inputs, states and every Parameter against finite differences of that numpy;
MindSpore's Parameter names; inter-layer dropout under set_seed; the errors naming the layer."""
import math

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from numeric import finite_differences

RNG = np.random.default_rng(11)
MODES = [ms.PYNATIVE_MODE, ms.GRAPH_MODE]
MODE_IDS = ["eager", "graph"]


# -- the numpy reference ------------------------------------------------------------------------
def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def np_step(kind, x, state, w_ih, w_hh, b_ih, b_hh):
    """One step of `kind` ("tanh", "relu", "LSTM", "GRU"); state h, or (h, c) for LSTM."""
    h = state[0] if kind == "LSTM" else state
    gi, gh = x @ w_ih.T + b_ih, h @ w_hh.T + b_hh
    if kind == "tanh":
        return np.tanh(gi + gh)
    if kind == "relu":
        return np.maximum(gi + gh, 0)
    if kind == "LSTM":
        i, f, g, o = np.split(gi + gh, 4, axis=-1)
        c = sigmoid(f) * state[1] + sigmoid(i) * np.tanh(g)
        return sigmoid(o) * np.tanh(c), c
    i_r, i_z, i_n = np.split(gi, 3, axis=-1)
    h_r, h_z, h_n = np.split(gh, 3, axis=-1)
    r, z = sigmoid(i_r + h_r), sigmoid(i_z + h_z)
    n = np.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h


def np_layers(kind, p, x, hx, lengths, num_layers, directions, batch_first):
    """The stacked layers, each sequence b run alone over its first lengths[b] steps (the
    reverse direction from its last valid step back); outputs past its length are zero.
    hx: (h0,) or (h0, c0), each (layers * directions, batch, hidden)."""
    xs = x.swapaxes(0, 1) if batch_first else x                    # (T, B, I)
    steps, batch = xs.shape[:2]
    hidden = p["weight_hh_l0"].shape[1]
    layer_in, finals = xs, [np.zeros((num_layers * directions, batch, hidden)) for _ in hx]
    for layer in range(num_layers):
        outs = np.zeros((steps, batch, directions * hidden))
        for d in range(directions):
            k, sfx = layer * directions + d, f"_l{layer}" + ("_reverse" if d else "")
            w = [p.get(f"{n}{sfx}", 0) for n in ("weight_ih", "weight_hh", "bias_ih",
                                                  "bias_hh")]
            for b in range(batch):
                state = tuple(s[k, b:b + 1] for s in hx)
                state = state if kind == "LSTM" else state[0]
                times = range(min(lengths[b], steps))
                for t in (reversed(times) if d else times):
                    state = np_step(kind, layer_in[t, b:b + 1], state, *w)
                    h = state[0] if kind == "LSTM" else state
                    outs[t, b, d * hidden:(d + 1) * hidden] = h[0]
                for i, s in enumerate(state if kind == "LSTM" else (state,)):
                    finals[i][k, b] = s[0]
        layer_in = outs
    out = layer_in.swapaxes(0, 1) if batch_first else layer_in
    return out, finals


def params_of(cell):
    return {n: p.asnumpy().astype(np.float64) for n, p in cell.parameters_and_names()}


def run(mode, fn):
    ms.set_context(mode=mode)
    try:
        return fn()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


class Flat(nn.Cell):
    """(output, h_n) or (output, (h_n, c_n)) as a flat tuple; a compiled entry point."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def construct(self, *args):
        out, h = self.layer(*args)
        return (out,) + (tuple(h) if isinstance(h, tuple) else (h,))


LAYERS = {"RNN": (nn.RNN, "tanh"), "RNN_relu": (nn.RNN, "relu"), "LSTM": (nn.LSTM, "LSTM"),
          "GRU": (nn.GRU, "GRU")}


def make(name, *args, **kwargs):
    cls, kind = LAYERS[name]
    if name == "RNN_relu":
        kwargs["nonlinearity"] = "relu"
    return cls(*args, **kwargs), kind


# -- the stacked layers -------------------------------------------------------------------------
CONFIGS = [  # num_layers, bidirectional, batch_first, has_bias, lengths (None: all)
    (1, False, False, True, None),
    (2, True, True, True, None),
    (2, False, False, False, [4, 1, 3]),
    (3, True, False, True, [2, 4, 0]),
    (1, True, True, True, [3, 4, 1]),
]


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("config", CONFIGS, ids=[f"cfg{i}" for i in range(len(CONFIGS))])
@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layers_match_numpy(name, config, mode):
    layers, bi, batch_first, bias, lengths = config
    steps, batch, inp, hid, dirs = 4, 3, 5, 3, 2 if bi else 1
    net, kind = make(name, inp, hid, layers, has_bias=bias, batch_first=batch_first,
                     bidirectional=bi, dtype=ms.float64)
    x = RNG.standard_normal((batch, steps, inp) if batch_first else (steps, batch, inp))
    hx = tuple(RNG.standard_normal((layers * dirs, batch, hid))
               for _ in range(2 if kind == "LSTM" else 1))
    args = [Tensor(x), tuple(map(Tensor, hx)) if kind == "LSTM" else Tensor(hx[0])]
    if lengths is not None:
        args.append(Tensor(np.array(lengths, np.int32)))
    got = run(mode, lambda: [t.asnumpy() for t in Flat(net)(*args)])
    want_out, want_h = np_layers(kind, params_of(net), x, hx, lengths or [steps] * batch,
                                 layers, dirs, batch_first)
    assert got[0].shape == want_out.shape and got[0].dtype == np.float64
    np.testing.assert_allclose(got[0], want_out, rtol=1e-10, atol=1e-12)
    for g, w in zip(got[1:], want_h):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_default_state_is_zeros_and_int64_lengths(name):
    net, kind = make(name, 2, 3, 2, bidirectional=True, dtype=ms.float64)
    x = RNG.standard_normal((3, 2, 2))
    lengths = np.array([2, 3], np.int64)
    got = run(ms.GRAPH_MODE, lambda: [t.asnumpy() for t in
                                      Flat(net)(Tensor(x), None, Tensor(lengths))])
    zeros = tuple(np.zeros((4, 2, 3)) for _ in range(2 if kind == "LSTM" else 1))
    want_out, want_h = np_layers(kind, params_of(net), x, zeros, lengths, 2, 2, False)
    np.testing.assert_allclose(got[0], want_out, rtol=1e-10, atol=1e-12)
    for g, w in zip(got[1:], want_h):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_layer_gradients_match_finite_differences(name, mode):
    """d loss / d (x, hx, every Parameter), loss a weighted sum of output and final states,
    2 bidirectional layers with per-sequence lengths, float64."""
    layers, dirs, steps, batch, inp, hid = 2, 2, 3, 2, 2, 2
    net, kind = make(name, inp, hid, layers, bidirectional=True, dtype=ms.float64)
    lengths = np.array([3, 2], np.int32)
    x = RNG.standard_normal((steps, batch, inp))
    hx = [RNG.standard_normal((layers * dirs, batch, hid))
          for _ in range(2 if kind == "LSTM" else 1)]
    c_out = RNG.standard_normal((steps, batch, dirs * hid))
    c_h = [RNG.standard_normal(h.shape) for h in hx]

    def loss(x_, *states):
        out, h = net(x_, tuple(states) if kind == "LSTM" else states[0], Tensor(lengths))
        finals = h if kind == "LSTM" else (h,)
        total = ops.sum(out * Tensor(c_out))
        for f, c in zip(finals, c_h):
            total = total + ops.sum(f * Tensor(c))
        return total

    params = net.trainable_params()
    positions = tuple(range(1 + len(hx)))
    d_in, d_params = run(mode, lambda: ms.grad(loss, positions, params)(
        Tensor(x), *map(Tensor, hx)))
    p0 = params_of(net)

    def ref(p, x_, states):
        out, finals = np_layers(kind, p, x_, states, lengths, layers, dirs, False)
        return np.sum(out * c_out) + sum(np.sum(f * c) for f, c in zip(finals, c_h))

    np.testing.assert_allclose(d_in[0].asnumpy(), finite_differences(
        lambda v: ref(p0, v, hx), x), rtol=1e-6, atol=1e-8)
    for i, h in enumerate(hx):
        def f(v, i=i):
            return ref(p0, x, [v if j == i else s for j, s in enumerate(hx)])
        np.testing.assert_allclose(d_in[1 + i].asnumpy(), finite_differences(f, h),
                                   rtol=1e-6, atol=1e-8, err_msg=f"hx[{i}]")
    assert len(d_params) == len(p0) == 16
    for got, (pname, _) in zip(d_params, net.parameters_and_names()):
        def g(arr, pname=pname):
            return ref({**p0, pname: arr}, x, hx)
        np.testing.assert_allclose(got.asnumpy(), finite_differences(g, p0[pname]),
                                   rtol=1e-6, atol=1e-8, err_msg=pname)


def test_parameter_names_shapes_and_init():
    """MindSpore's names (kind by kind, `_reverse` for the backward direction), shapes, the
    dtype argument and U(-1/sqrt(hidden), 1/sqrt(hidden)) values."""
    net = nn.LSTM(5, 4, num_layers=2, bidirectional=True)
    names = [n for n, _ in net.parameters_and_names()]
    want = [f"{k}_l{layer}{s}" for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
            for layer in (0, 1) for s in ("", "_reverse")]
    assert names == want
    shapes = {n: p.shape for n, p in net.parameters_and_names()}
    assert shapes["weight_ih_l0"] == (16, 5) and shapes["weight_ih_l1_reverse"] == (16, 8)
    assert shapes["weight_hh_l1"] == (16, 4) and shapes["bias_hh_l0_reverse"] == (16,)
    for _, p in net.parameters_and_names():
        v = p.asnumpy()
        assert p.dtype == ms.float32 and np.abs(v).max() <= 0.5 and v.std() > 0.1
    gru = nn.GRU(3, 2, has_bias=False, dtype=ms.float16)
    assert [(n, p.shape, p.dtype) for n, p in gru.parameters_and_names()] == [
        ("weight_ih_l0", (6, 3), ms.float16), ("weight_hh_l0", (6, 2), ms.float16)]

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.rnn = nn.RNN(2, 3)
    assert [p.name for p in Net().trainable_params()] == [
        "rnn.weight_ih_l0", "rnn.weight_hh_l0", "rnn.bias_ih_l0", "rnn.bias_hh_l0"]
    cell = nn.GRUCell(3, 4)
    assert [(n, p.shape) for n, p in cell.parameters_and_names()] == [
        ("weight_ih", (12, 3)), ("weight_hh", (12, 4)), ("bias_ih", (12,)), ("bias_hh", (12,))]
    assert all(np.abs(p.asnumpy()).max() <= 0.5 for p in cell.trainable_params())


def test_float16_input_casts_the_weights():
    """x in float16 with float32 Parameters computes in float16 (MindSpore casts the weights
    to x's dtype)."""
    net = nn.GRU(3, 2, num_layers=2)
    x = RNG.standard_normal((4, 2, 3))
    out, h = net(Tensor(x.astype(np.float16)))
    assert out.dtype == ms.float16 and h.dtype == ms.float16
    want, _ = np_layers("GRU", params_of(net), x, (np.zeros((2, 2, 2)),), [4, 4], 2, 1, False)
    np.testing.assert_allclose(out.asnumpy().astype(np.float64), want, atol=1e-2)


def test_dropout_between_layers_follows_set_seed():
    """Training: the inter-layer dropout changes the output, the same set_seed gives the
    same output eagerly and compiled; one layer has nothing to drop; eval is the identity."""
    x = Tensor(RNG.standard_normal((5, 4, 3)).astype(np.float32))

    def output(net, mode, train=True):
        net.set_train(train)
        ms.set_seed(7)
        return run(mode, lambda: Flat(net)(x)[0].asnumpy())
    ms.set_seed(1)
    net = nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    dropped, plain = output(net, ms.PYNATIVE_MODE), output(net, ms.PYNATIVE_MODE, False)
    assert not np.allclose(dropped, plain)
    np.testing.assert_array_equal(output(net, ms.PYNATIVE_MODE), dropped)
    np.testing.assert_allclose(output(net, ms.GRAPH_MODE), dropped, rtol=1e-6, atol=1e-7)
    with pytest.warns(UserWarning, match="For 'GRU', the 'dropout' applies between stacked "
                                         "layers, so with num_layers=1 it does nothing"):
        single = nn.GRU(3, 4, dropout=0.5)
    np.testing.assert_array_equal(output(single, ms.PYNATIVE_MODE),
                                  output(single, ms.PYNATIVE_MODE, False))


# -- the cells ----------------------------------------------------------------------------------
CELLS = {"RNNCell": (lambda **k: nn.RNNCell(4, 3, **k), "tanh"),
         "RNNCell_relu": (lambda **k: nn.RNNCell(4, 3, nonlinearity="relu", **k), "relu"),
         "LSTMCell": (lambda **k: nn.LSTMCell(4, 3, **k), "LSTM"),
         "GRUCell": (lambda **k: nn.GRUCell(4, 3, **k), "GRU")}


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("has_bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("name", sorted(CELLS))
def test_cells_match_numpy_and_finite_differences(name, has_bias, mode):
    factory, kind = CELLS[name]
    cell = factory(has_bias=has_bias, dtype=ms.float64)
    x = RNG.standard_normal((2, 4))
    state = [RNG.standard_normal((2, 3)) for _ in range(2 if kind == "LSTM" else 1)]
    weights = [RNG.standard_normal((2, 3)) for _ in state]
    p0 = params_of(cell)
    w = [p0.get(n, 0) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]

    def ref(x_, st, p=w):
        new = np_step(kind, x_, tuple(st) if kind == "LSTM" else st[0], *p)
        return new if kind == "LSTM" else (new,)

    def loss(x_, *st):
        new = cell(x_, tuple(st) if kind == "LSTM" else st[0])
        new = new if kind == "LSTM" else (new,)
        total = ops.sum(new[0] * Tensor(weights[0]))
        for n, c in zip(new[1:], weights[1:]):
            total = total + ops.sum(n * Tensor(c))
        return total

    def np_loss(x_, st, p=w):
        return sum(np.sum(n * c) for n, c in zip(ref(x_, st, p), weights))

    got = run(mode, lambda: cell(Tensor(x), tuple(map(Tensor, state)) if kind == "LSTM"
                                 else Tensor(state[0])))
    for g, want in zip(got if kind == "LSTM" else (got,), ref(x, state)):
        np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-12, atol=1e-12)
    positions = tuple(range(1 + len(state)))
    d_in, d_params = run(mode, lambda: ms.grad(loss, positions, cell.trainable_params())(
        Tensor(x), *map(Tensor, state)))
    np.testing.assert_allclose(d_in[0].asnumpy(), finite_differences(
        lambda v: np_loss(v, state), x), rtol=1e-6, atol=1e-8)
    for i in range(len(state)):
        np.testing.assert_allclose(d_in[1 + i].asnumpy(), finite_differences(
            lambda v: np_loss(x, [v if j == i else s for j, s in enumerate(state)]),
            state[i]), rtol=1e-6, atol=1e-8)
    names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")[:4 if has_bias else 2]
    for got_p, pname in zip(d_params, names):
        k = names.index(pname)
        np.testing.assert_allclose(got_p.asnumpy(), finite_differences(
            lambda v: np_loss(x, state, w[:k] + [v] + w[k + 1:]), w[k]), rtol=1e-6,
            atol=1e-8, err_msg=pname)


def test_cells_unrolled_equal_the_layer():
    """An LSTMCell stepped over time with a layer's weights gives the layer's output."""
    layer = nn.LSTM(3, 2, dtype=ms.float64)
    cell = nn.LSTMCell(3, 2, dtype=ms.float64)
    for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        getattr(cell, n).set_data(getattr(layer, n + "_l0"))
    x = RNG.standard_normal((4, 2, 3))
    out, (h, c) = layer(Tensor(x))
    state = (Tensor(np.zeros((2, 2))), Tensor(np.zeros((2, 2))))
    for t in range(4):
        state = cell(Tensor(x[t]), state)
        np.testing.assert_allclose(state[0].asnumpy(), out.asnumpy()[t], rtol=1e-12)
    np.testing.assert_allclose(state[1].asnumpy(), c.asnumpy()[0], rtol=1e-12)


# -- errors -------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, error, match", [
    (dict(input_size=0), ValueError, "For 'LSTM', the 'input_size' should be a positive int"),
    (dict(hidden_size=2.0), TypeError, "For 'LSTM', the type of 'hidden_size'"),
    (dict(num_layers=True), TypeError, "For 'LSTM', the type of 'num_layers'"),
    (dict(dropout=0), TypeError, "For 'LSTM', the type of 'dropout' should be float"),
    (dict(dropout=1.0), ValueError, r"For 'LSTM', the 'dropout' should be in \[0, 1\)"),
    (dict(bidirectional=1), TypeError, "For 'LSTM', the type of 'bidirectional'"),
    (dict(batch_first=None), TypeError, "For 'LSTM', the type of 'batch_first'"),
    (dict(has_bias="yes"), TypeError, "For 'LSTM', the type of 'has_bias'"),
    (dict(dtype=ms.int32), TypeError, "For 'LSTM', the 'dtype' should be one of"),
])
def test_layer_argument_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        nn.LSTM(**{"input_size": 3, "hidden_size": 2, **kwargs})


def test_nonlinearity_errors():
    with pytest.raises(ValueError, match="For 'RNN', the 'nonlinearity' should be one of"):
        nn.RNN(3, 2, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="For 'RNNCell', the 'nonlinearity' should be one of"):
        nn.RNNCell(3, 2, nonlinearity="gelu")
    with pytest.raises(TypeError, match="For 'GRUCell', the type of 'has_bias'"):
        nn.GRUCell(3, 2, has_bias=0)


F = np.float32


@pytest.mark.parametrize("args, error, match", [
    ((np.ones((2, 3, 4), F),), ValueError,
     r"For 'GRU', the 'x' should be \(seq_len, batch_size, input_size=3\).*\[2, 3, 4\]"),
    ((np.ones((2, 3), F),), ValueError, "For 'GRU', the 'x' should be"),
    ((np.ones((0, 2, 3), F),), ValueError, "For 'GRU', the 'x' should be"),
    ((np.ones((2, 2, 3), np.int32),), TypeError, "For 'GRU', the 'x' should be a Tensor with "
                                                  "dtype in"),
    ((np.ones((2, 2, 3), F), np.ones((1, 2, 2), np.float64)), TypeError,
     "For 'GRU', the dtype of 'hx' should be the dtype of 'x' Float32, but got Float64"),
    ((np.ones((2, 2, 3), F), np.ones((2, 2, 2), F)), ValueError,
     r"For 'GRU', the 'hx' should be \(num_directions \* num_layers=1, batch_size=2, "
     r"hidden_size=2\), but got shape \[2, 2, 2\]"),
    ((np.ones((2, 2, 3), F), None, np.ones(2, F)), TypeError,
     "For 'GRU', the 'seq_length' should be a Tensor with dtype in"),
    ((np.ones((2, 2, 3), F), None, np.ones(3, np.int32)), ValueError,
     r"For 'GRU', the 'seq_length' should be \(batch_size=2,\) like 'x', but got shape \[3\]"),
])
@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_layer_input_errors(args, error, match, mode):
    net = nn.GRU(3, 2)
    tensors = [None if a is None else Tensor(a) for a in args]
    with pytest.raises(error, match=match):
        run(mode, lambda: net(*tensors))


def test_state_errors():
    x, h = Tensor(np.ones((2, 2, 3), F)), Tensor(np.zeros((1, 2, 2), F))
    with pytest.raises(TypeError, match="For 'LSTM', the 'hx' should be a tuple"):
        nn.LSTM(3, 2)(x, h)
    with pytest.raises(TypeError, match="For 'LSTM', the length of 'hx' should be 2, but got 3"):
        nn.LSTM(3, 2)(x, (h, h, h))
    with pytest.raises(TypeError, match=r"For 'LSTM', the 'hx\[1\]' should be a Tensor"):
        nn.LSTM(3, 2)(x, (h, 1.0))
    with pytest.raises(TypeError, match="For 'RNN', the 'x' should be a Tensor, but got list"):
        nn.RNN(3, 2)([[1.0]])
    cell_x, cell_h = Tensor(np.ones((2, 3), F)), Tensor(np.zeros((2, 2), F))
    with pytest.raises(ValueError, match=r"For 'RNNCell', the 'x' should be \(batch_size, "
                                         r"input_size=3\), but got shape \[2, 4\]"):
        nn.RNNCell(3, 2)(Tensor(np.ones((2, 4), F)), cell_h)
    with pytest.raises(ValueError, match=r"For 'GRUCell', the 'hx' should be \(batch_size=2, "
                                         r"hidden_size=2\), but got shape \[3, 2\]"):
        nn.GRUCell(3, 2)(cell_x, Tensor(np.zeros((3, 2), F)))
    with pytest.raises(TypeError, match="For 'LSTMCell', the 'hx' should be a tuple"):
        nn.LSTMCell(3, 2)(cell_x, cell_h)
    with pytest.raises(TypeError, match=r"For 'LSTMCell', the dtype of 'hx\[0\]' should be"):
        nn.LSTMCell(3, 2)(cell_x, (Tensor(np.zeros((2, 2), np.float16)), cell_h))
