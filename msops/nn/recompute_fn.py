"""`ms.recompute(block, *args, **kwargs)`: one call of a Cell whose forward is recomputed in
the backward instead of keeping its activations (MindSpore 2.3+'s functional form of
`Cell.recompute()`, which marks every call).

Traced (GRAPH_MODE, `ms.jit`, a training step), the call is one recompute span
(graph/recompute.py): the same numbers, its inner activations freed after the forward.
In PYNATIVE_MODE the block runs as it is: the gradient tape keeps every value, so the
numbers are the same and no memory is saved.
"""
from __future__ import annotations

from typing import Any

from msops.common import validator
from msops.graph import tracer
from msops.nn.cell import Cell

__all__ = ["recompute"]


def recompute(block: Cell, *args: Any, use_reentrant: bool = True,
              output_recompute: bool = False, **kwargs: Any) -> Any:
    """`block(*args, **kwargs)`, recomputed in the backward (`use_reentrant` and
    `output_recompute` choose MindSpore's PYNATIVE mechanisms: accepted and checked)."""
    if not isinstance(block, Cell):
        raise TypeError(f"For 'recompute', the 'block' should be a Cell, but got "
                        f"{type(block).__name__}.")
    validator.check_bool("use_reentrant", use_reentrant, "recompute")
    validator.check_bool("output_recompute", output_recompute, "recompute")
    if not tracer.is_tracing():
        return block(*args, **kwargs)
    if kwargs:
        args = block._positional(args, kwargs)
    return block._checked_call(args, recompute=True)
