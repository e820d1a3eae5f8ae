"""`ops.moe_token_permute` and `ops.moe_token_unpermute` (MindSpore 2.6+): a mixture of
experts' token dispatch and combine. Permute groups the tokens by the expert each is sent
to (a stable sort of the flattened expert indices, so tokens of one expert keep their
order), one row per (token, choice); unpermute puts the rows back in token order and sums
each token's topk rows weighted by their probabilities. Both are Sort, Gather and
element-wise primitives, so they trace, differentiate (Gather's backward scatters the
gradient back) and shard through those rules."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.primitives.array_ops import Concat, Reshape
from msops.primitives.elementwise_ops import FloorDiv, Minimum
from msops.primitives.gather_ops import Gather
from msops.primitives.math_ops import Cast, Mul, ReduceSum
from msops.primitives.shape_ops import ExpandDims
from msops.primitives.sort_ops import Sort

__all__ = ["moe_token_permute", "moe_token_unpermute"]

#: the token dtypes MindSpore's kernels take
_TOKEN_DTYPES = (mstype.float16, mstype.bfloat16, mstype.float32)
#: MindSpore's limit on topk (indices' dim 1)
_MAX_TOPK = 512


def _float_tokens(api: str, arg: str, t: Any) -> None:
    check_tensor(api, arg, t)
    if len(t.shape) != 2:
        raise ValueError(f"For '{api}', the '{arg}' should be 2-D (num_tokens, hidden_size), "
                         f"but got shape {list(t.shape)}.")
    validator.check_tensor_dtype_valid(arg, t.dtype, _TOKEN_DTYPES, api)


def _no_padding(api: str, padded_mode: Any) -> None:
    validator.check_bool("padded_mode", padded_mode, api)
    if padded_mode:
        raise ValueError(f"For '{api}', the 'padded_mode' should be False (the only mode "
                         f"supported, as in MindSpore), but got True.")


def moe_token_permute(tokens: Tensor, indices: Tensor, num_out_tokens: int | None = None,
                      padded_mode: bool = False) -> tuple:
    """(permuted_tokens, sorted_indices): tokens (num_tokens, hidden) and expert indices
    (num_tokens, topk) or (num_tokens,) (topk 1), int32/int64. Row k = t*topk + j of the
    flattened indices (token t's j-th expert) goes to row sorted_indices[k] (int32) of
    permuted_tokens, which holds the rows grouped by expert in ascending order (a stable
    sort: within an expert, rows keep their order). num_out_tokens (None: all
    num_tokens*topk) keeps that many leading rows; the rows past it are dropped."""
    api = "moe_token_permute"
    _float_tokens(api, "tokens", tokens)
    check_tensor(api, "indices", indices)
    validator.check_tensor_dtype_valid("indices", indices.dtype, (mstype.int32, mstype.int64),
                                       api)
    if len(indices.shape) not in (1, 2):
        raise ValueError(f"For '{api}', the 'indices' should be 1-D or 2-D, but got shape "
                         f"{list(indices.shape)}.")
    if indices.shape[0] != tokens.shape[0]:
        raise ValueError(f"For '{api}', the 'indices' dim 0 should be the number of tokens "
                         f"{tokens.shape[0]}, but got {indices.shape[0]}.")
    topk = indices.shape[1] if len(indices.shape) == 2 else 1
    if topk > _MAX_TOPK:
        raise ValueError(f"For '{api}', the 'indices' dim 1 (topk) should be <= {_MAX_TOPK}, "
                         f"but got {topk}.")
    _no_padding(api, padded_mode)
    total = tokens.shape[0] * topk
    if num_out_tokens is None:
        num_out_tokens = total
    validator.check_int("num_out_tokens", num_out_tokens, api)
    if num_out_tokens < 0:
        raise ValueError(f"For '{api}', the 'num_out_tokens' should be >= 0, but got "
                         f"{num_out_tokens}.")
    kept = min(num_out_tokens, total)
    flat = _prim(Reshape)(indices, (total,))
    order = _prim(Sort)(flat)[1]                      # stable: int32 rows by expert
    sorted_indices = _prim(Sort)(order)[1]            # its inverse: where each row went
    rows = order[:kept] if kept < total else order
    source = _prim(FloorDiv)(rows, topk) if topk > 1 else rows
    return _prim(Gather)(tokens, source, 0), sorted_indices


def moe_token_unpermute(permuted_tokens: Tensor, sorted_indices: Tensor,
                        probs: Tensor | None = None, padded_mode: bool = False,
                        restore_shape: Any = None) -> Tensor:
    """The inverse of moe_token_permute: row k of the flattened (token, choice) order is
    permuted_tokens[sorted_indices[k]] (zeros when that row was dropped: past
    permuted_tokens' rows); with probs (num_tokens, topk) token t's output is
    sum_j probs[t, j] * row (t*topk + j), otherwise (topk 1) row t itself. Output
    (num_tokens, hidden), permuted_tokens' dtype. restore_shape is for padded mode only."""
    api = "moe_token_unpermute"
    _float_tokens(api, "permuted_tokens", permuted_tokens)
    check_tensor(api, "sorted_indices", sorted_indices)
    validator.check_tensor_dtype_valid("sorted_indices", sorted_indices.dtype, (mstype.int32,),
                                       api)
    if len(sorted_indices.shape) != 1:
        raise ValueError(f"For '{api}', the 'sorted_indices' should be 1-D (num_tokens * "
                         f"topk,), but got shape {list(sorted_indices.shape)}.")
    _no_padding(api, padded_mode)
    total, (rows, hidden) = sorted_indices.shape[0], permuted_tokens.shape
    topk = 1
    if probs is not None:
        check_tensor(api, "probs", probs)
        if len(probs.shape) != 2 or probs.shape[0] * probs.shape[1] != total:
            raise ValueError(f"For '{api}', the 'probs' should be 2-D (num_tokens, topk) with "
                             f"num_tokens * topk = {total} (sorted_indices' length), but got "
                             f"shape {list(probs.shape)}.")
        validator.check_tensor_dtype_valid("probs", probs.dtype, _TOKEN_DTYPES, api)
        topk = probs.shape[1]
    source = permuted_tokens
    if rows < total:          # dropped rows read a zero row appended at index `rows`
        zero = Tensor(np.zeros((1, hidden), permuted_tokens.dtype.np_dtype))
        source = _prim(Concat, 0)((permuted_tokens, zero))
        sorted_indices = _prim(Minimum)(sorted_indices, rows)
    picked = _prim(Gather)(source, sorted_indices, 0)
    if probs is None:
        return picked
    by_token = _prim(Reshape)(picked, (total // topk, topk, hidden))
    weights = _prim(ExpandDims)(_prim(Cast)(probs, permuted_tokens.dtype), 2)
    return _prim(ReduceSum)(_prim(Mul)(by_token, weights), 1)
