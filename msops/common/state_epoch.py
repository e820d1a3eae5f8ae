"""The state epoch: one counter that every change able to alter what a call runs bumps.

Bumped by `set_context`, the auto-parallel context, a change of a Cell tree (a sub-cell,
Parameter or Primitive attribute assigned or deleted) or of a train flag (a TrainOneStepCell's mini-step phase included), a Parameter starting to hold another
layout's slice, and the start and end of every trace. A cache that decides something from that state (a Cell's train flags, an executor's
Parameter layouts, a compiled call's shortcut) records the epoch it decided at and trusts
the decision while the epoch is unchanged: one integer compare per call instead of reading
the whole state.
"""
from __future__ import annotations

__all__ = ["EPOCH", "bump"]

#: the current epoch (a one-element list: read as `EPOCH[0]`, bumped in place)
EPOCH = [0]


def bump() -> None:
    """Record that the state changed: decisions taken at an earlier epoch are re-taken."""
    EPOCH[0] += 1
