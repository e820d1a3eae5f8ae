"""msops.mint, mint.nn(.functional), mint.linalg and mint.optim: one table of calls checked
against numpy written here, eagerly and inside a compiled Cell (GRAPH_MODE); gradients of the
composed adapters against finite differences; layers' parameters and values; AdamW's steps
against a numpy AdamW; argument errors naming the function and argument."""
import re

import numpy as np
import pytest

import msops as ms
from msops import Tensor, mint
from msops.mint.nn import functional as F
from numeric import finite_differences
from test_functional_forms import Call  # a Cell running fn: the compiled form

RNG = np.random.default_rng(2024)
A = RNG.standard_normal((2, 3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)
V = RNG.standard_normal(4).astype(np.float32)
I = np.array([[7, -7, 6], [-5, 5, 0]], np.int64)
J = np.array([[2, 2, -4], [3, -3, 1]], np.int64)
P = np.abs(A) + 0.5
IDX = np.array([[0, 2, 1, 0], [1, 1, 0, 2], [2, 0, 0, 1]], np.int64)   # into B's dim 0 (3)
UNIQ = np.array([[0, 2], [1, 3], [2, 0]], np.int64)    # distinct targets in each row
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
    ("amax", lambda x: mint.amax(x, (0, 2), keepdim=True), (A,), A.max((0, 2), keepdims=True)),
    ("amin_all", lambda x: mint.amin(x), (A,), A.min()),
    ("logsumexp", lambda x: mint.logsumexp(x, 1), (A,), np.log(np.exp(A).sum(1))),
    ("count_nonzero", lambda x: mint.count_nonzero(x, dim=1), (I,), (I != 0).sum(1)),
    ("argsort", lambda x: mint.argsort(x, dim=0, descending=True), (B,),
     np.argsort(-B, 0, kind="stable")),
    ("var_mean", lambda x: mint.var_mean(x, 2), (A,), (A.var(2, ddof=1), A.mean(2))),
    ("std_mean", lambda x: mint.std_mean(x, correction=0), (A,), (A.std(), A.mean())),
    ("cumprod", lambda x: mint.cumprod(x, 2), (A,), np.cumprod(A, 2)),
    ("nansum", lambda x: mint.nansum(x, 1), (np.where(A > 1, np.nan, A),),
     np.nansum(np.where(A > 1, np.nan, A), 1)),
    ("einsum", lambda x, y: mint.einsum("bij,kj->bik", x, y), (A, B), A @ B.T),
    ("outer", lambda x, y: mint.outer(x, y), (V, V[:3]), np.outer(V, V[:3])),
    ("trace", lambda x: mint.trace(x), (B,), np.trace(B)),
    ("meshgrid", lambda x, y: mint.meshgrid(x, y), (V, V[:3]),
     tuple(np.meshgrid(V, V[:3], indexing="ij"))),
    ("log1p", lambda x: mint.log1p(x), (P,), np.log1p(P)),
    ("expm1", lambda x: mint.expm1(x), (A,), np.expm1(A)),
    ("sign", lambda x: mint.sign(x), (A,), np.sign(A)),
    ("trunc", lambda x: mint.trunc(x), (3 * A,), np.trunc(3 * A)),
    ("atan2", lambda x, y: mint.atan2(x, y), (A, B), np.arctan2(A, B)),
    ("remainder", lambda x, y: mint.remainder(x, y), (I, J), np.remainder(I, J)),
    ("fmod", lambda x, y: mint.fmod(x, y), (I, J), np.fmod(I, J)),
    ("tan", lambda x: mint.tan(x), (A / 2,), np.tan(A / 2)),
    ("isfinite", lambda x: mint.isfinite(x), (np.array([1.0, np.inf, np.nan], np.float32),),
     np.array([True, False, False])),
    ("bitwise_xor", lambda x, y: mint.bitwise_xor(x, y), (I, J), I ^ J),
    ("log2", lambda x: mint.log2(x), (P,), np.log2(P)),
    ("lerp", lambda x, y: mint.lerp(x, y, 0.25), (A, B), A + 0.25 * (B - A)),
    ("xlogy", lambda x, y: mint.xlogy(x, y), (A, P), A * np.log(P)),
    ("logaddexp", lambda x, y: mint.logaddexp(x, y), (A, B), np.logaddexp(A, B)),
    ("hypot", lambda x, y: mint.hypot(x, y), (A, B), np.hypot(A, B)),
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
    ("broadcast_to", lambda x: mint.broadcast_to(x, (2, 3, 4)), (V,),
     np.broadcast_to(V, (2, 3, 4))),
    ("scatter", lambda x, i, s: mint.scatter(x, 1, i, s), (B, UNIQ, A[0]),
     scatter_np(B, 1, UNIQ, A[0], False)),
    ("scatter_value", lambda x, i: mint.scatter(x, 0, i, 9.0), (B, IDX[:1]),
     scatter_np(B, 0, IDX[:1], np.full(IDX[:1].shape, 9.0), False)),
    ("scatter_add", lambda x, i, s: mint.scatter_add(x, 0, i, s), (B, IDX, B),
     scatter_np(B, 0, IDX, B, True)),
    ("linalg_vector_norm", lambda x: mint.linalg.vector_norm(x, 1, dim=-1), (A,),
     np.abs(A).sum(-1)),
    ("linalg_matrix_norm", lambda x: mint.linalg.matrix_norm(x), (A,),
     np.sqrt((A * A).sum((-2, -1)))),
    ("linalg_norm", lambda x: mint.linalg.norm(x), (A,), np.sqrt((A * A).sum())),
    ("linalg_inv", lambda x: mint.linalg.inv(x), (B[:, :3] + 3 * np.eye(3, dtype=np.float32),),
     np.linalg.inv(B[:, :3].astype(np.float64) + 3 * np.eye(3))),
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
     -V * (2 * (B > 0) * np.log(1 / (1 + np.exp(-B)))
           + (B <= 0) * np.log(1 - 1 / (1 + np.exp(-B))))),
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
    ("F.leaky_relu", lambda x: F.leaky_relu(x), (A,), np.where(A > 0, A, 0.01 * A)),
    ("F.elu", lambda x: F.elu(x, 0.5), (A,), np.where(A > 0, A, 0.5 * (np.exp(A) - 1))),
    ("F.hardtanh", lambda x: F.hardtanh(x, -0.5, 0.25), (A,), np.clip(A, -0.5, 0.25)),
    ("F.softplus", lambda x: F.softplus(x), (A,), np.log1p(np.exp(A))),
    ("F.relu6", lambda x: F.relu6(x * 8), (A,), np.clip(A * 8, 0, 6)),
    ("F.logsigmoid", lambda x: F.logsigmoid(x), (A,), -np.log1p(np.exp(-A))),
    ("F.mish", lambda x: F.mish(x), (A,), A * np.tanh(np.log1p(np.exp(A)))),
    ("F.hardswish", lambda x: F.hardswish(x * 4), (A,), A * 4 * np.clip(A * 4 + 3, 0, 6) / 6),
    ("F.nll_loss", lambda x, t: F.nll_loss(x, t, reduction="sum"), (B, np.array([3, 0, 1])),
     -(B[0, 3] + B[1, 0] + B[2, 1])),
    ("F.smooth_l1_loss", lambda x, y: F.smooth_l1_loss(x, y), (A[0], B),
     np.where(np.abs(A[0] - B) < 1, 0.5 * (A[0] - B) ** 2, np.abs(A[0] - B) - 0.5).mean()),
    ("F.binary_cross_entropy", lambda x, y: F.binary_cross_entropy(x, y),
     (P[0] / 3, (B > 0).astype(np.float32)),
     -np.mean((B > 0) * np.log(P[0] / 3) + (B <= 0) * np.log(1 - P[0] / 3))),
    ("F.adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (3, 1)), (IMG,),
     IMG.reshape(2, 3, 3, 2, 5).mean((3, 4))[..., None]),
    ("F.adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, 1), (IMG,),
     IMG.max((2, 3), keepdims=True)),
    ("F.group_norm", lambda x: F.group_norm(x, 1), (IMG,),
     (IMG - IMG.mean((1, 2, 3), keepdims=True))
     / np.sqrt(IMG.var((1, 2, 3), keepdims=True) + 1e-5)),
    ("F.pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), (IMG[:, :1].repeat(4, 1),),
     IMG[:, :1].repeat(4, 1).reshape(2, 1, 2, 2, 6, 5).transpose(0, 1, 4, 2, 5, 3)
     .reshape(2, 1, 12, 10)),
    ("F.one_hot", lambda i: F.one_hot(i, 3), (IDX,), np.eye(3, dtype=np.int64)[IDX]),
    ("F.normalize", lambda x: F.normalize(x), (A,), A / np.sqrt((A * A).sum(1, keepdims=True))),
    ("F.normalize_p1", lambda x: F.normalize(x, p=1.0, dim=-1), (A,),
     A / np.abs(A).sum(-1, keepdims=True)),
]


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


def test_creation_values_shapes_and_dtypes():
    check(mint.zeros(2, 3), np.zeros((2, 3), np.float32))
    check(mint.zeros((2, 3), dtype=ms.int32), np.zeros((2, 3), np.int32))
    check(mint.ones([3]), np.ones(3, np.float32))
    check(mint.full((2, 2), 7, dtype=ms.float32), np.full((2, 2), 7.0))
    check(mint.arange(1, 7, 2), np.arange(1, 7, 2))
    check(mint.arange(5, dtype=ms.float32), np.arange(5.0))
    check(mint.linspace(0, 1, 5), np.linspace(0, 1, 5))
    assert mint.linspace(0, 4, 5, dtype=ms.int32).dtype == ms.int32
    check(mint.eye(3, 2), np.eye(3, 2))
    assert mint.empty(2, 4).shape == (2, 4) and mint.empty((3,), dtype=ms.int64).dtype == ms.int64
    assert mint.zeros(2).dtype == ms.float32 and mint.zeros_like(Tensor(I)).dtype == ms.int64


def test_random_draws_shape_range_dtype_and_seed():
    ms.set_seed(5)
    u, n = mint.rand(3, 4), mint.randn((2, 5))
    assert u.shape == (3, 4) and u.dtype == ms.float32 and n.shape == (2, 5)
    assert 0 <= u.asnumpy().min() and u.asnumpy().max() < 1
    r = mint.randint(3, 7, (50,))
    assert r.dtype == ms.int64 and set(r.asnumpy()) <= set(range(3, 7))
    assert set(mint.randint(2, (40,), dtype=ms.int32).asnumpy()) <= {0, 1}
    perm = mint.randperm(6)
    assert perm.dtype == ms.int64 and sorted(perm.asnumpy()) == list(range(6))
    ms.set_seed(5)
    np.testing.assert_array_equal(mint.rand(3, 4).asnumpy(), u.asnumpy())
    # std 0: exactly the mean, broadcast over mean's and std's shapes
    check(mint.normal(Tensor(B), Tensor(np.zeros(4, np.float32))), B)
    check(mint.normal(2.0, 0.0, (3, 2)), np.full((3, 2), 2.0))
    ms.set_seed(5)
    z = mint.randn(6, 7).asnumpy()
    ms.set_seed(5)
    np.testing.assert_allclose(mint.normal(1.0, 3.0, (6, 7)).asnumpy(), 1 + 3 * z, rtol=1e-6)


def test_allclose_is_a_bool_eagerly_and_a_tensor_compiled():
    x, y = Tensor(B), Tensor(B + 1e-7)
    assert mint.allclose(x, y) is True
    assert mint.allclose(x, Tensor(B + 1)) is False
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        out = Call(lambda a, b: mint.allclose(a, b, atol=0.5))(x, Tensor(B + 0.25))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert out.asnumpy().item() is True


def test_nonzero_masked_select_and_one_hot_inferred_classes():
    check(mint.nonzero(Tensor(I)), np.argwhere(I))
    check(mint.masked_select(Tensor(A), Tensor(A > 0)), A[A > 0])
    check(F.one_hot(Tensor(np.array([0, 3, 1]))), np.eye(4, dtype=np.int64)[[0, 3, 1]])


X64 = RNG.standard_normal((2, 3, 4))
Y64 = RNG.standard_normal((2, 3, 4))
C64 = RNG.standard_normal((3, 4))
IMG64 = RNG.standard_normal((1, 2, 5, 5))


# gradients of the composed adapters: (name, f of one float64 Tensor)
GRADS = [
    ("add_alpha", lambda x: mint.add(Tensor(Y64), x, alpha=-2.5)),
    ("baddbmm", lambda x: mint.baddbmm(x[0, :, :3], x, mint.transpose(x, 1, 2), beta=0.3,
                                       alpha=1.5)),
    ("scatter_add_src", lambda x: mint.scatter_add(Tensor(C64), 0, Tensor(IDX), x[0])),
    ("scatter_input_and_src", lambda x: mint.scatter(x[1], 1, Tensor(UNIQ), x[0] * 3)),
    ("gather", lambda x: mint.gather(x[0], 0, Tensor(IDX))),
    ("normalize", lambda x: F.normalize(x, dim=2)),
    ("std", lambda x: mint.std(x, (0, 2))),
    ("max_dim", lambda x: mint.max(x, 2)[0]),
    ("avg_pool2d_exclude_pad", lambda x: F.avg_pool2d(mint.reshape(x, (1, 2, 3, 4)), 3, 1, 1,
                                                      count_include_pad=False)),
    ("max_pool2d_pad", lambda x: F.max_pool2d(mint.reshape(x, (1, 2, 3, 4)), 3, 2, 1)),
    ("embedding_padding_idx", lambda x: F.embedding(Tensor(IDX), x[0], padding_idx=1)),
]


@pytest.mark.parametrize("name,fn", GRADS, ids=[g[0] for g in GRADS])
def test_composed_gradients_match_finite_differences(name, fn):
    want = finite_differences(lambda a: fn(Tensor(a)).asnumpy(), X64)
    if name == "embedding_padding_idx":    # as PyTorch: the padding row gets no gradient
        want[0, 1] = 0
    got = ms.grad(lambda x: mint.sum(fn(x)))(Tensor(X64))
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6, atol=1e-8)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = ms.jit(ms.grad(lambda x: mint.sum(fn(x))))(Tensor(X64))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(compiled.asnumpy(), want, rtol=1e-6, atol=1e-8)


def gelu_np(x):
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))


def both_modes(cell, *inputs):
    """(cell(*inputs) eagerly, the same cell compiled in GRAPH_MODE)."""
    eager = cell(*inputs)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = cell(*inputs)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    return eager, compiled


def test_linear_and_conv2d_take_pytorch_arguments_and_initial_values():
    ms.set_seed(1)
    lin = mint.nn.Linear(4, 3)
    w, b = lin.weight.asnumpy(), lin.bias.asnumpy()
    assert w.shape == (3, 4) and b.shape == (3,) and lin.weight.name == "weight"
    assert np.abs(w).max() <= 0.5 and np.abs(b).max() <= 0.5 and np.abs(w).std() > 0.05
    for out in both_modes(lin, Tensor(A)):
        check(out, A @ w.T + b)
    assert not hasattr(mint.nn.Linear(4, 3, bias=False), "bias") or \
        mint.nn.Linear(4, 3, bias=False).has_bias is False
    conv = mint.nn.Conv2d(3, 2, 3, padding=1)
    cw, cb = conv.weight.asnumpy(), conv.bias.asnumpy()
    assert cw.shape == (2, 3, 3, 3) and np.abs(cw).max() <= 1 / np.sqrt(27) + 1e-7
    for out in both_modes(conv, Tensor(IMG)):
        check(out, conv2d_np(IMG, cw, cb, 1))
    assert mint.nn.Conv2d(3, 2, (3, 1), stride=2, bias=False)(Tensor(IMG)).shape == (2, 2, 2, 3)


LAYER_CASES = [
    ("ReLU", lambda: mint.nn.ReLU(), A, np.maximum(A, 0)),
    ("GELU", lambda: mint.nn.GELU(), A, gelu_np(A)),
    ("SiLU", lambda: mint.nn.SiLU(), A, A / (1 + np.exp(-A))),
    ("Tanh", lambda: mint.nn.Tanh(), A, np.tanh(A)),
    ("Softmax", lambda: mint.nn.Softmax(dim=1), A, softmax(A, 1)),
    ("Identity", lambda: mint.nn.Identity(), A, A),
    ("LeakyReLU", lambda: mint.nn.LeakyReLU(0.3), A, np.where(A > 0, A, 0.3 * A)),
    ("ELU", lambda: mint.nn.ELU(), A, np.where(A > 0, A, np.exp(A) - 1)),
    ("Hardswish", lambda: mint.nn.Hardswish(), 4 * A, 4 * A * np.clip(4 * A + 3, 0, 6) / 6),
    ("Hardsigmoid", lambda: mint.nn.Hardsigmoid(), 4 * A, np.clip(4 * A + 3, 0, 6) / 6),
    ("Softplus", lambda: mint.nn.Softplus(beta=2.0), A, np.log1p(np.exp(2 * A)) / 2),
    ("Mish", lambda: mint.nn.Mish(), A, A * np.tanh(np.log1p(np.exp(A)))),
    ("ReLU6", lambda: mint.nn.ReLU6(), 8 * A, np.clip(8 * A, 0, 6)),
    ("Flatten", lambda: mint.nn.Flatten(), IMG, IMG.reshape(2, -1)),
    ("Flatten_dims", lambda: mint.nn.Flatten(0, 1), IMG, IMG.reshape(6, 6, 5)),
    ("AdaptiveAvgPool2d", lambda: mint.nn.AdaptiveAvgPool2d(1), IMG,
     IMG.mean((2, 3), keepdims=True)),
    ("GroupNorm", lambda: mint.nn.GroupNorm(3, 3), IMG,
     (IMG - IMG.mean((2, 3), keepdims=True)) / np.sqrt(IMG.var((2, 3), keepdims=True) + 1e-5)),
    ("MaxPool2d", lambda: mint.nn.MaxPool2d(2, stride=1), IMG, pool_np(IMG, 2, 1, 0, "max")),
    ("AvgPool2d", lambda: mint.nn.AvgPool2d(3, padding=1), IMG, pool_np(IMG, 3, 3, 1, "avg")),
]


@pytest.mark.parametrize("name,make,x,want", LAYER_CASES, ids=[c[0] for c in LAYER_CASES])
def test_stateless_layers_match_numpy_eager_and_compiled(name, make, x, want):
    for out in both_modes(make(), Tensor(x)):
        check(out, want)


def test_layer_norm_embedding_and_dropout_layers():
    ln = mint.nn.LayerNorm(4)
    assert [p.name for p in ln.trainable_params()] == ["weight", "bias"]
    ln.weight.set_data(Tensor(V))
    want = (A - A.mean(-1, keepdims=True)) / np.sqrt(A.var(-1, keepdims=True) + 1e-5) * V
    for out in both_modes(ln, Tensor(A)):
        check(out, want)
    assert mint.nn.LayerNorm((3, 4), elementwise_affine=False).trainable_params() == []
    ms.set_seed(3)
    emb = mint.nn.Embedding(5, 3, padding_idx=2)
    table = emb.weight.asnumpy()
    assert table.shape == (5, 3) and not table[2].any() and table.std() > 0.3
    for out in both_modes(emb, Tensor(IDX)):
        check(out, table[IDX])
    drop = mint.nn.Dropout(p=0.25)
    drop.set_train(False)
    check(drop(Tensor(P)), P)
    drop.set_train(True)
    got = drop(Tensor(P)).asnumpy()
    kept = got != 0
    np.testing.assert_allclose(got[kept], P[kept] / 0.75, rtol=1e-6)
    assert 0 < kept.sum() < P.size


def test_batch_norm2d_uses_pytorch_momentum():
    bn = mint.nn.BatchNorm2d(3, momentum=0.1)
    bn.set_train(True)
    mean, var = IMG.mean((0, 2, 3)), IMG.var((0, 2, 3))
    out = bn(Tensor(IMG)).asnumpy()
    want = (IMG - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.moving_mean.asnumpy(), 0.1 * mean, rtol=1e-5, atol=1e-7)


def test_losses_with_pytorch_argument_order():
    t = (B > 0).astype(np.float32)
    loss = mint.nn.BCEWithLogitsLoss(Tensor(V), "sum")
    s = 1 / (1 + np.exp(-B))
    for out in both_modes(loss, Tensor(B), Tensor(t)):
        check(out, np.sum(-V * (t * np.log(s) + (1 - t) * np.log(1 - s))))
    check(mint.nn.MSELoss()(Tensor(A), Tensor(B)), ((A - B) ** 2).mean())
    check(mint.nn.L1Loss(reduction="none")(Tensor(A), Tensor(B)), np.abs(A - B))
    ce = mint.nn.CrossEntropyLoss(label_smoothing=0.0)
    check(ce(Tensor(B), Tensor(np.array([3, 0, 1]))),
          -np.mean(np.log(softmax(B, 1))[np.arange(3), [3, 0, 1]]))
    nll = mint.nn.NLLLoss(weight=Tensor(V + 3))
    for out in both_modes(nll, Tensor(B), Tensor(np.array([3, 0, 1]))):
        w = (V + 3)[[3, 0, 1]]
        check(out, -np.sum(w * B[np.arange(3), [3, 0, 1]]) / w.sum())
    for out in both_modes(mint.nn.SmoothL1Loss(beta=0.5), Tensor(A[0]), Tensor(B)):
        d = np.abs(A[0] - B)
        check(out, np.where(d < 0.5, 0.5 * d * d / 0.5, d - 0.25).mean())
    for out in both_modes(mint.nn.BCELoss(reduction="sum"), Tensor(P[0] / 3), Tensor(t)):
        check(out, -np.sum(t * np.log(P[0] / 3) + (1 - t) * np.log(1 - P[0] / 3)))


def adamw_np(p, grads, lr, b1, b2, eps, wd, amsgrad=False, maximize=False):
    m, v, vmax = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        p = p * (1 - lr * wd)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vhat = v / (1 - b2 ** t)
        if amsgrad:
            vmax = np.maximum(vmax, v)
            vhat = vmax / (1 - b2 ** t)
        p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(vhat) + eps)
    return p


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["eager", "compiled"])
@pytest.mark.parametrize("kw", [{}, {"amsgrad": True, "weight_decay": 0.1},
                                {"maximize": True, "betas": (0.8, 0.9), "eps": 1e-3}],
                         ids=["default", "amsgrad", "maximize"])
def test_adamw_steps_match_numpy_adamw(mode, kw):
    w0 = np.array([[0.5, -1.0], [2.0, 0.1]], np.float32)
    grads = [np.array([[0.3, -0.2], [0.1, 0.4]], np.float32) * (k + 1) * (-1) ** k
             for k in range(3)]
    w = ms.Parameter(Tensor(w0), name="ln.gamma")         # decayed too, as PyTorch's AdamW
    opt = mint.optim.AdamW([w], lr=0.01, **kw)
    ms.set_context(mode=mode)
    try:
        for g in grads:
            opt((Tensor(g),))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    b1, b2 = kw.get("betas", (0.9, 0.999))
    want = adamw_np(w0.astype(np.float64), grads, 0.01, b1, b2, kw.get("eps", 1e-8),
                    kw.get("weight_decay", 1e-2), kw.get("amsgrad", False),
                    kw.get("maximize", False))
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make,err,match", [
    (lambda: mint.gather(Tensor(B), 3, Tensor(IDX)), ValueError,
     r"For 'mint.gather', the 'dim' should be in \[-2, 1\], but got 3"),
    (lambda: mint.gather(B, 0, Tensor(IDX)), TypeError,
     r"For 'mint.gather', the 'input' should be a Tensor, but got ndarray"),
    (lambda: mint.max(Tensor(A), keepdim=True), ValueError,
     r"For 'mint.max', the 'keepdim' should be False when 'dim' is None"),
    (lambda: mint.squeeze(Tensor(A), 1.5), TypeError,
     r"For 'mint.squeeze', the 'dim' should be an int, but got float"),
    (lambda: mint.scatter(Tensor(B), 0, Tensor(IDX.astype(np.float32)), 1.0), TypeError,
     r"For 'mint.scatter', the 'index' should be int32 or int64"),
    (lambda: mint.scatter_add(Tensor(B), 0, Tensor(IDX[:, :1]), Tensor(V)), ValueError,
     r"For 'mint.scatter_add', the 'src' should be at least as large as 'index'"),
    (lambda: mint.scatter(Tensor(B), 1, Tensor(np.zeros((4, 1), np.int64)), 0.0), ValueError,
     r"For 'mint.scatter', the 'index' should have input's rank and no dim larger"),
    (lambda: mint.rand(2, generator=object()), TypeError,
     r"For 'mint.rand', the 'generator' should be None"),
    (lambda: mint.randint(5), TypeError, r"For 'mint.randint', the arguments should be"),
    (lambda: mint.normal(0.0, 1.0), TypeError, r"For 'mint.normal', the 'size' should be given"),
    (lambda: mint.normal(Tensor(A), Tensor(V[:3])), ValueError,
     r"For 'mint.normal', the shapes of 'mean' and 'std' should broadcast"),
    (lambda: mint.sort(Tensor(A), stable=1), TypeError, r"For 'mint.sort', the 'stable'"),
    (lambda: F.one_hot(Tensor(I), -2), ValueError, r"For 'mint.one_hot', the 'num_classes'"),
    (lambda: F.max_pool2d(Tensor(IMG), 2, dilation=2), ValueError,
     r"For 'mint.nn.functional.max_pool2d', 'dilation' should be 1"),
    (lambda: F.max_pool2d(Tensor(IMG), 2, ceil_mode=True), ValueError,
     r"For 'mint.nn.functional.max_pool2d', the 'ceil_mode' should be False"),
    (lambda: F.avg_pool2d(Tensor(IMG), 0), ValueError,
     r"For 'mint.nn.functional.avg_pool2d', the 'kernel_size' should be an int >= 1"),
    (lambda: F.avg_pool2d(Tensor(B), 2), ValueError,
     r"For 'mint.nn.functional.avg_pool2d', the 'input' should be 3-D or 4-D"),
    (lambda: F.conv2d(Tensor(IMG), Tensor(IMG), padding="full"), ValueError,
     r"For 'mint.nn.functional.conv2d', the 'padding' should be"),
    (lambda: F.embedding(Tensor(IDX), Tensor(B), max_norm=1.0), ValueError,
     r"For 'mint.nn.functional.embedding', 'max_norm' should be None"),
    (lambda: F.embedding(Tensor(IDX), Tensor(B), padding_idx=3), ValueError,
     r"For 'mint.nn.functional.embedding', the 'padding_idx' should be an int in \[-3, 2\]"),
    (lambda: F.softmax(Tensor(A), 3), ValueError,
     r"For 'mint.nn.functional.softmax', the 'dim' should be in \[-3, 2\], but got 3"),
    (lambda: mint.nn.Conv2d(3, 2, 3, padding_mode="reflect"), ValueError,
     r"For 'Conv2d', the 'padding_mode' should be 'zeros'"),
    (lambda: mint.nn.BatchNorm2d(3, momentum=1.5), ValueError,
     r"For 'BatchNorm2d', the 'momentum' should be a float in \[0, 1\]"),
    (lambda: mint.nn.GELU("fast"), ValueError, r"approximate"),
    (lambda: mint.optim.AdamW([ms.Parameter(Tensor(B), name="b")], betas=0.9), ValueError,
     r"For 'AdamW', the 'betas' should be a pair of floats, but got 0.9"),
])
def test_argument_errors_name_the_function_and_argument(make, err, match):
    with pytest.raises(err, match=match):
        make()


def test_every_public_name_is_documented_and_exported():
    for module in (mint, mint.nn, F, mint.linalg, mint.optim):
        for name in module.__all__:
            assert getattr(module, name) is not None, name
    text = open(__file__.replace("tests/test_mint_api.py", "docs/api.md")).read()
    section = text[text.index("## mint — `msops.mint`"):]
    names = mint.__all__ + F.__all__ + mint.nn.__all__ + mint.linalg.__all__
    missing = [n for n in names if not re.search(rf"(`|\b){n}\b", section)]
    assert missing == []


@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_linalg_qr_factors_the_matrix(mode):
    q, r = mint.linalg.qr(Tensor(B.T), mode)               # (4, 3)
    k = 3 if mode == "reduced" else 4
    assert q.shape == (4, k) and r.shape == (k, 3)
    np.testing.assert_allclose(q.asnumpy() @ r.asnumpy(), B.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(q.asnumpy().T @ q.asnumpy(), np.eye(k), atol=1e-5)
    np.testing.assert_array_equal(np.tril(r.asnumpy(), -1), 0)
