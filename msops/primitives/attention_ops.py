"""FlashAttentionScore: fused multi-head attention as MindSpore's (training form), with
its backward op, sharding rule and expansion beside it.

Called as MindSpore's primitive, `(query, key, value, real_shift, drop_mask, padding_mask,
attn_mask, prefix, actual_seq_qlen, actual_seq_kvlen)` with None for an absent optional
input; the call records the present optional inputs' names as its first (constant) input,
so the graph, the rules and a strategy see only the tensors given (a strategy lists them
in that order, as MindSpore's). The numpy kernel is primitives/attention_kernel.py.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.primitives.attention_kernel import (INF, LAYOUTS, Masks, attention_backward,
                                               attention_forward, band_masked, from_bnsd,
                                               to_bnsd)
from msops.primitives.math_ops import Cast, compute_dtype
from msops.primitives.primitive import Primitive, PrimitiveWithInfer, prim_attr_register
from msops.primitives.batching import broadcast_front, per_element
from msops.primitives.rules import (batch_rule, bprop, declare_without, expansion_rule,
                                    sharding_rule)
from msops.primitives.sharding import DimSpec, ShardedCall

__all__ = ["FlashAttentionScore"]

#: the optional inputs, in MindSpore's call order
OPTIONAL = ("real_shift", "drop_mask", "padding_mask", "attn_mask", "prefix",
            "actual_seq_qlen", "actual_seq_kvlen")
FLOATS = (mstype.float16, mstype.bfloat16, mstype.float32, mstype.float64)
COMPRESSED = 2048                      # the (2048, 2048) mask of sparse modes 2, 3 and 4


class _Attention(PrimitiveWithInfer):
    """What FlashAttentionScore and its backward op share: the attributes and their checks,
    the layout's dims, and reading the optional inputs."""

    const_inputs = (0,)

    @prim_attr_register
    def __init__(self, head_num: int, keep_prob: float = 1.0, scale_value: float = 1.0,
                 pre_tokens: int = INF, next_tokens: int = INF, inner_precise: int = 0,
                 input_layout: str = "BSH", sparse_mode: int = 0) -> None:
        name = self.name
        validator.check_positive_int(head_num, "head_num", name)
        validator.check_value_type("keep_prob", keep_prob, (int, float), name)
        if not 0 < keep_prob <= 1:
            raise ValueError(f"For '{name}', the 'keep_prob' should be in (0, 1], but got "
                             f"{keep_prob}.")
        validator.check_value_type("scale_value", scale_value, (int, float), name)
        validator.check_int("pre_tokens", pre_tokens, name)
        validator.check_int("next_tokens", next_tokens, name)
        validator.check_int("inner_precise", inner_precise, name)
        if inner_precise not in (0, 1):
            raise ValueError(f"For '{name}', the 'inner_precise' should be 0 or 1, but got "
                             f"{inner_precise}.")
        if input_layout == "TND":
            raise ValueError(f"For '{name}', the 'input_layout' should be one of "
                             f"{list(LAYOUTS)} (the variable-length 'TND' is not "
                             f"supported), but got 'TND'.")
        validator.check_string("input_layout", input_layout, list(LAYOUTS), name)
        validator.check_int("sparse_mode", sparse_mode, name)
        if sparse_mode not in (0, 1, 2, 3, 4):
            raise ValueError(f"For '{name}', the 'sparse_mode' should be in [0, 4] (0 "
                             f"defaultMask, 1 allMask, 2 leftUpCausal, 3 rightDownCausal, 4 "
                             f"band; the prefix and variable-length modes 5 to 8 are not "
                             f"supported), but got {sparse_mode}.")

    # -- shapes ------------------------------------------------------------------------
    def dims(self, q: Sequence[int], k: Sequence[int]) -> tuple:
        """(B, N1, N2, S1, S2, D) of query and key shapes in the layout, checked."""
        layout, name = self.input_layout, self.name
        for arg, shape in (("query", q), ("key", k)):
            if len(shape) != LAYOUTS[layout]:
                raise ValueError(f"For '{name}', the rank of '{arg}' should be "
                                 f"{LAYOUTS[layout]} for input_layout '{layout}', but got "
                                 f"shape {list(shape)}.")
        if layout in ("BSH", "SBH"):
            (b, s1, h1), (bk, s2, h2) = ((q, k) if layout == "BSH" else
                                        ((q[1], q[0], q[2]), (k[1], k[0], k[2])))
            if h1 % self.head_num:
                raise ValueError(f"For '{name}', the query's hidden size should be a "
                                 f"multiple of 'head_num' {self.head_num}, but got {h1}.")
            n1, d = self.head_num, h1 // self.head_num
            if h2 % d:
                raise ValueError(f"For '{name}', the key's hidden size should be a multiple "
                                 f"of the head size {d}, but got {h2}.")
            n2 = h2 // d
        else:
            (b, n1, s1, d), (bk, n2, s2, dk) = ((q, k) if layout == "BNSD" else
                                                ((q[0], q[2], q[1], q[3]),
                                                 (k[0], k[2], k[1], k[3])))
            if n1 != self.head_num:
                raise ValueError(f"For '{name}', the query's head count should be == "
                                 f"'head_num' {self.head_num}, but got {n1}.")
            if dk != d:
                raise ValueError(f"For '{name}', the key's head size should be == the "
                                 f"query's {d}, but got {dk}.")
        if bk != b:
            raise ValueError(f"For '{name}', the key's batch should be == the query's {b}, "
                             f"but got {bk}.")
        if n1 % n2:
            raise ValueError(f"For '{name}', the key's head count should divide the "
                             f"query's {n1}, but got {n2}.")
        return b, n1, n2, s1, s2, d

    def check_present(self, present: Any, optional: Sequence[Any]) -> None:
        """The first input: the names of the optional inputs given, in MindSpore's order,
        one for each optional tensor that follows."""
        ok = isinstance(present, tuple) and len(present) == len(optional) and all(
            isinstance(n, str) and n in OPTIONAL for n in present) and \
            list(present) == sorted(present, key=OPTIONAL.index) and \
            len(set(present)) == len(present)
        if not ok:
            raise ValueError(f"For '{self.name}', the first input should be the names of the "
                             f"{len(optional)} optional inputs given, in the order of "
                             f"{list(OPTIONAL)}, but got {present!r}.")

    def check_optional(self, present: Sequence[str], shapes: dict, dims: tuple) -> None:
        """The optional inputs' shapes against the query's (B, N1, S1, S2)."""
        b, n1, _, s1, s2, _ = dims
        name, mode = self.name, self.sparse_mode
        for arg in present:
            if arg in ("padding_mask", "prefix", "actual_seq_qlen", "actual_seq_kvlen"):
                raise ValueError(f"For '{name}', the '{arg}' should be None (it serves "
                                 f"the prefix and variable-length modes, which are not "
                                 f"supported), but got a Tensor.")
        want = {"real_shift": ([[b, n1, s1, s2], [1, n1, s1, s2]]),
                "drop_mask": [[b, n1, s1, -(-s2 // 8)]],
                "attn_mask": ([[COMPRESSED, COMPRESSED]] if mode in (2, 3, 4) else
                              [[b, n1, s1, s2], [b, 1, s1, s2], [1, 1, s1, s2], [s1, s2]])}
        for arg, shapes_ok in want.items():
            if arg in shapes and list(shapes[arg]) not in shapes_ok:
                raise ValueError(f"For '{name}', the '{arg} shape' should be one of "
                                 f"{shapes_ok} (sparse_mode {mode}), but got "
                                 f"{list(shapes[arg])}.")
        if mode == 1 and "attn_mask" not in shapes:
            raise ValueError(f"For '{name}', the 'attn_mask' should be given with "
                             f"sparse_mode 1 (allMask), but got None.")
        if (self.keep_prob < 1) != ("drop_mask" in shapes):
            raise ValueError(f"For '{name}', the 'drop_mask' should be given exactly when "
                             f"'keep_prob' < 1, but got keep_prob {self.keep_prob} and "
                             f"drop_mask {'given' if 'drop_mask' in shapes else 'None'}.")

    def check_dtypes(self, present: Sequence[str], q: Any, k: Any, v: Any,
                     optional: Sequence[Any]) -> mstype.Type:
        name = self.name
        for arg, t in (("query", q), ("key", k), ("value", v)):
            validator.check_tensor_dtype_valid(arg, t, FLOATS, name)
            if t != q:
                raise TypeError(f"For '{name}', the '{arg}' dtype should be == the query's "
                                f"{q}, but got {t}.")
        for arg, t in zip(present, optional):
            if arg == "real_shift" and t != q:
                raise TypeError(f"For '{name}', the 'real_shift' dtype should be == the "
                                f"query's {q}, but got {t}.")
            if arg == "drop_mask":
                validator.check_tensor_dtype_valid(arg, t, (mstype.uint8,), name)
            if arg == "attn_mask":
                validator.check_tensor_dtype_valid(arg, t, (mstype.bool_, mstype.uint8), name)
        return q

    def stats_dtype(self, q: mstype.Type) -> mstype.Type:
        """softmax_max / softmax_sum: float32 (float64 for a float64 query)."""
        return mstype.float64 if q == mstype.float64 else mstype.float32

    # -- the kernel's view -------------------------------------------------------------
    def operands(self, present: Sequence[str], q: np.ndarray, k: np.ndarray, v: np.ndarray,
                 optional: Sequence[np.ndarray]) -> tuple:
        """(q, k, v) as (B, N, S, D) in the compute dtype, the shift and the Masks."""
        ct = compute_dtype(q.dtype)
        layout = self.input_layout
        n1 = self.head_num
        d = (q.shape[-1] // n1) if layout in ("BSH", "SBH") else q.shape[-1]
        heads_k = (k.shape[-1] // d) if layout in ("BSH", "SBH") else None
        qb = to_bnsd(q.astype(ct, copy=False), layout, n1)
        kb = to_bnsd(k.astype(ct, copy=False), layout, heads_k)
        vb = to_bnsd(v.astype(ct, copy=False), layout, heads_k)
        given = dict(zip(present, optional))
        shift = given.get("real_shift")
        shift = None if shift is None else shift.astype(ct, copy=False)
        masks = Masks(given.get("attn_mask"), self.sparse_mode, self.pre_tokens,
                      self.next_tokens, given.get("drop_mask"),
                      float(self.keep_prob))
        return qb, kb, vb, shift, masks


class FlashAttentionScore(_Attention):
    """`FlashAttentionScore(head_num, keep_prob=1.0, scale_value=1.0, pre_tokens=2147483647,
    next_tokens=2147483647, inner_precise=0, input_layout='BSH', sparse_mode=0)(query, key,
    value, real_shift=None, drop_mask=None, padding_mask=None, attn_mask=None, prefix=None,
    actual_seq_qlen=None, actual_seq_kvlen=None)`.

    attention_out = Dropout(Softmax(Mask(scale_value * query key^T + real_shift,
    attn_mask)), keep_prob) value, per head; N2 key/value heads (N2 divides N1) each serve
    N1 / N2 query heads. Layouts: BSH (B, S, H), SBH (S, B, H), BNSD, BSND; H = N * D.
    attn_mask (bool/uint8, True = discarded): (B, N1, S1, S2), (B, 1, S1, S2) or (S1, S2)
    for sparse_mode 0 (its band pre_tokens / next_tokens applies with a mask) and 1; the
    compressed (2048, 2048) mask (or None) for 2 (leftUpCausal), 3 (rightDownCausal) and 4
    (band, from the bottom-right corner). real_shift (B or 1, N1, S1, S2) is added to the
    scaled scores; drop_mask (uint8 (B, N1, S1, S2 / 8), bit j % 8 of byte j / 8 little-
    endian, 1 = kept) is required exactly when keep_prob < 1. Outputs (softmax_max,
    softmax_sum, softmax_out, attention_out): the row max of the masked scores and the
    row sum of their exponentials, (B, N1, S1, 8) float32 (the value repeated 8 times);
    softmax_out a placeholder of shape (); attention_out like query. A row whose keys are
    all discarded gives zeros. float32 and float64 are accepted besides MindSpore's
    float16 and bfloat16 (computed in float32). The gradient flows through attention_out.

    >>> q = Tensor(np.zeros((1, 2, 4), np.float32))          # equal scores: the mean of v
    >>> kv = Tensor(np.array([[[1.0, 2, 3, 4], [3, 4, 5, 6]]], np.float32))
    >>> out = FlashAttentionScore(head_num=1)(q, kv, kv)
    >>> out[3].asnumpy(), out[1].shape
    (array([[[2., 3., 4., 5.],
            [2., 3., 4., 5.]]], dtype=float32), (1, 1, 2, 8))
    """

    def __call__(self, query: Any, key: Any = None, value: Any = None, real_shift: Any = None,
                 drop_mask: Any = None, padding_mask: Any = None, attn_mask: Any = None,
                 prefix: Any = None, actual_seq_qlen: Any = None,
                 actual_seq_kvlen: Any = None) -> Any:
        if not hasattr(query, "shape"):   # the internal form: the names first (checked)
            return Primitive.__call__(self, query, key, value, *(
                a for a in (real_shift, drop_mask, padding_mask, attn_mask, prefix,
                            actual_seq_qlen, actual_seq_kvlen) if a is not None))
        given = dict(zip(OPTIONAL, (real_shift, drop_mask, padding_mask, attn_mask, prefix,
                                    actual_seq_qlen, actual_seq_kvlen)))
        present = tuple(n for n in OPTIONAL if given[n] is not None)
        return Primitive.__call__(self, present, query, key, value,
                                  *(given[n] for n in present))

    def infer_shape(self, present: tuple, q: list, k: list, v: list, *optional: list) -> tuple:
        self.check_present(present, optional)
        if list(v) != list(k):
            raise ValueError(f"For '{self.name}', the 'value shape' should be == the key's "
                             f"{list(k)}, but got {list(v)}.")
        dims = self.dims(q, k)
        self.check_optional(present, dict(zip(present, optional)), dims)
        b, n1, _, s1, _, _ = dims
        return [b, n1, s1, 8], [b, n1, s1, 8], [], list(q)

    def infer_dtype(self, present: tuple, q: Any, k: Any, v: Any, *optional: Any) -> tuple:
        self.check_present(present, optional)
        t = self.check_dtypes(present, q, k, v, optional)
        stats = self.stats_dtype(t)
        return stats, stats, t, t

    def kernel(self, present: tuple, q: np.ndarray, k: np.ndarray, v: np.ndarray,
               *optional: np.ndarray) -> tuple:
        qb, kb, vb, shift, masks = self.operands(present, q, k, v, optional)
        out, m, total = attention_forward(qb, kb, vb, float(self.scale_value), shift, masks)
        st = np.float64 if q.dtype == np.float64 else np.float32
        stats = [np.ascontiguousarray(np.broadcast_to(a.astype(st)[..., None], a.shape + (8,)))
                 for a in (m, total)]
        return (stats[0], stats[1], np.zeros((), q.dtype),
                from_bnsd(out, self.input_layout).astype(q.dtype, copy=False))


class FlashAttentionScoreGrad(_Attention):
    """The backward of FlashAttentionScore (made by its bprop): `(names, query, key, value,
    dout, softmax_max, softmax_sum, attention_out, *optional)` -> (dq, dk, dv, dpse):
    the gradients of query, key, value (their shapes) and of real_shift (its shape; (0,)
    without one), from the forward's saved row statistics."""

    def infer_shape(self, present: tuple, q: list, k: list, v: list, dout: list, m: list,
                    total: list, out: list, *optional: list) -> tuple:
        given = dict(zip(present, optional))
        return (list(q), list(k), list(v),
                list(given["real_shift"]) if "real_shift" in given else [0])

    def infer_dtype(self, present: tuple, q: Any, k: Any, v: Any, dout: Any, m: Any,
                    total: Any, out: Any, *optional: Any) -> tuple:
        return q, q, q, q

    def kernel(self, present: tuple, q: np.ndarray, k: np.ndarray, v: np.ndarray,
               dout: np.ndarray, m: np.ndarray, total: np.ndarray, out: np.ndarray,
               *optional: np.ndarray) -> tuple:
        qb, kb, vb, shift, masks = self.operands(present, q, k, v, optional)
        ct = qb.dtype
        layout = self.input_layout
        db = to_bnsd(dout.astype(ct, copy=False), layout, self.head_num)
        ob = to_bnsd(out.astype(ct, copy=False), layout, self.head_num)
        dq, dk, dv, dshift = attention_backward(
            qb, kb, vb, db, ob, m[..., 0].astype(ct), total[..., 0].astype(ct),
            float(self.scale_value), shift, masks)
        grads = [from_bnsd(g, layout).astype(q.dtype, copy=False) for g in (dq, dk, dv)]
        if dshift is None:
            return (*grads, np.zeros(0, q.dtype))
        want = dict(zip(present, optional))["real_shift"].shape
        if want[0] == 1 and dshift.shape[0] != 1:
            dshift = dshift.sum(axis=0, keepdims=True)
        return (*grads, np.ascontiguousarray(dshift.astype(q.dtype, copy=False)))


declare_without("sharding", FlashAttentionScoreGrad,
                reason="it is made only by autodiff, on the rank-local graph")


@bprop(FlashAttentionScore)
def flash_attention_score_bprop(prim: FlashAttentionScore, inputs: list, out: Any,
                                dout: list, g: Any) -> tuple:
    """query, key, value and real_shift through FlashAttentionScoreGrad (from attention_out's
    gradient; the row statistics are saved values, as MindSpore's); the masks none."""
    present = prim_present(inputs[0])
    grad = FlashAttentionScoreGrad(**prim.init_attrs)
    res = g.apply(grad, [inputs[0], inputs[1], inputs[2], inputs[3], dout[3],
                         g.getitem(out, 0), g.getitem(out, 1), g.getitem(out, 3),
                         *inputs[4:]])
    grads = [None, g.getitem(res, 0), g.getitem(res, 1), g.getitem(res, 2)]
    grads += [g.getitem(res, 3) if n == "real_shift" else None for n in present]
    return tuple(grads)


def prim_present(node: Any) -> tuple:
    """The present optional inputs' names held by the call's constant first input."""
    value = getattr(node, "value", node)
    return tuple(value)


declare_without("bprop", FlashAttentionScoreGrad,
                reason="its gradient (a second derivative of attention) is not implemented")


# -- sharding ------------------------------------------------------------------------------
def _letters(prim: _Attention, ins: list, present: Sequence[str]) -> tuple:
    """Letters of every tensor input and of (B, N1, S1): batch b, heads n (the hidden dim
    h of BSH/SBH, split only at head boundaries), query sequence s, key sequence t
    (whole), head dim d (whole)."""
    layout = prim.input_layout
    if layout == "BSH":
        q, kv, heads = ("b", "s", "n"), ("b", "t", "n"), 2
    elif layout == "SBH":
        q, kv, heads = ("s", "b", "n"), ("t", "b", "n"), 2
    elif layout == "BNSD":
        q, kv, heads = ("b", "n", "s", "d"), ("b", "n", "t", "d"), 1
    else:
        q, kv, heads = ("b", "s", "n", "d"), ("b", "t", "n", "d"), 2
    letters = [q, kv, kv]
    for name, shape in zip(present, ins[3:]):
        if name == "drop_mask":
            letters.append(("b", "n", "s", None))
        elif name == "attn_mask" and prim.sparse_mode in (2, 3, 4):
            letters.append((None, None))              # the compressed mask: whole
        elif len(shape) == 2:
            letters.append(("s", "t"))
        else:
            letters.append(tuple(None if shape[j] == 1 and j < 2 else ("b", "n", "s", "t")[j]
                                 for j in range(4)))
    return tuple(letters), heads


@sharding_rule(FlashAttentionScore)
def flash_attention_score_spec(prim: FlashAttentionScore, ins: list, outs: list,
                               consts: dict) -> DimSpec:
    """Batch and heads split freely (no communication); the query sequence splits with the
    keys and values whole (context parallel: each rank attends its rows to every key, the
    positional masks shifted to its rows by the expansion); the key sequence and the head
    dim stay whole."""
    letters, _ = _letters(prim, ins, consts[0])
    stats = ("b", "n", "s", None)
    why = f"{prim.name} attends each query row to every key"
    return DimSpec(letters, (stats, stats, (), letters[0]),
                   unsplittable=(("t", why + ": the key/value sequence must be whole"),
                                 ("d", why + " over the whole head dim")))


@expansion_rule(FlashAttentionScore)
def flash_attention_score_local(prim: FlashAttentionScore, call: ShardedCall) -> Any:
    """Heads split: this rank's op has head_num / k heads (BSH/SBH: the hidden dims split at
    head boundaries, else an error naming the op). Query rows split: the positional masks
    (sparse modes 2-4, mode 0's band with a mask) become this rank's rows of them, given as
    an explicit mask with sparse_mode 1, so each rank keeps exactly the serial scores."""
    present = tuple(call.consts[0])
    _, heads_dim = _letters(prim, call.in_shapes, present)
    q_global = call.in_shapes[0]
    q_local = call.nodes[1].shape
    layout = prim.input_layout
    b, n1, n2, s1, s2, d = prim.dims(q_global, call.in_shapes[1])
    parts = q_global[heads_dim] // q_local[heads_dim]
    changes: dict = {}
    if parts > 1:
        if n1 % parts or n2 % parts:
            raise ValueError(f"For '{prim.name}', a split of the heads should divide the query "
                             f"heads {n1} and the key heads {n2}, but got {parts} parts "
                             f"(input_layout '{layout}').")
        changes["head_num"] = n1 // parts
    s_dim = {"BSH": 1, "SBH": 0, "BNSD": 2, "BSND": 1}[layout]
    rows_split = q_local[s_dim] != q_global[s_dim]
    mode = prim.sparse_mode
    positional = mode in (2, 3, 4) or (mode == 0 and "attn_mask" in present)
    args = call.args()
    if rows_split and positional:
        row0 = call.start(0, s_dim)
        band = band_masked(mode, np.arange(row0, row0 + q_local[s_dim]), np.arange(s2), s1,
                           s2, prim.pre_tokens, prim.next_tokens)
        if band is not None:
            from msops.primitives.piecewise_ops import LogicalOr
            mask = call.const(band)
            if mode == 0:
                at = 4 + present.index("attn_mask")
                given = args[at]
                if given.dtype != mstype.bool_:
                    given = call.apply(Cast(), [given, call.const(mstype.bool_)])
                args[at] = call.apply(LogicalOr(), [given, mask])
            else:
                names = list(present)
                tensors = list(args[4:])
                if "attn_mask" in names:
                    tensors[names.index("attn_mask")] = mask
                else:
                    names.append("attn_mask")
                    tensors.append(mask)
                    order = sorted(range(len(names)), key=lambda i: OPTIONAL.index(names[i]))
                    names, tensors = [names[i] for i in order], [tensors[i] for i in order]
                present = tuple(names)
                args = [call.const(present)] + args[1:4] + tensors
            changes.update(sparse_mode=1, pre_tokens=INF, next_tokens=INF)
    if not changes:
        return None
    attrs = {**prim.init_attrs, **changes}
    return call.apply(FlashAttentionScore(**attrs), [call.const(present)] + args[1:])


@batch_rule(FlashAttentionScore)
def flash_attention_score_batch(prim: FlashAttentionScore, args: list, dims: list,
                                size: int) -> tuple:
    """query, key and value batched (the optional inputs not, and none of them per batch
    item: a real_shift or attn_mask with a leading 1, a 2-D or compressed mask): the vmap
    axis folded into B (BSH, BNSD, BSND), the op once, the outputs unfolded; otherwise
    (SBH, a drop_mask, a batched optional input) per element."""
    from msops.primitives.array_ops import Reshape
    present = prim_present(args[0])
    shared = all(d is None for d in dims[4:]) and all(
        name != "drop_mask" and (len(a.shape) == 2 or a.shape[0] == 1)
        for name, a in zip(present, args[4:]))
    if prim.input_layout == "SBH" or not shared:
        return per_element(prim, args, dims, size)
    call = list(args)
    for i in (1, 2, 3):
        x = broadcast_front(args[i], dims[i], size)
        call[i] = Reshape()(x, (size * x.shape[1],) + tuple(x.shape[2:]))
    out = prim(*call)

    def unfold(o: Any) -> Any:
        return Reshape()(o, (size, o.shape[0] // size) + tuple(o.shape[1:]))
    return (unfold(out[0]), unfold(out[1]), out[2], unfold(out[3])), (0, 0, None, 0)
