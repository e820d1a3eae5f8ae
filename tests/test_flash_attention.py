"""FlashAttentionScore and ops.flash_attention_score against numpy attention written here
(softmax(scale * q k^T + shift, masked) v per layout, sparse mode, mask shape, grouped
heads, dropout bits), eagerly and compiled; the row statistics; gradients against central
finite differences; the errors naming the op."""
import doctest

import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from msops.primitives import attention_kernel, attention_ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(31)
BIG = 2147483647


# -- the numpy reference -------------------------------------------------------------------
def to_bnsd(x, layout, heads):
    if layout == "BSH":
        b, s, h = x.shape
        return np.stack([x[:, :, j * (h // heads):(j + 1) * (h // heads)] for j in range(heads)], 1)
    if layout == "SBH":
        return to_bnsd(np.swapaxes(x, 0, 1), "BSH", heads)
    if layout == "BSND":
        return np.swapaxes(x, 1, 2)
    return x


def from_bnsd(x, layout):
    if layout == "BSH":
        return np.concatenate([x[:, j] for j in range(x.shape[1])], -1)
    if layout == "SBH":
        return np.swapaxes(from_bnsd(x, "BSH"), 0, 1)
    if layout == "BSND":
        return np.swapaxes(x, 1, 2)
    return x


def band(mode, s1, s2, pre, nxt, has_mask):
    """Discarded (i, j) of a sparse mode, from its definition, one element at a time."""
    out = np.zeros((s1, s2), bool)
    for i in range(s1):
        for j in range(s2):
            if mode == 2:
                out[i, j] = j > i
            elif mode == 3:
                out[i, j] = j > i + s2 - s1
            elif mode == 4:
                out[i, j] = not (i + s2 - s1 - pre <= j <= i + s2 - s1 + nxt)
            elif mode == 0 and has_mask:
                out[i, j] = not (i - pre <= j <= i + nxt)
    return out


def reference(q, k, v, heads, layout="BSH", scale=1.0, shift=None, mask=None, mode=0,
              pre=BIG, nxt=BIG, keep=None, keep_prob=1.0):
    """(attention_out, row max, row sum) in float64."""
    qb = to_bnsd(np.asarray(q, np.float64), layout, heads)
    d = qb.shape[-1]
    kheads = k.shape[-1] // d                        # (used by the 3-D layouts only)
    kb = to_bnsd(np.asarray(k, np.float64), layout, kheads)
    vb = to_bnsd(np.asarray(v, np.float64), layout, kheads)
    n1, n2 = qb.shape[1], kb.shape[1]
    group = n1 // n2
    kb = np.stack([kb[:, h // group] for h in range(n1)], 1)
    vb = np.stack([vb[:, h // group] for h in range(n1)], 1)
    s1, s2 = qb.shape[2], kb.shape[2]
    scores = np.einsum("bnid,bnjd->bnij", qb, kb) * scale
    if shift is not None:
        scores = scores + shift
    gone = band(mode, s1, s2, pre, nxt, mask is not None)
    if mask is not None and mode in (0, 1):
        gone = gone | np.asarray(mask, bool)
    scores = np.where(gone, -np.inf, scores)
    rmax = scores.max(-1, keepdims=True)
    safe = np.where(np.isinf(rmax), 0, rmax)
    e = np.exp(scores - safe)
    total = e.sum(-1, keepdims=True)
    p = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    if keep is not None:
        p = p * keep / keep_prob
    out = np.einsum("bnij,bnjd->bnid", p, vb)
    return from_bnsd(out, layout), safe[..., 0], total[..., 0]


def shapes(layout, b, n1, n2, s1, s2, d):
    if layout == "BSH":
        return (b, s1, n1 * d), (b, s2, n2 * d)
    if layout == "SBH":
        return (s1, b, n1 * d), (s2, b, n2 * d)
    if layout == "BNSD":
        return (b, n1, s1, d), (b, n2, s2, d)
    return (b, s1, n1, d), (b, s2, n2, d)


def qkv(layout, b=2, n1=4, n2=2, s1=6, s2=7, d=4, dtype=np.float32):
    qs, ks = shapes(layout, b, n1, n2, s1, s2, d)
    return [RNG.standard_normal(s).astype(dtype) for s in (qs, ks, ks)]


def pack(keep):
    """Keep bits (B, N, S1, S2) -> MindSpore's drop_mask: 8 columns a byte, little-endian."""
    s2 = keep.shape[-1]
    pad = np.zeros(keep.shape[:-1] + (-(-s2 // 8) * 8 - s2,), keep.dtype)
    bits = np.concatenate([keep, pad], -1).reshape(keep.shape[:-1] + (-1, 8))
    return (bits * (1 << np.arange(8))).sum(-1).astype(np.uint8)


def test_docstring_example():
    res = doctest.testmod(attention_ops, extraglobs={"Tensor": Tensor, "np": np})
    assert res.attempted >= 4 and res.failed == 0


# -- forward -------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ["BSH", "SBH", "BNSD", "BSND"])
@pytest.mark.parametrize("mode", [0, 2, 3, 4])
def test_layouts_and_sparse_modes_match_numpy_eager_and_compiled(layout, mode):
    q, k, v = qkv(layout)
    pre, nxt = (2, 1) if mode == 4 else (BIG, BIG)
    mask = Tensor(np.triu(np.ones((2048, 2048), bool), 1)) if mode in (2, 3, 4) else None
    want, rmax, total = reference(q, k, v, 4, layout, 0.5, mode=mode, pre=pre, nxt=nxt)
    prim = ops.FlashAttentionScore(4, 1.0, 0.5, pre, nxt, 0, layout, mode)
    for out in eager_and_compiled(lambda q, k, v: prim(q, k, v, None, None, None, mask),
                                  Tensor(q), Tensor(k), Tensor(v)):
        smax, ssum, sout, att = out
        assert att.shape == q.shape and att.dtype == ms.float32 and sout.shape == ()
        assert smax.shape == (2, 4, 6, 8) and smax.dtype == ms.float32
        np.testing.assert_allclose(att.asnumpy(), want, rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(smax.asnumpy(), np.repeat(rmax[..., None], 8, -1), rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(ssum.asnumpy(), np.repeat(total[..., None], 8, -1),
                                   rtol=1e-5)


@pytest.mark.parametrize("mask_shape", [(2, 4, 6, 7), (2, 1, 6, 7), (6, 7)])
@pytest.mark.parametrize("mode", [0, 1])
def test_attention_masks_and_real_shift(mask_shape, mode):
    q, k, v = qkv("BNSD")
    mask = RNG.random(mask_shape) < 0.3
    shift = RNG.standard_normal((1, 4, 6, 7)).astype(np.float32)
    pre, nxt = (3, 2) if mode == 0 else (0, 0)          # mode 1 ignores the tokens
    want, _, _ = reference(q, k, v, 4, "BNSD", 0.3, shift, mask, mode, pre, nxt)
    prim = ops.FlashAttentionScore(4, 1.0, 0.3, pre, nxt, 0, "BNSD", mode)
    for out in eager_and_compiled(lambda q, k, v, s, m: prim(q, k, v, s, None, None, m)[3],
                                  Tensor(q), Tensor(k), Tensor(v), Tensor(shift),
                                  Tensor(mask.astype(np.uint8))):
        np.testing.assert_allclose(out.asnumpy(), want, rtol=2e-5, atol=2e-5)


def test_long_key_sequence_runs_block_by_block():
    """S2 over several blocks (and not a multiple of one): the running max and sum."""
    q, k, v = qkv("BSND", b=1, n1=2, n2=1, s1=5, s2=3 * attention_kernel.BLOCK + 17, d=8)
    q *= 3
    mask = RNG.random((5, k.shape[1])) < 0.5
    want, rmax, total = reference(q, k, v, 2, "BSND", 1.0, mask=mask)
    out = ops.FlashAttentionScore(2, input_layout="BSND")(Tensor(q), Tensor(k), Tensor(v),
                                                          attn_mask=Tensor(mask))
    np.testing.assert_allclose(out[3].asnumpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[1].asnumpy()[..., 0], total, rtol=1e-5)


def test_dropout_bits_and_a_fully_masked_row():
    q, k, v = qkv("BNSD", s2=13)
    keep = (RNG.random((2, 4, 6, 13)) < 0.7).astype(np.float64)
    mask = np.zeros((6, 13), bool)
    mask[2] = True                                       # row 2 sees no key: zeros
    want, _, _ = reference(q, k, v, 4, "BNSD", mask=mask, keep=keep, keep_prob=0.7)
    out = ops.FlashAttentionScore(4, 0.7, input_layout="BNSD")(
        Tensor(q), Tensor(k), Tensor(v), drop_mask=Tensor(pack(keep)), attn_mask=Tensor(mask))
    np.testing.assert_allclose(out[3].asnumpy(), want, rtol=2e-5, atol=2e-5)
    assert not out[3].asnumpy()[:, :, 2].any()


def test_functional_form_and_its_drawn_dropout():
    q, k, v = qkv("BSH")
    want, _, _ = reference(q, k, v, 4, "BSH", 0.25, mode=3)
    got = ops.flash_attention_score(Tensor(q), Tensor(k), Tensor(v), 4, scalar_value=0.25,
                                    sparse_mode=3)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=2e-5, atol=2e-5)
    ms.set_seed(5)
    a = ops.flash_attention_score(Tensor(q), Tensor(k), Tensor(v), 4, keep_prob=0.6)
    ms.set_seed(5)
    b = ops.flash_attention_score(Tensor(q), Tensor(k), Tensor(v), 4, keep_prob=0.6)
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())     # the seeded stream
    full, _, _ = reference(q, k, v, 4, "BSH")
    assert not np.allclose(a.asnumpy(), full, atol=1e-3)        # something was dropped
    # the mask it drew, read back: the output is the reference with those keep bits
    ms.set_seed(5)
    u = ops.UniformReal()((2, 4, 6, 8)).asnumpy()
    keep = (u < 0.6)[..., :7].astype(np.float64)
    want, _, _ = reference(q, k, v, 4, "BSH", keep=keep, keep_prob=0.6)
    np.testing.assert_allclose(a.asnumpy(), want, rtol=2e-5, atol=2e-5)


def test_float16_computes_in_float32():
    q, k, v = qkv("BSH", dtype=np.float16)
    out = ops.FlashAttentionScore(4)(Tensor(q), Tensor(k), Tensor(v))
    want, _, _ = reference(q, k, v, 4, "BSH")
    assert out[3].dtype == ms.float16 and out[0].dtype == ms.float32
    np.testing.assert_allclose(out[3].asnumpy().astype(np.float64), want, rtol=2e-3, atol=2e-3)


# -- backward ------------------------------------------------------------------------------
@pytest.mark.parametrize("layout,mode,dropout", [("BSH", 0, False), ("SBH", 3, False),
                                                 ("BNSD", 4, True), ("BSND", 2, True)])
def test_gradients_match_finite_differences_eager_and_compiled(layout, mode, dropout):
    q, k, v = qkv(layout, b=1, n1=2, n2=1, s1=4, s2=5, d=3, dtype=np.float64)
    shift = RNG.standard_normal((1, 2, 4, 5))
    w = RNG.standard_normal(q.shape)
    keep = (RNG.random((1, 2, 4, 5)) < 0.7).astype(np.float64) if dropout else None
    kp = 0.7 if dropout else 1.0
    mask = RNG.random((4, 5)) < 0.3 if mode == 0 else None
    prim = ops.FlashAttentionScore(2, kp, 0.4, 2, 1, 0, layout, mode)
    drop = Tensor(pack(keep)) if dropout else None
    tmask = Tensor(mask) if mask is not None else None

    def loss(q, k, v, s):
        return (prim(q, k, v, s, drop, None, tmask)[3] * Tensor(w)).sum()

    def ref_loss(q, k, v, s):
        out, _, _ = reference(q, k, v, 2, layout, 0.4, s, mask, mode, 2, 1, keep, kp)
        return float((out * w).sum())
    args = [q, k, v, shift]
    want = [finite_differences(lambda a, i=i: ref_loss(*args[:i], a, *args[i + 1:]), args[i])
            for i in range(4)]
    f = ms.grad(loss, (0, 1, 2, 3))
    eager = f(*[Tensor(a) for a in (q, k, v, shift)])
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = f(*[Tensor(a) for a in (q, k, v, shift)])
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    for e, c, ww in zip(eager, compiled, want):
        np.testing.assert_allclose(e.asnumpy(), ww, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(c.asnumpy(), e.asnumpy(), rtol=1e-12, atol=1e-14)


# -- errors --------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,words", [
    (dict(input_layout="TND"), "'input_layout'"),
    (dict(sparse_mode=5), "'sparse_mode'"),
    (dict(keep_prob=0.0), "'keep_prob'"),
    (dict(inner_precise=2), "'inner_precise'"),
])
def test_bad_attributes_name_the_op(kwargs, words):
    with pytest.raises(ValueError, match=f"For 'FlashAttentionScore', the {words}"):
        ops.FlashAttentionScore(4, **kwargs)


def test_bad_inputs_name_the_op():
    q, k, v = qkv("BSH")
    prim = ops.FlashAttentionScore(4)
    with pytest.raises(ValueError, match="For 'FlashAttentionScore', the 'attn_mask shape'"):
        prim(Tensor(q), Tensor(k), Tensor(v), attn_mask=Tensor(np.zeros((5, 7), bool)))
    with pytest.raises(ValueError, match="the 'drop_mask' should be given exactly when"):
        ops.FlashAttentionScore(4, 0.5)(Tensor(q), Tensor(k), Tensor(v))
    with pytest.raises(ValueError, match="the 'padding_mask' should be None"):
        prim(Tensor(q), Tensor(k), Tensor(v), padding_mask=Tensor(q))
    with pytest.raises(ValueError, match="the key's head count should divide"):
        ops.FlashAttentionScore(4, input_layout="BNSD")(
            Tensor(np.zeros((1, 4, 2, 4), np.float32)), Tensor(np.zeros((1, 3, 2, 4), np.float32)),
            Tensor(np.zeros((1, 3, 2, 4), np.float32)))
    with pytest.raises(TypeError, match="For 'FlashAttentionScore', the 'key' dtype"):
        prim(Tensor(q), Tensor(k.astype(np.float16)), Tensor(v))
    with pytest.raises(ValueError, match="the 'attn_mask' should be given with sparse_mode 1"):
        ops.FlashAttentionScore(4, sparse_mode=1)(Tensor(q), Tensor(k), Tensor(v))


# -- vmap ----------------------------------------------------------------------------------
@pytest.mark.parametrize("layout,in_axes,with_mask", [
    ("BNSD", (0, 0, 0), True), ("BSH", (1, None, 0), False), ("SBH", (0, 0, 0), True),
    ("BSND", (2, 0, None), False)])
def test_vmap_is_the_loop_over_the_batch(layout, in_axes, with_mask):
    b, n1, n2, s1, s2, d = 2, 2, 1, 3, 5, 4
    qs, ks = shapes(layout, b, n1, n2, s1, s2, d)
    mask = RNG.random((s1, s2)) < 0.3 if with_mask else None
    items = [[RNG.standard_normal(s).astype(np.float32) for _ in range(3)] for s in (qs, ks, ks)]
    stacked = [np.stack(x, a) if a is not None else x[0]
               for x, a in zip(items, in_axes)]
    prim = ops.FlashAttentionScore(n1, 1.0, 0.5, input_layout=layout, sparse_mode=0)
    tmask = Tensor(mask) if with_mask else None
    fn = ms.vmap(lambda q, k, v: prim(q, k, v, None, None, None, tmask)[3], in_axes)
    for out in eager_and_compiled(fn, *[Tensor(a) for a in stacked]):
        for i in range(3):
            q, k, v = (x[i] if a is not None else x[0] for x, a in zip(items, in_axes))
            want, _, _ = reference(q, k, v, n1, layout, 0.5, mask=mask)
            np.testing.assert_allclose(out.asnumpy()[i], want, rtol=2e-5, atol=2e-5)
