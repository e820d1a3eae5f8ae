"""Exact attention computed the FlashAttention way, in numpy: blockwise over the key
sequence with a running row max and row sum, so no (S1, S2) score matrix is ever held
whole (memory O(S1 * block) per batch and head), and the backward recomputes each block's
probabilities from the saved row max and sum.

Tensors here are (B, N, S, D) ("BNSD"); `to_bnsd` / `from_bnsd` convert MindSpore's other
layouts. `masked_block` returns, for key columns [j0, j1), where a score is discarded: the
attention mask (True = discarded, MindSpore's convention) and the sparse mode's band.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["LAYOUTS", "BLOCK", "Masks", "to_bnsd", "from_bnsd", "band_masked",
           "attention_forward", "attention_backward"]

#: the layouts and the rank of their tensors
LAYOUTS = {"BSH": 3, "SBH": 3, "BNSD": 4, "BSND": 4}
#: key columns per block (a multiple of 8: the dropout mask packs 8 columns a byte)
BLOCK = 128
INF = 2147483647


def to_bnsd(x: np.ndarray, layout: str, heads: int) -> np.ndarray:
    """`x` in `layout` as (B, N, S, D)."""
    if layout == "BSH":
        b, s, h = x.shape
        return x.reshape(b, s, heads, h // heads).transpose(0, 2, 1, 3)
    if layout == "SBH":
        s, b, h = x.shape
        return x.reshape(s, b, heads, h // heads).transpose(1, 2, 0, 3)
    if layout == "BSND":
        return x.transpose(0, 2, 1, 3)
    return x


def from_bnsd(x: np.ndarray, layout: str) -> np.ndarray:
    """(B, N, S, D) back to `layout` (a new C-contiguous array)."""
    b, n, s, d = x.shape
    if layout == "BSH":
        x = x.transpose(0, 2, 1, 3).reshape(b, s, n * d)
    elif layout == "SBH":
        x = x.transpose(2, 0, 1, 3).reshape(s, b, n * d)
    elif layout == "BSND":
        x = x.transpose(0, 2, 1, 3)
    return np.ascontiguousarray(x)


def band_masked(mode: int, rows: np.ndarray, cols: np.ndarray, s1: int, s2: int,
                pre_tokens: int, next_tokens: int) -> np.ndarray | None:
    """Where the sparse mode's band discards the score of query rows `rows` (global
    indices) and key columns `cols`: (len(rows), len(cols)) bools, or None (no band).
    Mode 0 (with an attention mask) keeps i - pre_tokens <= j <= i + next_tokens; 2
    (leftUpCausal) j <= i; 3 (rightDownCausal) j <= i + s2 - s1; 4 (band) the mode-0 band
    moved to the bottom-right corner: i + s2 - s1 - pre_tokens <= j <= i + s2 - s1 +
    next_tokens. Mode 1 (allMask) has none."""
    offset = {0: 0, 2: 0, 3: s2 - s1, 4: s2 - s1}.get(mode)
    if offset is None:
        return None
    rel = cols[None, :] - rows[:, None] - offset          # j - i - offset
    if mode in (2, 3):
        return rel > 0
    pre, nxt = min(pre_tokens, INF), min(next_tokens, INF)
    if mode == 0 and pre >= s1 + s2 and nxt >= s1 + s2:
        return None
    return (rel > nxt) | (rel < -pre)


class Masks(NamedTuple):
    """What decides which scores are discarded, and the dropout: `attn_mask` broadcastable
    to (B, N, S1, S2) or None; `mode` with its tokens (mode 0's band applies only with an
    attention mask); `drop_mask` (B, N, S1, S2 / 8) packed keep-bits or None; `keep_prob`.
    (A split query sequence reaches the kernel with its rows' band as an explicit mask.)"""
    attn_mask: np.ndarray | None
    mode: int
    pre_tokens: int
    next_tokens: int
    drop_mask: np.ndarray | None
    keep_prob: float

    def discarded(self, s1: int, j0: int, j1: int, s2: int) -> np.ndarray | None:
        """Discarded scores of key columns [j0, j1): bools broadcastable to (B, N, S1, j1 - j0)."""
        out = None
        if self.attn_mask is not None and self.mode in (0, 1):
            out = self.attn_mask[..., j0:j1].astype(bool)
        if self.mode != 1 and (self.mode != 0 or self.attn_mask is not None):
            band = band_masked(self.mode, np.arange(s1), np.arange(j0, j1), s1, s2,
                               self.pre_tokens, self.next_tokens)
            if band is not None:
                out = band if out is None else out | band
        return out

    def kept(self, j0: int, j1: int) -> np.ndarray | None:
        """The dropout's kept columns [j0, j1) as 0/1 over (B, N, S1, j1 - j0), or None."""
        if self.drop_mask is None:
            return None
        bits = np.unpackbits(self.drop_mask[..., j0 // 8:(j1 + 7) // 8], axis=-1,
                             bitorder="little")
        return bits[..., :j1 - j0]


def _scores(q: np.ndarray, k: np.ndarray, scale: float, shift: np.ndarray | None,
            masks: Masks, j0: int, j1: int, s2: int) -> np.ndarray:
    s = np.matmul(q, np.swapaxes(k[:, :, j0:j1], -1, -2)) * q.dtype.type(scale)
    if shift is not None:
        s = s + shift[..., j0:j1]
    gone = masks.discarded(q.shape[2], j0, j1, s2)
    if gone is not None:
        s = np.where(gone, -np.inf, s)
    return s


def _heads(x: np.ndarray, n1: int) -> np.ndarray:
    """Key/value heads repeated to the query's n1 (grouped-query attention)."""
    return x if x.shape[1] == n1 else np.repeat(x, n1 // x.shape[1], axis=1)


def attention_forward(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float,
                      shift: np.ndarray | None, masks: Masks) -> tuple:
    """(out, row_max, row_sum) of softmax(scale * q k^T + shift, masked) (dropped) v, all
    (B, N1, S1, ...) in q's dtype; a row with every key discarded gives zeros and sum 0."""
    b, n1, s1, _ = q.shape
    s2 = k.shape[2]
    k, v = _heads(k, n1), _heads(v, n1)
    m = np.full((b, n1, s1), -np.inf, q.dtype)
    total = np.zeros((b, n1, s1), q.dtype)
    acc = np.zeros(q.shape[:3] + (v.shape[3],), q.dtype)
    for j0 in range(0, s2, BLOCK):
        j1 = min(j0 + BLOCK, s2)
        s = _scores(q, k, scale, shift, masks, j0, j1, s2)
        m_new = np.maximum(m, s.max(axis=-1))
        base = np.where(np.isinf(m_new), 0, m_new)        # all discarded so far: exp(-inf) = 0
        p = np.exp(s - base[..., None])
        alpha = np.exp(m - base)
        total = total * alpha + p.sum(axis=-1)
        keep = masks.kept(j0, j1)
        if keep is not None:
            p = p * keep * q.dtype.type(1.0 / masks.keep_prob)
        acc = acc * alpha[..., None] + np.matmul(p, v[:, :, j0:j1])
        m = m_new
    m = np.where(np.isinf(m), 0, m)
    out = np.divide(acc, total[..., None], out=np.zeros_like(acc), where=total[..., None] > 0)
    return out, m, total


def attention_backward(q: np.ndarray, k: np.ndarray, v: np.ndarray, dout: np.ndarray,
                       out: np.ndarray, row_max: np.ndarray, row_sum: np.ndarray,
                       scale: float, shift: np.ndarray | None, masks: Masks) -> tuple:
    """(dq, dk, dv, dshift) of the forward, block by block: P = exp(S - max) / sum,
    dV = P_d^T dO, dP = (dO V^T) * keep / keep_prob, dS = P (dP - rowsum(dO * O)),
    dQ = scale dS K, dK = scale dS^T Q; dshift (B, N1, S1, S2) = dS, or None."""
    b, n1, s1, _ = q.shape
    n2, s2 = k.shape[1], k.shape[2]
    kr, vr = _heads(k, n1), _heads(v, n1)
    delta = np.sum(dout * out, axis=-1, keepdims=True)
    inv = np.divide(1, row_sum, out=np.zeros_like(row_sum), where=row_sum > 0)[..., None]
    dq = np.zeros_like(q)
    dk, dv = np.zeros_like(kr), np.zeros_like(vr)
    dshift = np.zeros((b, n1, s1, s2), q.dtype) if shift is not None else None
    sc = q.dtype.type(scale)
    for j0 in range(0, s2, BLOCK):
        j1 = min(j0 + BLOCK, s2)
        p = np.exp(_scores(q, kr, scale, shift, masks, j0, j1, s2) - row_max[..., None]) * inv
        keep = masks.kept(j0, j1)
        drop = None if keep is None else keep * q.dtype.type(1.0 / masks.keep_prob)
        pd = p if drop is None else p * drop
        dv[:, :, j0:j1] = np.matmul(np.swapaxes(pd, -1, -2), dout)
        dp = np.matmul(dout, np.swapaxes(vr[:, :, j0:j1], -1, -2))
        if drop is not None:
            dp = dp * drop
        ds = p * (dp - delta)
        dq += np.matmul(ds, kr[:, :, j0:j1]) * sc
        dk[:, :, j0:j1] = np.matmul(np.swapaxes(ds, -1, -2), q) * sc
        if dshift is not None:
            dshift[..., j0:j1] = ds
    if n2 != n1:                                          # each key head served n1 / n2
        dk = dk.reshape(b, n2, n1 // n2, s2, -1).sum(axis=2)
        dv = dv.reshape(b, n2, n1 // n2, s2, -1).sum(axis=2)
    return dq, dk, dv, dshift

