"""msops.mint, mint.nn(.functional), mint.linalg and mint.optim: one table of calls checked
against numpy written here, eagerly and inside a compiled Cell (GRAPH_MODE); gradients of the
composed adapters against finite differences; layers' parameters and values; AdamW's steps
against a numpy AdamW; argument errors naming the function and argument."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, mint, nn
from msops.mint.nn import functional as F
from numeric import finite_differences

RNG = np.random.default_rng(2024)
A = RNG.standard_normal((2, 3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)
V = RNG.standard_normal(4).astype(np.float32)
I = np.array([[7, -7, 6], [-5, 5, 0]], np.int64)
J = np.array([[2, 2, -4], [3, -3, 1]], np.int64)
P = np.abs(A) + 0.5
IDX = np.array([[0, 2, 1, 0], [1, 1, 0, 2], [2, 0, 0, 1]], np.int64)   # into B's dim 0 (3)
IMG = RNG.standard_normal((2, 3, 6, 5)).astype(np.float32)


def softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def scatter_np(x, dim, index, src, add):
    out = x.copy()
    for pos in np.ndindex(index.shape):
        target = list(pos)
        target[dim] = index[pos]
        if add:
            out[tuple(target)] += src[pos]
        else:
            out[tuple(target)] = src[pos]
    return out


def pool_np(x, k, s, p, kind, count_include_pad=True):
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, [(0, 0)] * (x.ndim - 2) + [(p, p), (p, p)], constant_values=fill)
    ones = np.pad(np.ones(x.shape[-2:]), [(p, p), (p, p)])
    h = (xp.shape[-2] - k) // s + 1
    w = (xp.shape[-1] - k) // s + 1
    out = np.zeros(x.shape[:-2] + (h, w), x.dtype)
    for i in range(h):
        for j in range(w):
            win = xp[..., i * s:i * s + k, j * s:j * s + k]
            if kind == "max":
                out[..., i, j] = win.max((-2, -1))
            elif count_include_pad:
                out[..., i, j] = win.mean((-2, -1))
            else:
                out[..., i, j] = win.sum((-2, -1)) / ones[i * s:i * s + k, j * s:j * s + k].sum()
    return out


def conv2d_np(x, w, b, pad):
    xp = np.pad(x, [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    kh, kw = w.shape[2:]
    h, wd = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
    out = np.zeros((x.shape[0], w.shape[0], h, wd), np.float64)
    for i in range(h):
        for j in range(wd):
            out[:, :, i, j] = np.einsum("nchw,ochw->no", xp[:, :, i:i + kh, j:j + kw], w)
    return out + b[None, :, None, None]


# (name, call on Tensors, inputs, numpy reference; a tuple reference for tuple results)
FORMS = [
    ("add", lambda x, y: mint.add(x, y), (A, B), A + B),
    ("add_alpha", lambda x, y: mint.add(x, y, alpha=3), (A, B), A + 3 * B),
    ("sub_alpha", lambda x, y: mint.sub(x, y, alpha=0.5), (A, B), A - 0.5 * B),
    ("mul", lambda x, y: mint.mul(x, y), (A, V), A * V),
    ("div", lambda x, y: mint.div(x, y), (A, P), A / P),
    ("div_floor", lambda x, y: mint.div(x, y, rounding_mode="floor"), (I, J), I // J),
    ("div_trunc", lambda x, y: mint.div(x, y, rounding_mode="trunc"), (I, J), np.trunc(I / J)),
    ("matmul", lambda x, y: mint.matmul(x, y), (A, B.T), A @ B.T),
    ("bmm", lambda x, y: mint.bmm(x, y), (A, A.transpose(0, 2, 1)), A @ A.transpose(0, 2, 1)),
    ("baddbmm", lambda c, x, y: mint.baddbmm(c, x, y, beta=0.5, alpha=2),
     (B[:3, :3], A, A.transpose(0, 2, 1)), 0.5 * B[:3, :3] + 2 * (A @ A.transpose(0, 2, 1))),
    ("mm", lambda x, y: mint.mm(x, y), (B, B.T), B @ B.T),
    ("sum", lambda x: mint.sum(x), (A,), A.sum()),
    ("sum_dim", lambda x: mint.sum(x, (0, 2), True), (A,), A.sum((0, 2), keepdims=True)),
    ("sum_dtype", lambda x: mint.sum(x, dim=1, dtype=ms.float64), (A,), A.sum(1)),
    ("mean", lambda x: mint.mean(x, 1), (A,), A.mean(1)),
    ("mean_keepdim", lambda x: mint.mean(x, dim=-1, keepdim=True), (A,), A.mean(-1, keepdims=True)),
    ("prod", lambda x: mint.prod(x, 2, keepdim=True), (A,), A.prod(2, keepdims=True)),
    ("max_all", lambda x: mint.max(x), (A,), A.max()),
    ("max_dim", lambda x: mint.max(x, 1), (A,), (A.max(1), A.argmax(1))),
    ("min_dim", lambda x: mint.min(x, dim=2, keepdim=True), (A,),
     (A.min(2, keepdims=True), A.argmin(2)[..., None])),
    ("min_all", lambda x: mint.min(x), (A,), A.min()),
    ("argmax", lambda x: mint.argmax(x, dim=1), (A,), A.argmax(1)),
    ("argmax_all", lambda x: mint.argmax(x), (A,), A.argmax()),
    ("argmin", lambda x: mint.argmin(x, 0, keepdim=True), (A,), A.argmin(0)[None]),
    ("cumsum", lambda x: mint.cumsum(x, 1), (A,), np.cumsum(A, 1)),
    ("exp", lambda x: mint.exp(x), (A,), np.exp(A)),
    ("log", lambda x: mint.log(x), (P,), np.log(P)),
    ("sqrt", lambda x: mint.sqrt(x), (P,), np.sqrt(P)),
    ("rsqrt", lambda x: mint.rsqrt(x), (P,), 1 / np.sqrt(P)),
    ("abs", lambda x: mint.abs(x), (A,), np.abs(A)),
    ("neg", lambda x: mint.neg(x), (A,), -A),
    ("pow", lambda x: mint.pow(x, 3.0), (A,), A ** 3),
    ("clamp", lambda x: mint.clamp(x, -0.5, 0.5), (A,), np.clip(A, -0.5, 0.5)),
    ("clamp_min", lambda x: mint.clamp(x, min=0.1), (A,), np.maximum(A, 0.1)),
    ("where", lambda x, y: mint.where(mint.gt(x, 0.0), x, y), (A, B), np.where(A > 0, A, B)),
    ("eq", lambda x, y: mint.eq(x, y), (I, J), I == J),
    ("ne", lambda x, y: mint.ne(x, y), (I, J), I != J),
    ("gt", lambda x, y: mint.gt(x, y), (I, J), I > J),
    ("ge", lambda x, y: mint.ge(x, y), (I, J), I >= J),
    ("lt", lambda x, y: mint.lt(x, y), (I, J), I < J),
    ("le", lambda x, y: mint.le(x, y), (I, J), I <= J),
    ("logical_and", lambda x, y: mint.logical_and(mint.gt(x, 0), mint.gt(y, 0)), (I, J),
     (I > 0) & (J > 0)),
    ("logical_or", lambda x, y: mint.logical_or(mint.gt(x, 0), mint.gt(y, 0)), (I, J),
     (I > 0) | (J > 0)),
    ("logical_not", lambda x: mint.logical_not(mint.gt(x, 0)), (I,), I <= 0),
    ("logical_xor", lambda x, y: mint.logical_xor(x, y), (I, J), (I != 0) ^ (J != 0)),
    ("isclose", lambda x, y: mint.isclose(x, y, rtol=0.0, atol=0.5), (A, B),
     np.abs(A - B) <= 0.5),
    ("sort", lambda x: mint.sort(x, dim=1, descending=True), (A,),
     (-np.sort(-A, 1), np.argsort(-A, 1, kind="stable"))),
    ("topk", lambda x: mint.topk(x, 2, dim=-1), (A,),
     (-np.sort(-A, -1)[..., :2], np.argsort(-A, -1, kind="stable")[..., :2])),
    ("topk_smallest", lambda x: mint.topk(x, 1, 0, largest=False), (B,),
     (B.min(0, keepdims=True), B.argmin(0)[None])),
    ("softmax", lambda x: mint.softmax(x, 1), (A,), softmax(A, 1)),
    ("sigmoid", lambda x: mint.sigmoid(x), (A,), 1 / (1 + np.exp(-A))),
    ("tanh", lambda x: mint.tanh(x), (A,), np.tanh(A)),
    ("erf", lambda x: mint.erf(x), (np.array([-1.0, 0.0, 0.5], np.float32),),
     np.array([-0.8427007929, 0.0, 0.5204998778])),
    ("sin", lambda x: mint.sin(x), (A,), np.sin(A)),
    ("cos", lambda x: mint.cos(x), (A,), np.cos(A)),
    ("floor", lambda x: mint.floor(x), (3 * A,), np.floor(3 * A)),
    ("ceil", lambda x: mint.ceil(x), (3 * A,), np.ceil(3 * A)),
    ("round", lambda x: mint.round(x), (3 * A,), np.round(3 * A)),
    ("square", lambda x: mint.square(x), (A,), A * A),
    ("reciprocal", lambda x: mint.reciprocal(x), (P,), 1 / P),
    ("maximum", lambda x, y: mint.maximum(x, y), (A, B), np.maximum(A, B)),
    ("minimum", lambda x, y: mint.minimum(x, y), (A, B), np.minimum(A, B)),
    ("any", lambda x: mint.any(mint.gt(x, 1.0), dim=1), (A,), (A > 1).any(1)),
    ("all", lambda x: mint.all(mint.gt(x, -1.0), 2, True), (A,), (A > -1).all(2, keepdims=True)),
    ("std", lambda x: mint.std(x, 1), (A,), A.std(1, ddof=1)),
    ("var", lambda x: mint.var(x, dim=(0, 2), correction=0, keepdim=True), (A,),
     A.var((0, 2), keepdims=True)),
    # creation and shape
    ("zeros_like", lambda x: mint.zeros_like(x, dtype=ms.int32), (A,), np.zeros_like(A, np.int32)),
    ("ones_like", lambda x: mint.ones_like(x), (A,), np.ones_like(A)),
    ("full_like", lambda x: mint.full_like(x, 2.5), (A,), np.full_like(A, 2.5)),
    ("cat", lambda x, y: mint.cat((x, y), dim=-1), (B, B), np.concatenate([B, B], -1)),
    ("concat", lambda x, y: mint.concat([x, y]), (B, B), np.concatenate([B, B])),
    ("stack", lambda x, y: mint.stack([x, y], dim=1), (B, B), np.stack([B, B], 1)),
    ("split", lambda x: mint.split(x, 3, dim=2), (A,), (A[..., :3], A[..., 3:])),
    ("split_sections", lambda x: mint.split(x, [1, 2], 1), (A,), (A[:, :1], A[:, 1:])),
    ("chunk", lambda x: mint.chunk(x, 2, dim=-1), (A,), (A[..., :2], A[..., 2:])),
    ("narrow", lambda x: mint.narrow(x, 2, 1, 2), (A,), A[..., 1:3]),
    ("flatten", lambda x: mint.flatten(x), (A,), A.reshape(-1)),
    ("flatten_dims", lambda x: mint.flatten(x, 1), (A,), A.reshape(2, -1)),
    ("reshape", lambda x: mint.reshape(x, (4, -1)), (A,), A.reshape(4, -1)),
    ("permute", lambda x: mint.permute(x, (2, 0, 1)), (A,), A.transpose(2, 0, 1)),
    ("transpose", lambda x: mint.transpose(x, 0, 2), (A,), A.transpose(2, 1, 0)),
    ("squeeze", lambda x: mint.squeeze(x, 1), (A[:, :1],), A[:, 0]),
    ("squeeze_not_one", lambda x: mint.squeeze(x, (0, 1)), (A[:, :1],), A[:, 0]),
    ("squeeze_all", lambda x: mint.squeeze(x), (A[:1, :, :1],), A[0, :, 0]),
    ("unsqueeze", lambda x: mint.unsqueeze(x, 1), (B,), B[:, None]),
    ("gather", lambda x, i: mint.gather(x, 0, i), (B, IDX),
     np.take_along_axis(B, IDX, 0)),
    ("gather_dim1", lambda x, i: mint.gather(x, 1, i), (B, IDX[:, :2]),
     np.take_along_axis(B, IDX[:, :2], 1)),
    ("index_select", lambda x, i: mint.index_select(x, 1, i), (B, np.array([3, 0, 3])),
     B[:, [3, 0, 3]]),
    ("tile", lambda x: mint.tile(x, (2,)), (B,), np.tile(B, 2)),
    ("tile_full", lambda x: mint.tile(x, (2, 1, 2)), (B,), np.tile(B, (2, 1, 2))),
    ("repeat_interleave", lambda x: mint.repeat_interleave(x, 2, dim=0), (B,),
     np.repeat(B, 2, 0)),
    ("flip", lambda x: mint.flip(x, (0, 2)), (A,), A[::-1, :, ::-1]),
    ("roll", lambda x: mint.roll(x, 1, 2), (A,), np.roll(A, 1, 2)),
    ("tril", lambda x: mint.tril(x, 1), (B,), np.tril(B, 1)),
    ("triu", lambda x: mint.triu(x, diagonal=-1), (B,), np.triu(B, -1)),
    ("broadcast_to", lambda x: mint.broadcast_to(x, (2, 3, 4)), (V,), np.broadcast_to(V, (2, 3, 4))),
    ("scatter", lambda x, i, s: mint.scatter(x, 1, i, s), (B, IDX[:, :2], A[0]),
     scatter_np(B, 1, IDX[:, :2], A[0], False)),
    ("scatter_value", lambda x, i: mint.scatter(x, 0, i, 9.0), (B, IDX[:1]),
     scatter_np(B, 0, IDX[:1], np.full(IDX[:1].shape, 9.0), False)),
    ("scatter_add", lambda x, i, s: mint.scatter_add(x, 0, i, s), (B, IDX, B),
     scatter_np(B, 0, IDX, B, True)),
    ("linalg_vector_norm", lambda x: mint.linalg.vector_norm(x, 1, dim=-1), (A,),
     np.abs(A).sum(-1)),
    ("linalg_matrix_norm", lambda x: mint.linalg.matrix_norm(x), (A,),
     np.sqrt((A * A).sum((-2, -1)))),
    ("linalg_norm", lambda x: mint.linalg.norm(x), (A,), np.sqrt((A * A).sum())),
    # mint.nn.functional
    ("F.relu", lambda x: F.relu(x), (A,), np.maximum(A, 0)),
    ("F.gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), (A,),
     0.5 * A * (1 + np.tanh(np.sqrt(2 / np.pi) * (A + 0.044715 * A ** 3)))),
    ("F.silu", lambda x: F.silu(x), (A,), A / (1 + np.exp(-A))),
    ("F.softmax", lambda x: F.softmax(x, dim=0), (A,), softmax(A, 0)),
    ("F.softmax_last", lambda x: F.softmax(x), (A,), softmax(A, -1)),
    ("F.log_softmax", lambda x: F.log_softmax(x, 1), (A,), np.log(softmax(A, 1))),
    ("F.dropout_eval", lambda x: F.dropout(x, 0.5, training=False), (A,), A),
    ("F.linear", lambda x, w, b: F.linear(x, w, b), (A, B, B[:, 0]), A @ B.T + B[:, 0]),
    ("F.conv2d", lambda x, w, b: F.conv2d(x, w, b, padding=1), (IMG, IMG[:, :, :3, :3], V[:2]),
     conv2d_np(IMG, IMG[:, :, :3, :3], V[:2], 1)),
    ("F.layer_norm", lambda x, w, b: F.layer_norm(x, (4,), w, b), (A, V, V * 0 + 1),
     (A - A.mean(-1, keepdims=True)) / np.sqrt(A.var(-1, keepdims=True) + 1e-5) * V + 1),
    ("F.embedding", lambda i, w: F.embedding(i, w), (IDX, B), B[IDX]),
    ("F.cross_entropy", lambda x, t: F.cross_entropy(x, t), (B, np.array([3, 0, 1])),
     -np.mean(np.log(softmax(B, 1))[np.arange(3), [3, 0, 1]])),
    ("F.mse_loss", lambda x, y: F.mse_loss(x, y, reduction="sum"), (A, B), ((A - B) ** 2).sum()),
    ("F.l1_loss", lambda x, y: F.l1_loss(x, y), (A, B), np.abs(A - B).mean()),
    ("F.bce_with_logits", lambda x, y, w: F.binary_cross_entropy_with_logits(
        x, y, w, "none", pos_weight=mint.full((4,), 2.0)), (B, (B > 0).astype(np.float32), V),
     -V * (2 * (B > 0) * np.log(1 / (1 + np.exp(-B))) + (B <= 0) * np.log(1 - 1 / (1 + np.exp(-B))))),
    ("F.pad", lambda x: F.pad(x, (1, 2), value=3.0), (B,),
     np.pad(B, [(0, 0), (1, 2)], constant_values=3.0)),
    ("F.interpolate", lambda x: F.interpolate(x, scale_factor=2.0), (IMG,),
     IMG.repeat(2, 2).repeat(2, 3)),
    ("F.max_pool2d", lambda x: F.max_pool2d(x, 3, 2, padding=1), (IMG,),
     pool_np(IMG, 3, 2, 1, "max")),
    ("F.max_pool2d_3d", lambda x: F.max_pool2d(x, 2), (IMG[0],), pool_np(IMG[0], 2, 2, 0, "max")),
    ("F.avg_pool2d", lambda x: F.avg_pool2d(x, 2, stride=1), (IMG,), pool_np(IMG, 2, 1, 0, "avg")),
    ("F.avg_pool2d_pad", lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), (IMG,),
     pool_np(IMG, 3, 2, 1, "avg", count_include_pad=False)),
    ("F.avg_pool2d_divisor", lambda x: F.avg_pool2d(x, 2, divisor_override=3), (IMG,),
     pool_np(IMG, 2, 2, 0, "avg") * 4 / 3),
    ("F.one_hot", lambda i: F.one_hot(i, 3), (IDX,), np.eye(3, dtype=np.int64)[IDX]),
    ("F.normalize", lambda x: F.normalize(x), (A,), A / np.sqrt((A * A).sum(1, keepdims=True))),
    ("F.normalize_p1", lambda x: F.normalize(x, p=1.0, dim=-1), (A,),
     A / np.abs(A).sum(-1, keepdims=True)),
]


class Call(nn.Cell):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def construct(self, *xs):
        return self.fn(*xs)


def check(out, want):
    if isinstance(want, tuple):
        assert isinstance(out, (tuple, list)) and len(out) == len(want)
        for o, w in zip(out, want):
            check(o, w)
        return
    got = out.asnumpy()
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    if got.dtype == np.bool_ or np.issubdtype(got.dtype, np.integer):
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,fn,inputs,want", FORMS, ids=[f[0] for f in FORMS])
def test_mint_form_matches_numpy_eager_and_compiled(name, fn, inputs, want):
    tensors = [Tensor(v) for v in inputs]
    check(fn(*tensors), want)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        check(Call(fn)(*tensors), want)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
