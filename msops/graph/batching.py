"""The batching pass: a per-element graph run over a batch, op by op, by batch rules.

`run_batched` walks a graph traced on one batch element (vmap traces fn that way) and
calls, for each op, its batch rule (`@batch_rule(Cls)` beside the op; the pass names no
op): the rule gets the op's arguments with their batch axes and calls ordinary
primitives. Those calls run eagerly, or are recorded by whatever records primitive calls
at the time (the tracer inside `ms.jit` or a Cell, a gradient's tape), so the batched
computation is an ordinary graph of ordinary primitives. An op without a rule runs once
per batch element (`per_element`). An op none of whose arguments is batched runs as it
is, except a random draw, which draws anew for each element (never the same numbers for
every element).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common.tensor import Tensor
from msops.graph.ir import Graph, MakeTuple, TupleGetItem
from msops.primitives.batching import per_element
from msops.primitives.rules import rule_of

__all__ = ["run_batched", "is_batched"]


def is_batched(dim: Any) -> bool:
    """Whether a batch axis (an int, None, or a tuple of them for a tuple) maps anything."""
    if isinstance(dim, tuple):
        return any(is_batched(d) for d in dim)
    return dim is not None


def run_batched(graph: Graph, inputs: Sequence[tuple[Any, Any]], free: dict[int, Any],
                size: int, api: str = "vmap",
                parameter: Callable[[Any], tuple[Any, Any]] | None = None
                ) -> list[tuple[Any, Any]]:
    """The graph's outputs as (value, batch axis or None) for its explicit inputs given
    as (value, batch axis); `free` (node id -> value) supplies the nodes standing for
    captured objects (`tracer.trace_nested`); `size` is the batch size. `parameter(p)`
    gives a Parameter's (value, batch axis) (default: p itself, not batched)."""
    env: dict[int, tuple[Any, Any]] = {}
    for node, entry in zip(graph.inputs, inputs):
        env[node.id] = entry
    for node in graph.inputs[len(inputs):]:              # captured traced Tensors
        env[node.id] = (free[node.id], None)
    for p in graph.parameters:
        env[p.id] = (p.value, None) if parameter is None else parameter(p.value)
    for c in graph.consts:
        value = free.get(c.id, c.value)
        env[c.id] = (Tensor(value) if isinstance(value, np.ndarray) else value, None)
    for node in graph.nodes:
        prim = node.prim
        if isinstance(prim, TupleGetItem):
            value, dim = env[node.inputs[0].id]
            k = node.inputs[1].value
            env[node.id] = (value[k], dim[k] if isinstance(dim, tuple) else dim)
            continue
        if isinstance(prim, MakeTuple):
            entries = [env[i.id] for i in node.inputs]
            env[node.id] = (tuple(v for v, _ in entries), tuple(d for _, d in entries))
            continue
        args, dims = [], []
        for k, i in enumerate(node.inputs):
            if k in prim.const_inputs and i.kind == "const":
                args.append(i.value)
                dims.append(None)
            else:
                value, dim = env[i.id]
                args.append(value)
                dims.append(dim)
        if not any(is_batched(d) for d in dims) and not prim.draws_random:
            out = prim(*args)
            env[node.id] = (out, tuple(None for _ in out) if isinstance(out, tuple) else None)
            continue
        if prim.assigns_input is not None:
            raise NotImplementedError(
                f"For '{api}', the op '{prim.name}' writes a Parameter, which a mapped "
                f"function should not do (each batch element would write it), but got it "
                f"with a mapped input, at {node.source}.")
        rule = rule_of("batch", prim) or per_element
        env[node.id] = rule(prim, args, dims, size)
    return [env[o.id] for o in graph.outputs]
