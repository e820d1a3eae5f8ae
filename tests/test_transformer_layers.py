"""nn.Embedding, nn.LayerNorm, the activation layers, Dense's activation names and the functional
spellings (msops.ops.gelu, ...) against numpy, eagerly and compiled."""
import math

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops

RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 4)).astype(np.float32)
erf = np.vectorize(math.erf)


def gelu_exact(x):
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def both_modes(make, *inputs):
    """The cell's output eagerly and compiled (GRAPH_MODE): asserted equal, returned once."""
    eager = make()(*inputs).asnumpy()
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = make()(*inputs).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(compiled, eager, rtol=1e-6, atol=1e-7)
    return eager


# -- activation layers and Dense's names -----------------------------------------------------
LAYERS = [
    (lambda: nn.GELU(), gelu_tanh), (lambda: nn.GELU(approximate=False), gelu_exact),
    (lambda: nn.FastGelu(), lambda x: x / (1 + np.exp(-1.702 * x))),
    (lambda: nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x))), (lambda: nn.Tanh(), np.tanh),
    (lambda: nn.Softmax(0), lambda x: softmax(x, 0)),
    (lambda: nn.LogSoftmax(), lambda x: np.log(softmax(x))),
]


@pytest.mark.parametrize("make,ref", LAYERS)
def test_activation_layers_match_numpy(make, ref):
    np.testing.assert_allclose(both_modes(make, Tensor(X)), ref(X), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,ref", [("relu", lambda x: np.maximum(x, 0)), ("gelu", gelu_tanh),
                                      ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
                                      ("tanh", np.tanh), ("softmax", softmax),
                                      ("logsoftmax", lambda x: np.log(softmax(x))),
                                      ("fast_gelu", lambda x: x / (1 + np.exp(-1.702 * x)))])
def test_dense_activation_names(name, ref):
    w, b = RNG.standard_normal((5, 4)).astype(np.float32), np.full(5, 0.1, np.float32)
    got = both_modes(lambda: nn.Dense(4, 5, w, b, activation=name.upper()), Tensor(X))
    np.testing.assert_allclose(got, ref(X @ w.T + b), rtol=1e-5, atol=1e-5)


# -- Embedding ---------------------------------------------------------------------------
IDS = np.array([[1, 0, 5], [3, 3, 9]], np.int32)       # 9 is out of range: zeros


@pytest.mark.parametrize("use_one_hot", [False, True])
def test_embedding_looks_up_rows(use_one_hot):
    table = RNG.standard_normal((6, 4)).astype(np.float32)
    got = both_modes(lambda: nn.Embedding(6, 4, use_one_hot, Tensor(table)), Tensor(IDS))
    want = np.where((IDS < 6)[..., None], table[np.minimum(IDS, 5)], 0)
    assert got.shape == (2, 3, 4)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_embedding_padding_idx_init_and_table_gradient():
    ms.set_seed(3)
    emb = nn.Embedding(6, 4, padding_idx=-1)
    table = emb.embedding_table.asnumpy()
    np.testing.assert_array_equal(table[5], 0)
    assert np.abs(table[:5]).max() > 0 and emb.embedding_table.name == "embedding_table"
    weights = RNG.standard_normal((2, 3, 4))

    class Loss(nn.Cell):
        def __init__(self):
            super().__init__()
            self.emb, self.sum = emb, ops.ReduceSum()

        def construct(self, ids):
            return self.sum(self.emb(ids) * Tensor(weights.astype(np.float32)), ())
    grad = ms.grad(Loss(), None, weights=emb.trainable_params())(Tensor(IDS))[0].asnumpy()
    want = np.zeros((6, 4))
    valid = IDS < 6
    np.add.at(want, IDS[valid], weights[valid])
    np.testing.assert_allclose(grad, want, rtol=1e-5, atol=1e-6)


def test_embedding_errors():
    with pytest.raises(ValueError, match="For 'Embedding', the 'vocab_size' should be"):
        nn.Embedding(0, 4)
    with pytest.raises(TypeError, match="For 'Embedding', the 'dtype' should be"):
        nn.Embedding(6, 4, dtype=ms.float32)
    with pytest.raises(ValueError, match=r"For 'Embedding', the 'padding_idx' should be in "
                                         r"\[-6, 6\), but got 6"):
        nn.Embedding(6, 4, padding_idx=6)
    with pytest.raises(ValueError, match=r"For 'Embedding', the shape of 'embedding_table' "
                                         r"should be \[6, 4\], but got \[4, 6\]"):
        nn.Embedding(6, 4, embedding_table=np.zeros((4, 6), np.float32))


# -- LayerNorm ---------------------------------------------------------------------------
def test_layer_norm_layer_matches_numpy_and_shards_its_primitive():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    gamma = RNG.standard_normal((3, 4)).astype(np.float32)

    def make():
        return nn.LayerNorm((3, 4), 1, 1, gamma_init=Tensor(gamma), beta_init=0.5, epsilon=1e-5)
    got = both_modes(make, Tensor(x))
    mean, var = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(var + 1e-5) * gamma + 0.5,
                               rtol=1e-5, atol=1e-5)
    ln = make().shard(((2, 1, 4),))
    assert ln.layer_norm.in_strategy == ((2, 1, 4), (1, 4), (1, 4))
    assert [p.name for p in ln.trainable_params()] == ["gamma", "beta"]
    with pytest.raises(TypeError, match="For 'LayerNorm', the type of 'normalized_shape' "):
        nn.LayerNorm(4)


def test_layer_norm_layer_sharded_in_a_simulated_world_plans_two_allreduces():
    from msops.communication import init, release
    init("simulation", world_size=4, rank=1)
    try:
        ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=4,
                                     full_batch=True)
        ln = nn.LayerNorm((8,)).shard(((1, 4),))
        graph = ln.compile(Tensor(np.ones((2, 8), np.float32)))
        assert [n.op for n in graph.nodes if n.is_communication] == ["AllReduce"] * 2
        assert graph.outputs[0].shape == (2, 2)
    finally:
        ms.reset_auto_parallel_context()
        release()


# -- functional spellings ------------------------------------------------------------------
I32 = np.array([[2, 0], [1, 1]], np.int32)
FUNCTIONAL = [
    (lambda x: ops.gelu(x), gelu_exact), (lambda x: ops.gelu(x, "tanh"), gelu_tanh),
    (lambda x: ops.fast_gelu(x), lambda x: x / (1 + np.exp(-1.702 * x))),
    (lambda x: ops.sigmoid(x), lambda x: 1 / (1 + np.exp(-x))), (lambda x: ops.tanh(x), np.tanh),
    (lambda x: ops.erf(x), erf), (lambda x: ops.log_softmax(x, 0), lambda x: np.log(softmax(x, 0))),
    (lambda x: ops.sqrt(ops.pow(x, 2.0)), np.abs), (lambda x: ops.maximum(x, 0.0),
                                                    lambda x: np.maximum(x, 0)),
    (lambda x: ops.minimum(x, 0.0), lambda x: np.minimum(x, 0)),
    (lambda x: ops.floor_div(x, 0.5), lambda x: np.floor_divide(x, 0.5)),
    (lambda x: ops.select(ops.gt(x, 0.0), x, ops.zeros_like(x)), lambda x: np.maximum(x, 0)),
    (lambda x: ops.ones_like(x, ms.float64) * ops.Cast()(ops.ge(x, 0.0), ms.float64),
     lambda x: (x >= 0).astype(np.float64)),
    (lambda x: ops.Cast()(ops.lt(x, 0.0), ms.float32) + ops.Cast()(ops.le(x, 0.0), ms.float32)
     + ops.Cast()(ops.ne(x, 0.0), ms.float32), lambda x: 2.0 * (x < 0) + (x != 0)),
    (lambda x: ops.bias_add(x, ops.squeeze(ops.gather(x, Tensor(np.zeros(1, np.int32)), 0), 0)),
     lambda x: x + x[0]),
    (lambda x: ops.tile(x, (1, 2)), lambda x: np.tile(x, (1, 2))),
    (lambda x: ops.squeeze(ops.expand_dims(x, 0)), lambda x: x),
    (lambda x: ops.squeeze(ops.expand_dims(x, 2), 2), lambda x: x),
    (lambda x: ops.gather_d(x, 1, Tensor(I32[:, :2].repeat(2, 0)[:3])),
     lambda x: np.take_along_axis(x, I32[:, :2].repeat(2, 0)[:3], 1)),
    (lambda x: ops.gather_nd(x, Tensor(I32)), lambda x: x[I32[:, 0], I32[:, 1]]),
    (lambda x: ops.gather_elements(x, 0, Tensor(I32)), lambda x: x[I32, [[0, 1]]]),
]


class Fn(nn.Cell):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def construct(self, x):
        return self.fn(x)


@pytest.mark.parametrize("fn,ref", FUNCTIONAL)
def test_functional_spellings_match_numpy(fn, ref):
    got = both_modes(lambda: Fn(fn), Tensor(X))
    np.testing.assert_allclose(got, ref(X), rtol=1e-5, atol=1e-6)


def test_functional_errors():
    with pytest.raises(ValueError, match=r"For 'gelu', the 'approximate' should be 'none' or "
                                         r"'tanh', but got 'erf'"):
        ops.gelu(Tensor(X), "erf")
