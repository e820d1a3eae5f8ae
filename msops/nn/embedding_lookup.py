"""nn.EmbeddingLookup and nn.MultiFieldEmbeddingLookup, as `mindspore.nn`: a table lookup
(`ops.Gather`) whose `slice_mode` says, in (semi-)auto-parallel mode, how the table and the
lookup are sharded over the world (as MindSpore's, for ids (batch, fields)):

* batch_slice: the table whole on every rank, the ids split by batch (Gather's
  ((1, 1), (N, 1))): no communication;
* table_row_slice: the table split by rows, the ids whole (((N, 1), (1, 1))): each rank
  looks up its own rows, one AllReduce sums the lookups;
* table_column_slice: the table split by columns (((1, N), (1, 1))): no communication;
* field_slice: the table split by rows in the blocks `manual_shapes` gives and the ids by
  fields alike (((N, 1), (1, N)) with Gather's `manual_split` attribute): field block k
  must hold only ids of row block k; msops splits evenly, so `manual_shapes` must be N
  equal blocks (anything else is an error).
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Parameter, Tensor
from msops.communication.management import get_group_size
from msops.nn.cell import Cell
from msops.nn.initializer import initializer
from msops.nn.norm_layers import ClipByNorm
from msops.ops.scatter_func import _limit
from msops.parallel.context import ParallelMode, get_auto_parallel_context

__all__ = ["EmbeddingLookup", "MultiFieldEmbeddingLookup"]

_PARALLEL = (ParallelMode.SEMI_AUTO_PARALLEL, ParallelMode.AUTO_PARALLEL)


def _in_parallel() -> bool:
    return get_auto_parallel_context("parallel_mode") in _PARALLEL


class EmbeddingLookup(Cell):
    """`EmbeddingLookup(vocab_size, embedding_size, param_init='normal', target='CPU',
    slice_mode='batch_slice', manual_shapes=None, max_norm=None, sparse=True,
    vocab_cache_size=0, dtype=float32)(input_indices)`: ids of any shape S (int32 or
    int64) -> S + (embedding_size,) rows of the Parameter `embedding_table`; an id outside
    [0, vocab_size) gives zeros. `max_norm` rescales each looked-up row to an L2 norm of
    at most max_norm. `target` ('CPU' or 'DEVICE') and `sparse` (MindSpore's sparse
    gradient) give the same values here; `vocab_cache_size` (MindSpore's parameter-server
    cache) is ignored with a warning, as MindSpore outside parameter-server mode. In
    (semi-)auto-parallel mode the ids must be 2-D (batch, fields) and `slice_mode` shards
    the lookup (see the module's notes)."""

    BATCH_SLICE = "batch_slice"
    FIELD_SLICE = "field_slice"
    TABLE_ROW_SLICE = "table_row_slice"
    TABLE_COLUMN_SLICE = "table_column_slice"
    _MODES = (BATCH_SLICE, FIELD_SLICE, TABLE_ROW_SLICE, TABLE_COLUMN_SLICE)

    def __init__(self, vocab_size: int, embedding_size: int, param_init: Any = "normal",
                 target: str = "CPU", slice_mode: str = "batch_slice",
                 manual_shapes: Any = None, max_norm: float | None = None, sparse: bool = True,
                 vocab_cache_size: int = 0, dtype: mstype.Type = mstype.float32) -> None:
        super().__init__()
        name = self.cls_name
        self.vocab_size = validator.check_positive_int(vocab_size, "vocab_size", name)
        self.embedding_size = validator.check_positive_int(embedding_size, "embedding_size",
                                                           name)
        validator.check_value_type("target", target, str, name)
        if target not in ("CPU", "DEVICE"):
            raise ValueError(f"For '{name}', the 'target' should be one of ['CPU', 'DEVICE'], "
                             f"but got {target!r}.")
        self.target = target
        self.sparse = validator.check_bool("sparse", sparse, name)
        if slice_mode not in self._MODES:
            raise ValueError(f"For '{name}', the 'slice_mode' should be one of "
                             f"{list(self._MODES)}, but got {slice_mode!r}.")
        self.slice_mode = slice_mode
        if max_norm is not None:
            validator.check_value_type("max_norm", max_norm, (int, float), name)
            if not max_norm > 0:
                raise ValueError(f"For '{name}', the 'max_norm' should be > 0, but got "
                                 f"{max_norm}.")
            self.clip = ClipByNorm(-1)
        self.max_norm = max_norm
        self.vocab_cache_size = validator.check_non_negative_int(
            vocab_cache_size, "vocab_cache_size", name)
        if vocab_cache_size:
            warnings.warn(f"For '{name}', the 'vocab_cache_size' is valid only in parameter "
                          f"server training mode, which msops does not have, so it is "
                          f"ignored.", stacklevel=2)
        validator.check_type_name("dtype", dtype, mstype.float_type, name)
        self.embedding_table = Parameter(
            initializer(param_init, (vocab_size, embedding_size), dtype, "param_init", name),
            name="embedding_table")
        self.gather = ops.Gather()
        self.manual_shapes = self._check_manual_shapes(manual_shapes)
        if _in_parallel():
            self._shard_lookup(get_group_size())

    def _check_manual_shapes(self, manual_shapes: Any) -> tuple | None:
        """field_slice's row blocks: positive ints summing to vocab_size (required in
        parallel mode, as MindSpore's)."""
        name = self.cls_name
        if manual_shapes is None:
            if self.slice_mode == self.FIELD_SLICE and _in_parallel():
                raise ValueError(f"For '{name}', the 'manual_shapes' should not be None when "
                                 f"the 'slice_mode' is 'field_slice', but got None.")
            return None
        validator.check_value_type("manual_shapes", manual_shapes, tuple, name)
        for dim in manual_shapes:
            validator.check_positive_int(dim, "manual shape dim", name)
        if sum(manual_shapes) != self.vocab_size:
            raise ValueError(f"For '{name}', the 'manual_shapes' should sum to the "
                             f"'vocab_size' {self.vocab_size}, but got {manual_shapes}.")
        return tuple(manual_shapes)

    def _shard_lookup(self, n: int) -> None:
        """Gather's strategy (and attributes) for `slice_mode` over `n` devices, ids 2-D."""
        mode = self.slice_mode
        if mode == self.FIELD_SLICE:
            if self.manual_shapes != (self.vocab_size // n,) * n:
                raise ValueError(
                    f"For '{self.cls_name}', the 'manual_shapes' should split the "
                    f"{self.vocab_size} rows into {n} equal blocks "
                    f"{(self.vocab_size // n,) * n} (msops splits the table evenly over the "
                    f"{n} devices), but got {self.manual_shapes}.")
            self.gather.add_prim_attr("manual_split", self.manual_shapes)
            self.gather.shard(((n, 1), (1, n)))
        elif mode == self.TABLE_ROW_SLICE:
            self.gather.shard(((n, 1), (1, 1)))
        elif mode == self.TABLE_COLUMN_SLICE:
            self.gather.shard(((1, n), (1, 1)))
        else:
            self.gather.shard(((1, 1), (n, 1)))

    def _lookup(self, ids: Any) -> Any:
        if not isinstance(ids, Tensor) and not hasattr(ids, "shape"):
            raise TypeError(f"For '{self.cls_name}', the 'input_indices' should be a Tensor, "
                            f"but got {type(ids).__name__}.")
        if _in_parallel() and len(ids.shape) != 2:
            raise ValueError(f"For '{self.cls_name}', the 'input_indices' should be 2-D "
                             f"(batch, fields) in parallel mode ('slice_mode' "
                             f"{self.slice_mode!r} shards them so), but got shape "
                             f"{list(ids.shape)}.")
        out = self.gather(self.embedding_table, ids, 0)
        if self.max_norm is not None:
            out = self.clip(out, Tensor(float(self.max_norm), mstype.float32))
        return out

    def construct(self, input_indices: Any) -> Any:
        return self._lookup(input_indices)

    def extend_repr(self) -> str:
        return (f"vocab_size={self.vocab_size}, embedding_size={self.embedding_size}, "
                f"target={self.target}, slice_mode={self.slice_mode}, "
                f"max_norm={self.max_norm}, sparse={self.sparse}")


class MultiFieldEmbeddingLookup(EmbeddingLookup):
    """`MultiFieldEmbeddingLookup(vocab_size, embedding_size, field_size, param_init='normal',
    target='CPU', slice_mode='batch_slice', feature_num_list=None, max_norm=None,
    sparse=True, operator='SUM', dtype=float32)(input_indices, input_values, field_ids)`:
    the three inputs (batch, seq) (int32, float32, int32); each id's row times its value,
    combined per (sample, field id in [0, field_size)) -> (batch, field_size,
    embedding_size) by `operator`: 'SUM' the sum; 'MEAN' the sum divided by the sum of
    |value| (0 where that is 0); 'MAX' the maximum over the entries of non-zero value (0
    for none). As MindSpore's, 'field_slice' is not a mode it shards."""

    OPERATOR_SUM = "SUM"
    OPERATOR_MEAN = "MEAN"
    OPERATOR_MAX = "MAX"

    def __init__(self, vocab_size: int, embedding_size: int, field_size: int,
                 param_init: Any = "normal", target: str = "CPU",
                 slice_mode: str = "batch_slice", feature_num_list: Any = None,
                 max_norm: float | None = None, sparse: bool = True, operator: str = "SUM",
                 dtype: mstype.Type = mstype.float32) -> None:
        name = type(self).__name__
        if slice_mode == self.FIELD_SLICE and _in_parallel():
            raise ValueError(f"For '{name}', the 'slice_mode' should be one of "
                             f"['table_row_slice', 'batch_slice', 'table_column_slice'], but "
                             f"got 'field_slice'.")
        super().__init__(vocab_size, embedding_size, param_init, target, slice_mode,
                         feature_num_list, max_norm, sparse, 0, dtype)
        self.field_size = validator.check_positive_int(field_size, "field_size", name)
        validator.check_value_type("operator", operator, str, name)
        if operator not in (self.OPERATOR_SUM, self.OPERATOR_MEAN, self.OPERATOR_MAX):
            raise ValueError(f"For '{name}', the 'operator' should be one of ['SUM', 'MAX', "
                             f"'MEAN'], but got {operator!r}.")
        self.operator = operator
        self.mul, self.select, self.not_equal = ops.Mul(), ops.Select(), ops.NotEqual()
        self.greater, self.abs, self.div = ops.Greater(), ops.Abs(), ops.DivNoNan()
        self.add, self.reshape, self.expand = ops.Add(), ops.Reshape(), ops.ExpandDims()
        self.cast = ops.Cast()

    def _check_inputs(self, ids: Any, values: Any, fields: Any) -> tuple:
        name = self.cls_name
        for arg, x, want in (("input_indices", ids, (mstype.int32,)),
                             ("input_values", values, (mstype.float32,)),
                             ("field_ids", fields, (mstype.int32,))):
            if not isinstance(x, Tensor) and not hasattr(x, "shape"):
                raise TypeError(f"For '{name}', the '{arg}' should be a Tensor, but got "
                                f"{type(x).__name__}.")
            validator.check_tensor_dtype_valid(arg, x.dtype, want, name)
            if len(x.shape) != 2 or tuple(x.shape) != tuple(ids.shape):
                raise ValueError(f"For '{name}', the '{arg}' should be 2-D (batch, seq) of "
                                 f"the 'input_indices' shape {list(ids.shape)}, but got "
                                 f"{list(x.shape)}.")
        return tuple(ids.shape)

    def construct(self, input_indices: Any, input_values: Any, field_ids: Any) -> Any:
        batch, _ = self._check_inputs(input_indices, input_values, field_ids)
        segments = batch * self.field_size
        # each sample's fields get their own segments: field id + sample * field_size
        offsets = Tensor(np.arange(0, segments, self.field_size, dtype=np.int32)[:, None])
        seg = self.add(field_ids, offsets)
        looked = self._lookup(input_indices)                         # (batch, seq, emb)
        weights = self.expand(self.cast(input_values, looked.dtype), -1)
        rows = self.mul(looked, weights)
        if self.operator == self.OPERATOR_MAX:
            lowest = _limit(rows.dtype, highest=False)
            kept = self.not_equal(weights, 0.0)
            rows = self.select(kept, rows, ops.full_like(rows, lowest))
            out = ops.unsorted_segment_max(rows, seg, segments)
            out = self.select(self.greater(out, lowest), out, ops.zeros_like(out))
        else:
            out = ops.unsorted_segment_sum(rows, seg, segments)
            if self.operator == self.OPERATOR_MEAN:
                count = ops.unsorted_segment_sum(self.abs(weights), seg, segments)
                out = self.div(out, count)
        return self.reshape(out, (batch, self.field_size, self.embedding_size))

    def extend_repr(self) -> str:
        return super().extend_repr() + f", field_size={self.field_size}, " \
            f"operator={self.operator}"
