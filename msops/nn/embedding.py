"""nn.Embedding: a lookup table of `embedding_size`-vectors for `vocab_size` ids (MindSpore's
arguments). The lookup is `ops.Gather` (or a one-hot MatMul with use_one_hot); shard the
table through `embedding.gather.shard(((rows, cols), (ids...)))`: split by rows it is a
shifted local lookup plus one AllReduce, by columns no communication (msops.primitives.gather_ops).
"""
from __future__ import annotations

from typing import Any

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Parameter, Tensor
from msops.nn.cell import Cell
from msops.nn.initializer import initializer

__all__ = ["Embedding"]


class Embedding(Cell):
    """`Embedding(vocab_size, embedding_size, use_one_hot=False, embedding_table='normal',
    dtype=mstype.int32, padding_idx=None)`: ids of any shape S (of `dtype`, int32 or int64)
    -> S + (embedding_size,). The table is the Parameter `embedding_table` (vocab_size,
    embedding_size), float32; row `padding_idx` starts as zeros (as MindSpore's). An id
    outside [0, vocab_size) gives zeros.
    """

    def __init__(self, vocab_size: int, embedding_size: int, use_one_hot: bool = False,
                 embedding_table: Any = "normal", dtype: mstype.Type = mstype.int32,
                 padding_idx: int | None = None) -> None:
        super().__init__()
        name = self.cls_name
        self.vocab_size = validator.check_positive_int(vocab_size, "vocab_size", name)
        self.embedding_size = validator.check_positive_int(embedding_size, "embedding_size",
                                                           name)
        self.use_one_hot = validator.check_bool("use_one_hot", use_one_hot, name)
        validator.check_value_type("dtype", dtype, mstype.Type, name)
        self.dtype = validator.check_type_name("dtype", dtype, (mstype.int32, mstype.int64),
                                               name)
        table = initializer(embedding_table, (vocab_size, embedding_size), mstype.float32,
                            "embedding_table", name).asnumpy()
        if padding_idx is not None:
            validator.check_int("padding_idx", padding_idx, name)
            if not -vocab_size <= padding_idx < vocab_size:
                raise ValueError(f"For '{name}', the 'padding_idx' should be in "
                                 f"[{-vocab_size}, {vocab_size}), but got {padding_idx}.")
            table = table.copy()
            table[padding_idx] = 0
        self.padding_idx = padding_idx
        self.embedding_table = Parameter(Tensor(table), name="embedding_table")
        self.gather = ops.Gather()
        self.one_hot = ops.OneHot()
        self.array_mul = ops.MatMul()
        self.reshape = ops.Reshape()

    def construct(self, ids):
        if not self.use_one_hot:
            return self.gather(self.embedding_table, ids, 0)
        flat = self.reshape(ids, (-1,))
        hot = self.one_hot(flat, self.vocab_size, Tensor(1.0, mstype.float32),
                           Tensor(0.0, mstype.float32))
        out = self.array_mul(hot, self.embedding_table)
        return self.reshape(out, tuple(ids.shape) + (self.embedding_size,))

    def extend_repr(self) -> str:
        return (f"vocab_size={self.vocab_size}, embedding_size={self.embedding_size}, "
                f"use_one_hot={self.use_one_hot}, embedding_table={self.embedding_table.name}, "
                f"dtype={self.dtype}, padding_idx={self.padding_idx}")
