"""Fused attention as `mindspore.ops` has it: flash_attention_score over the
FlashAttentionScore primitive (primitives/attention_ops.py)."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.ops._dispatch import _prim
from msops.primitives.array_ops import Reshape
from msops.primitives.attention_kernel import INF
from msops.primitives.attention_ops import FlashAttentionScore
from msops.primitives.elementwise_ops import Less
from msops.primitives.math_ops import Cast, Mul, ReduceSum
from msops.primitives.random_ops import UniformReal

__all__ = ["flash_attention_score"]


def drop_mask_of(prim: FlashAttentionScore, query: Any, key: Any) -> Any:
    """A fresh dropout mask for `prim` in FlashAttentionScore's packed form: each score kept
    with probability keep_prob (the global seed's stream, so a split op draws its block of
    the serial mask), 8 key columns a byte, bit j % 8 (little-endian) for column j."""
    b, n1, _, s1, s2, _ = prim.dims(tuple(query.shape), tuple(key.shape))
    width = -(-s2 // 8)
    u = _prim(UniformReal)((b, n1, s1, width * 8))
    kept = _prim(Cast)(_prim(Less)(u, _const(prim.keep_prob)), mstype.float32)
    kept = _prim(Reshape)(kept, (b, n1, s1, width, 8))
    weights = _const(2.0 ** np.arange(8))
    packed = _prim(ReduceSum, False)(_prim(Mul)(kept, weights), -1)
    return _prim(Cast)(packed, mstype.uint8)


def _const(value: Any) -> Any:
    """A float32 constant Tensor (a traced graph captures it as a constant)."""
    from msops.common.tensor import Tensor
    return Tensor(np.asarray(value, np.float32))


def flash_attention_score(query: Any, key: Any, value: Any, head_num: int,
                          real_shift: Any = None, drop_mask: Any = None,
                          padding_mask: Any = None, attn_mask: Any = None, prefix: Any = None,
                          actual_seq_qlen: Any = None, actual_seq_kvlen: Any = None,
                          keep_prob: float = 1.0, scalar_value: float = 1.0,
                          pre_tokens: int = INF, next_tokens: int = INF,
                          inner_precise: int = 0, input_layout: str = "BSH",
                          sparse_mode: int = 0) -> Any:
    """attention_out of `FlashAttentionScore` (`mindspore.ops.flash_attention_score`; the
    scale is MindSpore's `scalar_value`). With keep_prob < 1 and no drop_mask, the mask is
    drawn from the global seed's stream (`drop_mask_of`)."""
    prim = _prim(FlashAttentionScore, head_num, keep_prob, scalar_value,
                 pre_tokens, next_tokens, inner_precise, input_layout, sparse_mode)
    if keep_prob < 1 and drop_mask is None:
        drop_mask = drop_mask_of(prim, query, key)
    return prim(query, key, value, real_shift, drop_mask, padding_mask, attn_mask, prefix,
                actual_seq_qlen, actual_seq_kvlen)[3]
