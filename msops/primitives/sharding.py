"""What a primitive's sharding rules return and see: dim specs and sharded calls.

A sharding rule describes one application of its op as a `DimSpec`, einsum-like: one
letter per tensor dim (`"mk,kn->mn"` for MatMul); the same letter on two inputs must
be split alike; `None` marks a broadcast dim (never split); a letter absent from the
outputs is reduced, so its split leaves partial results, combined by `partial_op`. The
partition pass (msops.parallel) turns a spec and a strategy into layouts; an expansion
rule gets a `ShardedCall` to build the op's local subgraph with. Both types live here,
below the pass, so rules stay beside their ops without importing it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from msops.primitives.rules import reason_without, rule_of

__all__ = ["DimSpec", "ShardedCall", "GraphBuilder", "spec_of", "dims", "broadcast_letters"]

Letters = tuple  # tuple[str | None, ...]


@dataclass(frozen=True)
class DimSpec:
    """Letters per dim of each tensor input and output; `unsplittable` letters with a reason.

    `partial_op` says how the partial results of a split reduced letter combine: a
    ReduceOp name ("sum", "max", ...) or "mean" (summed, then divided by the parts).
    """

    ins: tuple[Letters, ...]
    outs: tuple[Letters, ...]
    unsplittable: tuple[tuple[str, str], ...] = ()   # (letter, reason)
    reduction_name: str = "reduction"                # how errors call a reduced letter
    partial_op: str = "sum"
    #: the letter the data-parallel default splits (None: the first input's dim 0), for ops
    #: whose batch is not their first input's dim 0 (Gather's indices, not its table)
    batch_letter: str | None = None


def dims(n: int, offset: int = 0, prefix: str = "d") -> tuple:
    """Letters of n dims: d0, d1, ... (from `offset`, with `prefix`)."""
    return tuple(f"{prefix}{offset + j}" for j in range(n))


def broadcast_letters(shape: Sequence[int], out: Sequence[int], prefix: str = "d") -> tuple:
    """Letters of an input aligned to the output from the right; None where it broadcasts."""
    off = len(out) - len(shape)
    return tuple(None if (shape[j] == 1 and out[j + off] != 1) else f"{prefix}{j + off}"
                 for j in range(len(shape)))


def spec_of(prim: Any, in_shapes: Sequence, out_shapes: Sequence, consts: dict) -> DimSpec:
    """The dim spec of `prim` applied to tensor inputs of global `in_shapes` giving
    `out_shapes` (`consts`: the const inputs by position), from its sharding rule."""
    rule = rule_of("sharding", prim)
    if rule is None:
        reason = reason_without("sharding", prim) or (
            "there is no sharding rule (register one beside its class with @sharding_rule), "
            "so it cannot run in a parallel graph")
        raise ValueError(f"For '{prim.name}', {reason}.")
    return rule(prim, [tuple(s) for s in in_shapes], [tuple(s) for s in out_shapes], consts)


class GraphBuilder(Protocol):
    """The graph methods an expansion builds with (msops.graph.Graph has them)."""

    def apply(self, prim: Any, inputs: Sequence[Any], source: str | None = None) -> Any: ...

    def add_const(self, value: Any) -> Any: ...

    def make_tuple(self, nodes: Sequence[Any], source: str | None = None) -> Any: ...

    def getitem(self, node: Any, index: int, source: str | None = None) -> Any: ...


class ShardedCall:
    """One application of a sharded op, as its expansion rule sees it.

    * `in_shapes`: global shapes of the tensor inputs; `in_axes[i][d]`: the device axes
      splitting dim d of tensor input i (() when whole);
    * `out_shapes`: this rank's (slice) shapes of the outputs;
    * `start(i, d)`: the global index at which this rank's slice of tensor input i begins
      along dim d (a row-split embedding table looks up its own rows); `out_start(o)`:
      where its block of output o begins, per dim (a random op draws its own block);
    * `group(axes)`: the communication group of the ranks that differ only along device
      `axes` (created at compile time, so the step only runs kernels);
    * `apply`, `const`, `make_tuple`, `getitem`: the graph builder's methods, recording the
      user's source line; `args()`: the op's own local arguments.
    Nodes carry their local `.shape` and `.dtype`.
    """

    __slots__ = ("graph", "nodes", "consts", "in_shapes", "in_axes", "out_shapes", "group",
                 "source", "in_starts", "out_starts")

    def __init__(self, graph: GraphBuilder, nodes: Sequence[Any], consts: dict,
                 in_shapes: Sequence[tuple], in_axes: Sequence[tuple],
                 out_shapes: Sequence[tuple], group: Callable[[Sequence[int]], str],
                 source: str | None, in_starts: Sequence[tuple] | None = None,
                 out_starts: Sequence[tuple] | None = None) -> None:
        self.graph, self.nodes, self.consts = graph, list(nodes), consts
        self.in_shapes, self.in_axes, self.out_shapes = in_shapes, in_axes, out_shapes
        self.group, self.source = group, source
        self.in_starts, self.out_starts = in_starts, out_starts

    def start(self, i: int, d: int) -> int:
        """Where this rank's slice of tensor input `i` begins along dim `d` (global index)."""
        if self.in_starts is None:
            raise ValueError("For 'ShardedCall', the slice starts should have been given by "
                             "the partition pass, but got None.")
        return self.in_starts[i][d]

    def out_start(self, o: int) -> tuple:
        """Where this rank's block of output `o` begins, per dim (global indices)."""
        if self.out_starts is None:
            raise ValueError("For 'ShardedCall', the output starts should have been given by "
                             "the partition pass, but got None.")
        return self.out_starts[o]

    def args(self, consts: dict | None = None) -> list:
        """The op's local arguments in call order; its const inputs become const nodes
        (`consts` replaces some of their values by position)."""
        values = {**self.consts, **(consts or {})}
        return [self.graph.add_const(values[i]) if i in values else node
                for i, node in enumerate(self.nodes)]

    def apply(self, prim: Any, inputs: Sequence[Any]) -> Any:
        return self.graph.apply(prim, inputs, self.source)

    def const(self, value: Any) -> Any:
        return self.graph.add_const(value)

    def make_tuple(self, nodes: Sequence[Any]) -> Any:
        return self.graph.make_tuple(nodes, self.source)

    def getitem(self, node: Any, index: int) -> Any:
        return self.graph.getitem(node, index, self.source)
