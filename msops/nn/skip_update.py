"""`skipped_when(skip)`: the Parameter writes made inside the block keep the old values
where `skip` (a bool scalar Tensor) is True, as a select in the graph.

A loss-scaled training step skips the optimizer's update on an overflowing step. The step
is one compiled graph, so the skip cannot be Python control flow run per step: every
`ops.Assign(p, value)` issued inside the block (the optimizer's update of its parameters
and of its state, global_step included) becomes `ops.Assign(p, Select(skip, p, value))`.
On a skipped step each Parameter is written its own value (a NaN in `value` never reaches
it: Select picks, it does not compute); otherwise the update is the ordinary one. The
rewriting is a primitive-call hook wrapping the tracer's or the tape's (eagerly, none),
like the casting hook of `Cell.to_float` (msops/nn/mixed_precision.py), so it works for
any optimizer that writes with `ops.Assign`, compiled or eager.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from msops.common.tensor import Parameter
from msops.nn.mixed_precision import call_through
from msops.primitives import primitive as _primitive
from msops.primitives.elementwise_ops import Select
from msops.primitives.state_ops import Assign

__all__ = ["skipped_when"]


class _SkipWrites:
    """The hook: an Assign of a Parameter writes Select(skip, old value, new value)."""

    def __init__(self, skip: Any, inner: Callable | None) -> None:
        self.skip, self.inner = skip, inner

    def __call__(self, prim: Any, args: Any) -> Any:
        written = prim.assigns_input
        if written is not None and isinstance(args[written], Parameter):
            if not isinstance(prim, Assign):
                raise NotImplementedError(
                    f"For '{prim.name}', a write skipped on overflow should be an Assign "
                    f"(the loss-scaled step selects the old value), but got '{prim.name}'.")
            variable, value = args
            kept = call_through(self.inner, Select(), (self.skip, variable, value))
            args = (variable, kept)
        return call_through(self.inner, prim, args)


@contextlib.contextmanager
def skipped_when(skip: Any) -> Iterator[None]:
    """Run the block with its Parameter writes kept back where `skip` is True."""
    prev = _primitive._trace_hook
    _primitive.set_trace_hook(_SkipWrites(skip, prev))
    try:
        yield
    finally:
        _primitive.set_trace_hook(prev)
