"""Running a graph op by op through the primitives' eager calls.

The executor runs a compiled graph as planned kernels on arrays, which no recorder sees.
A gradient function called while another gradient is recorded eagerly (PYNATIVE_MODE,
`ms.grad(ms.grad(f))`) needs its forward and backward ops recorded on the outer tape, so
it builds its graph once and runs it here: each node is its primitive called on Tensors,
which the outer tape records (and can differentiate again).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common.tensor import Tensor
from msops.graph.ir import Graph, MakeTuple, TupleGetItem

__all__ = ["interpret"]


def interpret(graph: Graph, inputs: Sequence[Tensor]) -> list[Any]:
    """The graph's outputs for `inputs` (its inputs' Tensors, in order), every op a
    primitive call. Parameters are read (and written, by an Assign) as the Parameters."""
    if len(inputs) != len(graph.inputs):
        raise ValueError(f"For '{graph.name}', the graph takes {len(graph.inputs)} Tensors, "
                         f"but got {len(inputs)}.")
    for hook in graph.pre_run:
        hook()
    env: dict[int, Any] = {n.id: t for n, t in zip(graph.inputs, inputs)}
    env.update((p.id, p.value) for p in graph.parameters)
    for c in graph.consts:
        env[c.id] = Tensor(c.value) if isinstance(c.value, np.ndarray) else c.value
    for node in graph.nodes:
        prim = node.prim
        if isinstance(prim, TupleGetItem):
            env[node.id] = env[node.inputs[0].id][node.inputs[1].value]
        elif isinstance(prim, MakeTuple):
            env[node.id] = tuple(env[i.id] for i in node.inputs)
        else:
            args = [i.value if k in prim.const_inputs and i.kind == "const" else env[i.id]
                    for k, i in enumerate(node.inputs)]
            env[node.id] = prim(*args)
    return [env[o.id] for o in graph.outputs]
