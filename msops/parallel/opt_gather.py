"""Which op gathers a Parameter the parallel optimizer stores sharded: the training step's
choice, asked by the partition pass.

The pass gathers an opt-sharded Parameter once per graph, for its first consumer (later
consumers reuse the gathered value), with `shard_gather(param, group)`: by default a plain
`AllGather(group)` (backward: a ReduceScatter of the gradient). A training step that
accumulates gradients installs a policy while it compiles (`gathering(policy)`);
`policy.shard_gather(param, group)` returns `(prim, z)` — a gather taking `(shard, z)`, z
its accumulation buffer (a Parameter the pass lays out as the gathered value) — or None
for the plain AllGather. `nn.TrainOneStepCell` installs its mini-step accumulation
(`_MiniStepAllGather`) or the network's `nn.GradAccumulationCell` (`_MicroStepAllGather`).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Protocol

from msops.primitives.comm_ops import AllGather
from msops.primitives.primitive import Primitive

__all__ = ["GatherPolicy", "gathering", "shard_gather"]


class GatherPolicy(Protocol):
    """What a training step that accumulates gradients tells the partition pass."""

    def shard_gather(self, param: Any, group: str) -> tuple[Primitive, Any] | None:
        """(the gather of `param`'s shard over `group`, its accumulation buffer z), or None."""


_policy: GatherPolicy | None = None


@contextmanager
def gathering(policy: GatherPolicy | None) -> Iterator[None]:
    """Compile under `policy` (None: plain AllGathers)."""
    global _policy
    prev, _policy = _policy, policy
    try:
        yield
    finally:
        _policy = prev


def shard_gather(param: Any, group: str) -> tuple[Primitive, Any]:
    """(gather op, accumulation buffer or None) for `param`'s shard over `group`."""
    chosen = _policy.shard_gather(param, group) if _policy is not None else None
    return chosen if chosen is not None else (AllGather(group), None)
