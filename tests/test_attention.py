"""nn.MultiheadAttention and the Transformer layers against numpy written here: outputs and
attention weights for several shapes, both layouts, bool and float masks, kdim/vdim,
add_bias_kv and add_zero_attn, eagerly and compiled; gradients against finite differences;
the errors naming the layer."""
import math

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from numeric import finite_differences

RNG = np.random.default_rng(23)


# -- the numpy reference -------------------------------------------------------------------------
def params_of(cell):
    """Attribute path -> numpy value of every Parameter of `cell` (names relative to it)."""
    return {name: p.asnumpy().astype(np.float64) for name, p in cell.parameters_and_names()}


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def additive(mask):
    """A bool mask as -inf where True, a float mask as it is."""
    mask = np.asarray(mask)
    return np.where(mask, -np.inf, 0.0) if mask.dtype == bool else mask.astype(np.float64)


def np_mha(p, query, key, value, heads, batch_first=False, key_padding_mask=None,
           attn_mask=None, average=True, zero_attn=False, prefix=""):
    """MultiheadAttention written out: returns (output, weights) in MindSpore's layouts."""
    unbatched = query.ndim == 2
    q, k, v = (x[None] if unbatched else x if batch_first else x.swapaxes(0, 1)
               for x in (query, key, value))                      # (N, len, features)
    n, tgt, e = q.shape
    src, hd = k.shape[1], e // heads
    w = p.get(prefix + "in_proj_weight")
    wq, wk, wv = np.split(w, 3) if w is not None else (
        p[prefix + "q_proj_weight"], p[prefix + "k_proj_weight"], p[prefix + "v_proj_weight"])
    b = p.get(prefix + "in_proj_bias", np.zeros(3 * e))
    bq, bk, bv = np.split(b, 3)

    def heads_of(x, weight, bias):                              # (N, len, E) -> (N, H, len, hd)
        y = x @ weight.T + bias
        return y.reshape(n, x.shape[1], heads, hd).transpose(0, 2, 1, 3)
    qh, kh, vh = heads_of(q, wq, bq), heads_of(k, wk, bk), heads_of(v, wv, bv)
    extra = []
    if prefix + "bias_k" in p:
        extra.append((p[prefix + "bias_k"], p[prefix + "bias_v"]))
    if zero_attn:
        extra.append((np.zeros(e), np.zeros(e)))
    for bk_, bv_ in extra:
        kh = np.concatenate([kh, np.broadcast_to(bk_.reshape(1, heads, 1, hd), (n, heads, 1, hd))], 2)
        vh = np.concatenate([vh, np.broadcast_to(bv_.reshape(1, heads, 1, hd), (n, heads, 1, hd))], 2)
    scores = np.einsum("nhld,nhsd->nhls", qh, kh) / math.sqrt(hd)
    mask = np.zeros((n, heads, tgt, src))
    if attn_mask is not None:
        mask = mask + additive(attn_mask).reshape((n, heads, tgt, src) if attn_mask.ndim == 3
                                                  else (tgt, src))
    if key_padding_mask is not None:
        mask = mask + additive(key_padding_mask).reshape(n, 1, 1, src)
    scores = scores + np.concatenate([mask, np.zeros((n, heads, tgt, len(extra)))], -1)
    weights = softmax(scores)
    ctx = np.einsum("nhls,nhsd->nlhd", weights, vh).reshape(n, tgt, e)
    out = ctx @ p[prefix + "out_proj.weight"].T + p.get(prefix + "out_proj.bias", 0)
    weights = weights.mean(1) if average else weights
    if unbatched:
        return out[0], weights[0]
    return (out if batch_first else out.swapaxes(0, 1)), weights


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(-1, keepdims=True) + eps) * gamma + beta


def np_layer(p, x, heads, memory=None, masks=(), norm_first=False, batch_first=False,
             eps=1e-5, act=lambda y: np.maximum(y, 0), prefix=""):
    """TransformerEncoderLayer (memory None) or TransformerDecoderLayer written out; masks:
    (self attn_mask, self key padding[, memory attn_mask, memory key padding])."""
    masks = tuple(masks) + (None,) * (4 - len(masks))
    blocks = [lambda y: np_mha(p, y, y, y, heads, batch_first, masks[1], masks[0],
                               prefix=prefix + "self_attn.")[0]]
    if memory is not None:
        blocks.append(lambda y: np_mha(p, y, memory, memory, heads, batch_first, masks[3],
                                       masks[2], prefix=prefix + "multihead_attn.")[0])
    blocks.append(lambda y: act(y @ p[prefix + "dense1.weight"].T + p[prefix + "dense1.bias"])
                  @ p[prefix + "dense2.weight"].T + p[prefix + "dense2.bias"])
    for i, block in enumerate(blocks, 1):
        g, b = p[f"{prefix}norm{i}.gamma"], p[f"{prefix}norm{i}.beta"]
        x = x + block(layer_norm(x, g, b, eps)) if norm_first else \
            layer_norm(x + block(x), g, b, eps)
    return x


# -- helpers -----------------------------------------------------------------------------------
def both_modes(fn):
    """fn() eagerly and in GRAPH_MODE: asserted equal, the eager result returned."""
    eager = fn()
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = fn()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    eager = eager if isinstance(eager, tuple) else (eager,)
    compiled = compiled if isinstance(compiled, tuple) else (compiled,)
    assert len(eager) == len(compiled)
    for a, b in zip(eager, compiled):
        np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), rtol=1e-6, atol=1e-7)
    return tuple(t.asnumpy() for t in eager)


def randn(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def layout(seq, n, e, batch_first):
    return randn(n, seq, e) if batch_first else randn(seq, n, e)


# -- MultiheadAttention --------------------------------------------------------------------------
SHAPES = [  # (L, S, N, E, heads)
    (4, 4, 2, 8, 2), (3, 5, 2, 12, 3), (2, 6, 3, 6, 1), (5, 3, 1, 16, 4)]


@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
def test_cross_attention_matches_numpy(shape, batch_first):
    tgt, src, n, e, h = shape
    m = nn.MultiheadAttention(e, h, batch_first=batch_first, dtype=ms.float64)
    q, k, v = layout(tgt, n, e, batch_first), layout(src, n, e, batch_first), \
        layout(src, n, e, batch_first)
    out, w = both_modes(lambda: m(Tensor(q), Tensor(k), Tensor(v)))
    want_out, want_w = np_mha(params_of(m), q, k, v, h, batch_first)
    assert out.shape == want_out.shape and w.shape == (n, tgt, src)
    np.testing.assert_allclose(out, want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w, want_w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
def test_self_attention_packed_projection_matches_numpy(batch_first):
    """query is key is value: one MatMul of the packed in_proj_weight, split in three."""
    m = nn.MultiheadAttention(8, 2, batch_first=batch_first, dtype=ms.float64)
    x = Tensor(layout(5, 3, 8, batch_first))
    out, w = both_modes(lambda: m(x, x, x, average_attn_weights=False))
    want_out, want_w = np_mha(params_of(m), x.asnumpy(), x.asnumpy(), x.asnumpy(), 2,
                              batch_first, average=False)
    assert w.shape == (3, 2, 5, 5)
    np.testing.assert_allclose(out, want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w, want_w, rtol=1e-10, atol=1e-12)


def bool_mask(*shape, keep_one_axis=-1):
    """A random bool mask leaving at least the first position of each row unmasked."""
    mask = RNG.random(shape) < 0.4
    mask[(slice(None),) * (len(shape) - 1) + (0,)] = False
    return mask


MASKS = {   # name: (attn_mask(n, h, L, S), key_padding_mask(n, S))
    "bool_2d": lambda n, h, l, s: (bool_mask(l, s), None),
    "float_3d": lambda n, h, l, s: (randn(n * h, l, s), None),
    "bool_padding": lambda n, h, l, s: (None, bool_mask(n, s)),
    "float_padding": lambda n, h, l, s: (None, randn(n, s)),
    "bool_both": lambda n, h, l, s: (bool_mask(n * h, l, s), bool_mask(n, s)),
    "float_2d_bool_padding": lambda n, h, l, s: (randn(l, s), bool_mask(n, s)),
    "causal_uint8": lambda n, h, l, s: (np.triu(np.ones((l, s), np.uint8), 1), None),
}


@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
@pytest.mark.parametrize("masks", list(MASKS))
def test_masks_match_numpy(masks, batch_first):
    tgt, src, n, e, h = 4, 5, 2, 8, 2
    if masks == "causal_uint8":
        src = tgt
    attn_mask, kpm = MASKS[masks](n, h, tgt, src)
    m = nn.MultiheadAttention(e, h, batch_first=batch_first, dtype=ms.float64)
    q, kv = layout(tgt, n, e, batch_first), layout(src, n, e, batch_first)
    out, w = both_modes(lambda: m(Tensor(q), Tensor(kv), Tensor(kv),
                                  key_padding_mask=None if kpm is None else Tensor(kpm),
                                  attn_mask=None if attn_mask is None else Tensor(attn_mask),
                                  average_attn_weights=False))
    ref_mask = attn_mask.astype(bool) if masks == "causal_uint8" else attn_mask
    want_out, want_w = np_mha(params_of(m), q, kv, kv, h, batch_first, kpm, ref_mask,
                              average=False)
    np.testing.assert_allclose(out, want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w, want_w, rtol=1e-10, atol=1e-12)
    if ref_mask is not None and ref_mask.dtype == bool:            # masked: weight 0 exactly
        assert np.all(w.reshape(n * h, tgt, src)[np.broadcast_to(ref_mask, (n * h, tgt, src))]
                      == 0)


@pytest.mark.parametrize("bias_kv,zero_attn", [(True, False), (False, True), (True, True)])
def test_bias_kv_zero_attn_kdim_vdim_match_numpy(bias_kv, zero_attn):
    """Appended key/value positions (never masked), separate q/k/v weights for kdim/vdim."""
    tgt, src, n, e, h = 3, 4, 2, 6, 3
    m = nn.MultiheadAttention(e, h, add_bias_kv=bias_kv, add_zero_attn=zero_attn, kdim=5,
                              vdim=7, dtype=ms.float64)
    p = params_of(m)
    assert "in_proj_weight" not in p and p["k_proj_weight"].shape == (e, 5) \
        and p["v_proj_weight"].shape == (e, 7) and p["q_proj_weight"].shape == (e, e)
    if bias_kv:
        assert p["bias_k"].shape == (1, 1, e) and p["bias_v"].shape == (1, 1, e)
    q, k, v = randn(tgt, n, e), randn(src, n, 5), randn(src, n, 7)
    attn_mask, kpm = bool_mask(tgt, src), randn(n, src)
    out, w = both_modes(lambda: m(Tensor(q), Tensor(k), Tensor(v), Tensor(kpm),
                                  attn_mask=Tensor(attn_mask)))
    want_out, want_w = np_mha(p, q, k, v, h, False, kpm, attn_mask, zero_attn=zero_attn)
    assert w.shape == (n, tgt, src + bias_kv + zero_attn)
    np.testing.assert_allclose(out, want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w, want_w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
@pytest.mark.parametrize("average", [True, False])
def test_unbatched_inputs_and_need_weights(average, batch_first):
    """2-D inputs are one sequence whatever batch_first says; a 3-D attn_mask is per head."""
    m = nn.MultiheadAttention(8, 2, batch_first=batch_first, dtype=ms.float64)
    q, kv, kpm = randn(3, 8), randn(5, 8), bool_mask(5)
    heads_mask = randn(2, 3, 5)
    out, w = both_modes(lambda: m(Tensor(q), Tensor(kv), Tensor(kv), Tensor(kpm),
                                  attn_mask=Tensor(heads_mask), average_attn_weights=average))
    want_out, want_w = np_mha(params_of(m), q, kv, kv, 2, key_padding_mask=kpm,
                              attn_mask=heads_mask, average=average)
    assert out.shape == (3, 8) and w.shape == ((3, 5) if average else (2, 3, 5))
    np.testing.assert_allclose(out, want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w, want_w, rtol=1e-10, atol=1e-12)
    only = both_modes(lambda: m(Tensor(q), Tensor(kv), Tensor(kv), need_weights=False))
    assert len(only) == 1                                # MindSpore: (attn_output,)
    np.testing.assert_allclose(only[0], np_mha(params_of(m), q, kv, kv, 2)[0], rtol=1e-10)


def test_float32_without_bias_and_parameter_layout():
    """MindSpore's Parameters: in_proj_weight (3E, E), in_proj_bias (3E,), out_proj a Dense;
    has_bias=False drops both biases; float32 follows the float64 reference to 1e-5."""
    m = nn.MultiheadAttention(8, 4)
    assert [(n, tuple(p.shape)) for n, p in m.parameters_and_names()] == [
        ("in_proj_weight", (24, 8)), ("in_proj_bias", (24,)), ("out_proj.weight", (8, 8)),
        ("out_proj.bias", (8,))]
    assert isinstance(m.out_proj, nn.Dense) and m.in_proj_weight.dtype == ms.float32
    np.testing.assert_array_equal(m.in_proj_bias.asnumpy(), 0)
    plain = nn.MultiheadAttention(8, 4, has_bias=False, batch_first=True)
    assert [n for n, _ in plain.parameters_and_names()] == ["in_proj_weight", "out_proj.weight"]
    q = layout(3, 2, 8, True).astype(np.float32)
    out, w = both_modes(lambda: plain(Tensor(q), Tensor(q), Tensor(q)))
    assert out.dtype == np.float32
    want_out, want_w = np_mha(params_of(plain), q.astype(np.float64), q, q, 4, True)
    np.testing.assert_allclose(out, want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w, want_w, rtol=1e-5, atol=1e-6)


def test_float16_follows_the_float64_reference():
    """float16 Parameters and inputs (MatMul multiplies in float32, rounded once), a bool
    mask's -inf in float16: no NaN, close to the float64 reference."""
    m = nn.MultiheadAttention(8, 2, dtype=ms.float16)
    x, mask = randn(5, 3, 8).astype(np.float16), np.triu(np.ones((5, 5), bool), 1)
    out, w = both_modes(lambda: m(Tensor(x), Tensor(x), Tensor(x), attn_mask=Tensor(mask)))
    assert out.dtype == w.dtype == np.float16
    want_out, want_w = np_mha(params_of(m), x.astype(np.float64), x, x, 2, attn_mask=mask)
    np.testing.assert_allclose(out, want_out, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(w, want_w, rtol=2e-2, atol=5e-3)


def test_dropout_zeroes_attention_weights_in_training_only():
    """Training: each weight is 0 or weight / (1 - p); inference: the weights of dropout 0."""
    ms.set_seed(5)
    m = nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True, dtype=ms.float64)
    x = Tensor(randn(2, 6, 8))
    _, plain = m(x, x, x, average_attn_weights=False)
    m.set_train()
    _, dropped = m(x, x, x, average_attn_weights=False)
    plain, dropped = plain.asnumpy(), dropped.asnumpy()
    kept = dropped != 0
    assert 0 < kept.mean() < 1
    np.testing.assert_allclose(dropped[kept], plain[kept] * 2, rtol=1e-12)
    m.set_train(False)
    np.testing.assert_array_equal(m(x, x, x, average_attn_weights=False)[1].asnumpy(), plain)


# -- gradients -------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
def test_gradients_match_finite_differences(mode):
    """d loss / d (query, key, value, every Parameter) of a float64 instance with bias_kv,
    zero_attn and both masks, loss = weighted sums of the output and the weights."""
    tgt, src, n, e, h = 3, 4, 2, 4, 2
    m = nn.MultiheadAttention(e, h, add_bias_kv=True, add_zero_attn=True, dtype=ms.float64)
    q, k, v = randn(tgt, n, e), randn(src, n, e), randn(src, n, e)
    attn_mask, kpm = randn(tgt, src), bool_mask(n, src)
    c_out, c_w = randn(tgt, n, e), randn(n, tgt, src + 2)
    out_weight = Tensor(c_out)
    w_weight = Tensor(c_w)

    def loss(query, key, value):
        out, w = m(query, key, value, Tensor(kpm), attn_mask=Tensor(attn_mask))
        return ops.sum(out * out_weight) + ops.sum(w * w_weight)

    ms.set_context(mode=mode)
    try:
        params = m.trainable_params()
        d_in, d_params = ms.grad(loss, (0, 1, 2), params)(Tensor(q), Tensor(k), Tensor(v))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    p0 = params_of(m)

    def ref(p, q_, k_, v_):
        out, w = np_mha(p, q_, k_, v_, h, key_padding_mask=kpm, attn_mask=attn_mask,
                        zero_attn=True)
        return (out * c_out).sum() + (w * c_w).sum()
    for got, x, i in zip(d_in, (q, k, v), range(3)):
        def f(arr, i=i):
            args = [q, k, v]
            args[i] = arr
            return ref(p0, *args)
        np.testing.assert_allclose(got.asnumpy(), finite_differences(f, x), rtol=1e-6,
                                   atol=1e-8)
    for got, (name, _) in zip(d_params, m.parameters_and_names()):
        def g(arr, name=name):
            return ref({**p0, name: arr}, q, k, v)
        np.testing.assert_allclose(got.asnumpy(), finite_differences(g, p0[name]), rtol=1e-6,
                                   atol=1e-8, err_msg=name)


# -- Transformer layers ---------------------------------------------------------------------------
@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
def test_encoder_layer_matches_numpy(batch_first, norm_first):
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=batch_first,
                                       norm_first=norm_first, dtype=ms.float64)
    assert sorted(n for n, _ in layer.parameters_and_names()) == sorted([
        "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
        "self_attn.out_proj.bias", "dense1.weight", "dense1.bias", "dense2.weight",
        "dense2.bias", "norm1.gamma", "norm1.beta", "norm2.gamma", "norm2.beta"])
    x, mask, kpm = layout(5, 3, 8, batch_first), bool_mask(5, 5), bool_mask(3, 5)
    (got,) = both_modes(lambda: layer(Tensor(x), Tensor(mask), Tensor(kpm)))
    want = np_layer(params_of(layer), x, 2, masks=(mask, kpm), norm_first=norm_first,
                    batch_first=batch_first)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)


def gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


@pytest.mark.parametrize("activation", ["gelu", nn.GELU(approximate=False), ms.ops.gelu,
                                        "relu", nn.ReLU(), ms.ops.relu],
                         ids=["gelu", "GELU", "ops.gelu", "relu", "ReLU", "ops.relu"])
def test_encoder_stack_activations_match_numpy(activation):
    """TransformerEncoder: copies of the layer (equal Parameters at start), then the norm."""
    layer = nn.TransformerEncoderLayer(6, 3, 10, dropout=0.0, activation=activation,
                                       dtype=ms.float64)
    enc = nn.TransformerEncoder(layer, 2, nn.LayerNorm((6,), epsilon=1e-5, dtype=ms.float64))
    p = params_of(enc)
    np.testing.assert_array_equal(p["layers.0.dense1.weight"], p["layers.1.dense1.weight"])
    np.testing.assert_array_equal(p["layers.0.dense1.weight"],
                                  layer.dense1.weight.asnumpy())
    x, mask = randn(4, 2, 6), randn(4, 4)
    (got,) = both_modes(lambda: enc(Tensor(x), Tensor(mask)))
    act = gelu if "gelu" in str(activation).lower() or isinstance(activation, nn.GELU) else \
        (lambda y: np.maximum(y, 0))
    want = x
    for i in range(2):
        want = np_layer(p, want, 3, masks=(mask,), act=act, prefix=f"layers.{i}.")
    want = layer_norm(want, p["norm.gamma"], p["norm.beta"], 1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_decoder_layer_and_transformer_match_numpy(norm_first):
    """TransformerDecoderLayer (self, memory and feed-forward blocks), and Transformer =
    the encoder stack then the decoder stack, each with its final LayerNorm."""
    layer = nn.TransformerDecoderLayer(8, 2, 12, dropout=0.0, batch_first=True,
                                       norm_first=norm_first, dtype=ms.float64)
    tgt, memory = randn(2, 3, 8), randn(2, 5, 8)
    causal, mem_kpm = np.triu(np.ones((3, 3), bool), 1), bool_mask(2, 5)
    (got,) = both_modes(lambda: layer(Tensor(tgt), Tensor(memory), Tensor(causal),
                                      memory_key_padding_mask=Tensor(mem_kpm)))
    want = np_layer(params_of(layer), tgt, 2, memory, masks=(causal, None, None, mem_kpm),
                    norm_first=norm_first, batch_first=True)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)

    model = nn.Transformer(8, 2, 1, 2, 12, dropout=0.0, norm_first=norm_first,
                           dtype=ms.float64)
    src, tgt = randn(5, 2, 8), randn(3, 2, 8)
    (got,) = both_modes(lambda: model(Tensor(src), Tensor(tgt), tgt_mask=Tensor(causal)))
    p = params_of(model)
    mem = np_layer(p, src, 2, norm_first=norm_first, prefix="encoder.layers.0.")
    mem = layer_norm(mem, p["encoder.norm.gamma"], p["encoder.norm.beta"], 1e-5)
    want = tgt
    for i in range(2):
        want = np_layer(p, want, 2, mem, masks=(causal,), norm_first=norm_first,
                        prefix=f"decoder.layers.{i}.")
    want = layer_norm(want, p["decoder.norm.gamma"], p["decoder.norm.beta"], 1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)


def test_encoder_layer_gradient_matches_finite_differences():
    """d loss / d src through a post-norm float64 layer with a float mask, compiled."""
    layer = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, dtype=ms.float64)
    x, mask, c = randn(3, 2, 4), randn(3, 3), randn(3, 2, 4)
    weight = Tensor(c)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        got = ms.grad(lambda s: ops.sum(layer(s, Tensor(mask)) * weight))(Tensor(x))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    p = params_of(layer)
    want = finite_differences(lambda a: np_layer(p, a, 2, masks=(mask,)) * c, x)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6, atol=1e-8)


# -- errors ---------------------------------------------------------------------------------------
def test_constructor_errors_name_the_layer():
    with pytest.raises(ValueError, match="For 'MultiheadAttention', the 'embed_dim' should be "
                                         "divisible by 'num_heads': 3, but got 8"):
        nn.MultiheadAttention(8, 3)
    with pytest.raises(ValueError, match="MultiheadAttention.*'dropout' should be in"):
        nn.MultiheadAttention(8, 2, dropout=1.0)
    with pytest.raises(TypeError, match="MultiheadAttention.*'dtype'"):
        nn.MultiheadAttention(8, 2, dtype=ms.int32)
    with pytest.raises(ValueError, match="MultiheadAttention.*'num_heads' should be a positive"):
        nn.MultiheadAttention(8, 0)
    with pytest.raises(ValueError, match="For 'TransformerEncoderLayer', the 'activation'"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(ValueError, match="For 'TransformerDecoderLayer', the 'activation'"):
        nn.TransformerDecoderLayer(8, 2, activation=nn.Sigmoid())
    with pytest.raises(ValueError, match="For 'TransformerEncoderLayer', the 'd_model' should "
                                         "be divisible by 'nhead'"):
        nn.TransformerEncoderLayer(10, 4)
    with pytest.raises(TypeError, match="For 'TransformerEncoder', the 'encoder_layer' should "
                                        "be a TransformerEncoderLayer"):
        nn.TransformerEncoder(nn.TransformerDecoderLayer(8, 2), 2)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
def test_call_errors_name_the_layer(mode):
    m = nn.MultiheadAttention(8, 2)
    x = Tensor(randn(4, 2, 8, dtype=np.float32))
    kv = Tensor(randn(5, 2, 8, dtype=np.float32))
    bad = {
        "attn_mask": (ValueError, r"the shape of 'attn_mask' should be \(L, S\) = \(4, 5\) "
                                  r"or \(N \* num_heads, L, S\) = \(4, 4, 5\), but got \(5, 4\)",
                      lambda: m(x, kv, kv, attn_mask=Tensor(np.zeros((5, 4), bool)))),
        "padding": (ValueError, r"the shape of 'key_padding_mask' should be \(2, 5\), but got "
                                r"\(2, 4\)",
                    lambda: m(x, kv, kv, Tensor(np.zeros((2, 4), bool)))),
        "mask dtype": (TypeError, "the 'attn_mask' should be a bool, uint8 or float Tensor, "
                                  "but got Int32",
                       lambda: m(x, kv, kv, attn_mask=Tensor(np.zeros((4, 5), np.int32)))),
        "embed": (ValueError, "the last dim of 'query' should be 8",
                  lambda: m(Tensor(randn(4, 2, 6, dtype=np.float32)), kv, kv)),
        "key/value": (ValueError, "the 'key' and 'value' should have the same sequence",
                      lambda: m(x, kv, Tensor(randn(3, 2, 8, dtype=np.float32)))),
        "dtype": (TypeError, "the dtype of 'query' should be the Parameters' dtype",
                  lambda: m(Tensor(randn(4, 2, 8)), kv, kv)),
        "rank": (ValueError, "the 'query' should be 3-D",
                 lambda: m(Tensor(randn(4, 2, 2, 8, dtype=np.float32)), kv, kv)),
        "batch": (ValueError, "the batch size of 'key' and 'value' should be 2",
                  lambda: m(x, Tensor(randn(5, 3, 8, dtype=np.float32)),
                            Tensor(randn(5, 3, 8, dtype=np.float32)))),
    }
    ms.set_context(mode=mode)
    try:
        for what, (err, msg, call) in bad.items():
            with pytest.raises(err, match="For 'MultiheadAttention', " + msg):
                call()
        model = nn.Transformer(8, 2, 1, 1, 16)
        with pytest.raises(ValueError, match="For 'Transformer', the batch sizes of 'src' and "
                                             "'tgt' should be equal"):
            model(Tensor(randn(3, 2, 8, dtype=np.float32)), Tensor(randn(3, 4, 8,
                                                                        dtype=np.float32)))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
