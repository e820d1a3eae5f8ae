"""nn.MultiheadAttention, as `mindspore.nn.MultiheadAttention`: multi-head scaled dot-product
attention built from primitives (MatMul, BatchMatMul, Reshape, Transpose, Softmax, Select,
Concat), so it traces, compiles, differentiates and shards like any other layer.

Masks follow MindSpore: a bool (or uint8) mask is True where attention is not allowed (it
becomes -inf before the softmax), a float mask is added to the scores. A query row whose
keys are all masked has no weights to normalise: its softmax is NaN, as in MindSpore.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.initializer import HeUniform, Uniform, XavierNormal, XavierUniform
from msops.common.tensor import Parameter, Tensor, check_tensor
from msops.nn.cell import Cell
from msops.nn.initializer import initializer
from msops.nn.layers import Dense

__all__ = ["MultiheadAttention", "check_dropout", "check_float_dtype"]

FLOAT_DTYPES = (mstype.float16, mstype.float32, mstype.float64)


def check_dropout(value: Any, name: str) -> float:
    """`dropout` as a float in [0, 1) (the probability of zeroing), or an error naming `name`."""
    validator.check_value_type("dropout", value, (int, float), name)
    if not 0 <= value < 1:
        raise ValueError(f"For '{name}', the 'dropout' should be in [0, 1), but got {value}.")
    return float(value)


def check_float_dtype(dtype: Any, name: str) -> mstype.Type:
    """The Parameters' dtype: float16, float32 or float64."""
    validator.check_value_type("dtype", dtype, mstype.Type, name)
    return validator.check_type_name("dtype", dtype, FLOAT_DTYPES, name)


class MultiheadAttention(Cell):
    """`MultiheadAttention(embed_dim, num_heads, dropout=0.0, has_bias=True, add_bias_kv=False,
    add_zero_attn=False, kdim=None, vdim=None, batch_first=False, dtype=mstype.float32)`.

    `construct(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True)`: query (L, N, E), key (S, N, kdim), value (S, N, vdim)
    ((N, L, E) ... with batch_first; (L, E), (S, kdim), (S, vdim) unbatched) ->
    (attn_output (L, N, E), attn_weights): the softmax weights averaged over the heads
    (N, L, S), or per head (N, num_heads, L, S) with average_attn_weights=False; only
    (attn_output,) with need_weights=False. key_padding_mask (N, S) ((S,) unbatched) masks
    keys; attn_mask (L, S) or (N * num_heads, L, S) masks query-key pairs.

    Parameters (MindSpore's names and shapes): in_proj_weight (3E, E) and in_proj_bias (3E,)
    (rows q, k, v); with kdim or vdim != E, q_proj_weight (E, E), k_proj_weight (E, kdim),
    v_proj_weight (E, vdim) instead of in_proj_weight; out_proj, a Dense(E, E); bias_k,
    bias_v (1, 1, E) with add_bias_kv (appended to the keys and values), and add_zero_attn
    appends a zero key and value. `dropout` zeroes attention weights in training.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0,
                 has_bias: bool = True, add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: int | None = None, vdim: int | None = None, batch_first: bool = False,
                 dtype: mstype.Type = mstype.float32) -> None:
        super().__init__()
        name = self.cls_name
        self.embed_dim = validator.check_positive_int(embed_dim, "embed_dim", name)
        self.num_heads = validator.check_positive_int(num_heads, "num_heads", name)
        if embed_dim % num_heads:
            raise ValueError(f"For '{name}', the 'embed_dim' should be divisible by 'num_heads'"
                             f": {num_heads}, but got {embed_dim}.")
        self.head_dim = embed_dim // num_heads
        self.dropout = check_dropout(dropout, name)
        self.has_bias = validator.check_bool("has_bias", has_bias, name)
        validator.check_bool("add_bias_kv", add_bias_kv, name)
        self.add_zero_attn = validator.check_bool("add_zero_attn", add_zero_attn, name)
        self.kdim = embed_dim if kdim is None else validator.check_positive_int(kdim, "kdim", name)
        self.vdim = embed_dim if vdim is None else validator.check_positive_int(vdim, "vdim", name)
        self.batch_first = validator.check_bool("batch_first", batch_first, name)
        self.dtype = check_float_dtype(dtype, name)
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim

        def param(init, shape):
            return Parameter(initializer(init, shape, dtype, "init", name))
        e = embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = param(XavierUniform(), (3 * e, e))
            self.q_proj_weight = self.k_proj_weight = self.v_proj_weight = None
        else:
            self.in_proj_weight = None
            self.q_proj_weight = param(XavierUniform(), (e, e))
            self.k_proj_weight = param(XavierUniform(), (e, self.kdim))
            self.v_proj_weight = param(XavierUniform(), (e, self.vdim))
        self.in_proj_bias = param("zeros", (3 * e,)) if has_bias else None
        self.out_proj = Dense(e, e, weight_init=HeUniform(math.sqrt(5)),
                              bias_init=Uniform(1 / math.sqrt(e)), has_bias=has_bias,
                              dtype=dtype)
        if add_bias_kv:
            self.bias_k = param(XavierNormal(), (1, 1, e))
            self.bias_v = param(XavierNormal(), (1, 1, e))
        else:
            self.bias_k = self.bias_v = None

        self.project = ops.MatMul(transpose_b=True)
        self.add_bias = ops.Add()
        self.slice = ops.StridedSlice()
        self.split_qkv = ops.Split(1, 3)
        self.reshape, self.transpose = ops.Reshape(), ops.Transpose()
        self.tile, self.concat_keys = ops.Tile(), ops.Concat(2)
        self.scale = ops.Mul()
        self.scores = ops.BatchMatMul(transpose_b=True)
        self.add_mask, self.combine_masks = ops.Add(), ops.Add()
        self.to_additive, self.cast = ops.Select(), ops.Cast()
        self.pad_mask = ops.Concat(-1)
        self.softmax = ops.Softmax(-1)
        self.attn_dropout = ops.Dropout(1.0 - self.dropout)
        self.context = ops.BatchMatMul()
        self.mean_heads = ops.ReduceMean()

    # -- construct ---------------------------------------------------------------------
    def construct(self, query, key, value, key_padding_mask=None, need_weights=True,
                  attn_mask=None, average_attn_weights=True):
        n, tgt, src = self._check_inputs(query, key, value)
        q, k, v = self._in_projection(query, key, value)
        q = self._split_heads(self.scale(q, 1 / math.sqrt(self.head_dim)), n, tgt)
        k, v = self._split_heads(k, n, src), self._split_heads(v, n, src)
        extra = 0
        if self.bias_k is not None:
            k, v = self._append(k, self.bias_k, n), self._append(v, self.bias_v, n)
            extra += 1
        if self.add_zero_attn:
            zeros = Tensor(np.zeros((n, self.num_heads, 1, self.head_dim),
                                    self.dtype.np_dtype))
            k, v = self.concat_keys((k, zeros)), self.concat_keys((v, zeros))
            extra += 1
        scores = self.scores(q, k)                                  # (N, H, L, S + extra)
        mask = self._mask(attn_mask, key_padding_mask, n, tgt, src, extra, query.ndim == 3)
        if mask is not None:
            scores = self.add_mask(scores, mask)
        weights = self.softmax(scores)
        if self.training and self.dropout > 0:
            weights = self.attn_dropout(weights)[0]
        out = self._merge_heads(self.context(weights, v), n, tgt, query.ndim == 3)
        if not need_weights:
            return (out,)
        if average_attn_weights:
            weights = self.mean_heads(weights, 1)                   # (N, L, S')
        if query.ndim == 2:
            weights = self.reshape(weights, tuple(weights.shape[1:]))
        return out, weights

    def _check_inputs(self, query, key, value) -> tuple[int, int, int]:
        """(batch, target length, source length), after checking ranks, dtypes and dims."""
        name = self.cls_name
        for arg, t in (("query", query), ("key", key), ("value", value)):
            check_tensor(name, arg, t)
        if query.ndim not in (2, 3):
            raise ValueError(f"For '{name}', the 'query' should be 3-D (batched) or 2-D "
                             f"(unbatched), but got shape {list(query.shape)}.")
        for arg, t, dim in (("query", query, self.embed_dim), ("key", key, self.kdim),
                            ("value", value, self.vdim)):
            if t.ndim != query.ndim:
                raise ValueError(f"For '{name}', the '{arg}' should be {query.ndim}-D like "
                                 f"'query', but got shape {list(t.shape)}.")
            if t.dtype != self.dtype:
                raise TypeError(f"For '{name}', the dtype of '{arg}' should be the "
                                f"Parameters' dtype {self.dtype}, but got {t.dtype}.")
            if t.shape[-1] != dim:
                raise ValueError(f"For '{name}', the last dim of '{arg}' should be {dim}, "
                                 f"but got shape {list(t.shape)}.")
        if query.ndim == 2:
            tgt, src, n = query.shape[0], key.shape[0], 1
        elif self.batch_first:
            (n, tgt), src = query.shape[:2], key.shape[1]
        else:
            (tgt, n), src = query.shape[:2], key.shape[0]
        if tuple(key.shape[:-1]) != tuple(value.shape[:-1]):
            raise ValueError(f"For '{name}', the 'key' and 'value' should have the same "
                             f"sequence and batch dims, but got shapes {list(key.shape)} and "
                             f"{list(value.shape)}.")
        batch_axis = 0 if self.batch_first else 1
        if query.ndim == 3 and key.shape[batch_axis] != n:
            raise ValueError(f"For '{name}', the batch size of 'key' and 'value' should be "
                             f"{n} like 'query', but got shapes {list(query.shape)} and "
                             f"{list(key.shape)}.")
        return n, tgt, src

    def _linear(self, x, weight, bias):
        """x (..., in) as rows (R, in) @ weight.T (+ bias) -> (R, out)."""
        y = self.project(self.reshape(x, (-1, x.shape[-1])), weight)
        return y if bias is None else self.add_bias(y, bias)

    def _rows(self, param, i: int):
        """Rows [i*E, (i+1)*E) of the packed in_proj weight or bias."""
        e = self.embed_dim
        begin = (i * e,) + (0,) * (param.ndim - 1)
        end = ((i + 1) * e,) + tuple(param.shape[1:])
        return self.slice(param, begin, end, (1,) * param.ndim)

    def _in_projection(self, query, key, value) -> tuple:
        """q, k, v as rows (R, E): one MatMul of the packed weight for self-attention."""
        b = self.in_proj_bias
        if self._qkv_same_embed_dim and query is key and key is value:
            return self.split_qkv(self._linear(query, self.in_proj_weight, b))
        weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        if self._qkv_same_embed_dim:
            weights = tuple(self._rows(self.in_proj_weight, i) for i in range(3))
        return tuple(self._linear(x, w, None if b is None else self._rows(b, i))
                     for i, (x, w) in enumerate(zip((query, key, value), weights)))

    def _split_heads(self, rows, n: int, length: int):
        """Rows in the input's order ((N, len) batch-first, else (len, N)) -> (N, H, len, hd)."""
        heads = (self.num_heads, self.head_dim)
        if self.batch_first:
            return self.transpose(self.reshape(rows, (n, length) + heads), (0, 2, 1, 3))
        return self.transpose(self.reshape(rows, (length, n) + heads), (1, 2, 0, 3))

    def _merge_heads(self, ctx, n: int, tgt: int, batched: bool):
        """(N, H, L, hd) -> out_proj -> the query's layout ((L, E) unbatched)."""
        e = self.embed_dim
        if self.batch_first:
            order, shape = (0, 2, 1, 3), (n, tgt, e)
        else:
            order, shape = (2, 0, 1, 3), (tgt, n, e)
        rows = self.reshape(self.transpose(ctx, order), (n * tgt, e))
        return self.reshape(self.out_proj(rows), shape if batched else (tgt, e))

    def _append(self, keys, bias, n: int):
        """keys (N, H, S, hd) with the bias (1, 1, E) appended as one more position."""
        per_head = self.reshape(bias, (1, self.num_heads, 1, self.head_dim))
        return self.concat_keys((keys, self.tile(per_head, (n, 1, 1, 1))))

    # -- masks ---------------------------------------------------------------------------
    def _mask(self, attn_mask, key_padding_mask, n: int, tgt: int, src: int, extra: int,
              batched: bool):
        """The additive mask broadcasting against the scores (N, H, L, S + extra), or None."""
        name, total = self.cls_name, None
        if attn_mask is not None:
            check_tensor(name, "attn_mask", attn_mask)
            shape = tuple(attn_mask.shape)
            if shape == (tgt, src):
                total = self._additive(attn_mask, "attn_mask")
            elif shape == (n * self.num_heads, tgt, src):
                total = self.reshape(self._additive(attn_mask, "attn_mask"),
                                     (n, self.num_heads, tgt, src))
            else:
                raise ValueError(f"For '{name}', the shape of 'attn_mask' should be (L, S) = "
                                 f"{(tgt, src)} or (N * num_heads, L, S) = "
                                 f"{(n * self.num_heads, tgt, src)}, but got {shape}.")
        if key_padding_mask is not None:
            check_tensor(name, "key_padding_mask", key_padding_mask)
            want = (n, src) if batched else (src,)
            if tuple(key_padding_mask.shape) != want:
                raise ValueError(f"For '{name}', the shape of 'key_padding_mask' should be "
                                 f"{want}, but got {tuple(key_padding_mask.shape)}.")
            keys = self.reshape(self._additive(key_padding_mask, "key_padding_mask"),
                                (n, 1, 1, src))
            total = keys if total is None else self.combine_masks(total, keys)
        if total is None or not extra:
            return total
        pad = np.zeros(tuple(total.shape[:-1]) + (extra,), self.dtype.np_dtype)
        return self.pad_mask((total, Tensor(pad)))   # the appended keys are never masked

    def _additive(self, mask, arg: str):
        """A bool mask as -inf where True (0 elsewhere); a float mask in the scores' dtype."""
        dtype = mask.dtype
        if dtype == mstype.uint8:
            mask, dtype = self.cast(mask, mstype.bool_), mstype.bool_
        if dtype == mstype.bool_:
            np_dtype = self.dtype.np_dtype
            return self.to_additive(mask, Tensor(np.array(-np.inf, np_dtype)),
                                    Tensor(np.array(0, np_dtype)))
        if dtype in FLOAT_DTYPES or dtype == mstype.bfloat16:
            return mask if dtype == self.dtype else self.cast(mask, self.dtype)
        raise TypeError(f"For '{self.cls_name}', the '{arg}' should be a bool, uint8 or float "
                        f"Tensor, but got {dtype}.")

    def extend_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, kdim={self.kdim}, vdim={self.vdim}, "
                f"batch_first={self.batch_first}")
