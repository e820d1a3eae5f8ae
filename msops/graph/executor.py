"""Executor: a graph flattened once into a schedule of `(kernel, input_slots, output_slot)`.

Every node value lives in a slot of one list. Const slots are filled when the schedule
is built; input slots take the arrays passed to `run` (through `node.feed`, which maps
the full value to this rank's slice, when the parallel pass set one); parameter slots
read the Parameter's current data each step (its fed slice is cached until the
Parameter's data changes). Kernels come from `prim.lower(input_nodes, node)`, so a
primitive may specialise its kernel to the compiled shapes once.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common.tensor import Parameter, Tensor
from msops.graph.ir import Graph, Node, TupleGetItem

__all__ = ["Executor"]


class _FedParameter:
    """A Parameter slot whose value is `feed(param data)`, recomputed only on change."""

    __slots__ = ("slot", "param", "feed", "src", "version", "value")

    def __init__(self, slot: int, param: Parameter, feed: Callable) -> None:
        self.slot, self.param, self.feed = slot, param, feed
        self.src = self.version = self.value = None

    def get(self) -> np.ndarray:
        p = self.param
        data, version = p._data, getattr(p, "version", 0)
        if data is not self.src or version != self.version:
            self.value = self.feed(data)
            self.src, self.version = data, version
        return self.value


def _lower(node: Node) -> tuple[Callable, list[Node]]:
    """(kernel, the input nodes it reads) of one op node; a TupleGetItem folds its index in."""
    if isinstance(node.prim, TupleGetItem):
        index = node.inputs[1].value
        return (lambda values: values[index]), node.inputs[:1]
    return node.prim.lower(node.inputs, node), node.inputs


def _with_releases(steps: list, keep: set) -> list:
    """Each step plus the slots last read by it: freed at once, so numpy reuses warm memory
    (holding every intermediate to the end of a step costs page faults on fresh buffers)."""
    last_use: dict[int, int] = {}
    for k, (_, ins, _) in enumerate(steps):
        for i in ins:
            last_use[i] = k
    dead: list[list[int]] = [[] for _ in steps]
    for s, k in last_use.items():
        if s not in keep:
            dead[k].append(s)
    return [(kernel, ins, out, tuple(d)) for (kernel, ins, out), d in zip(steps, dead)]


class Executor:
    """Runs a Graph: `run(arrays) -> list of output arrays`; `__call__` takes/returns Tensors.

    `in_abstracts` handed to `prim.lower` are the input Nodes (`.shape`, `.dtype`,
    `.value` for consts, `.layout`), `out_abstract` the node itself.
    """

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        slot_of: dict[int, int] = {}

        def slot(node: Node) -> int:
            if node.id not in slot_of:
                slot_of[node.id] = len(slot_of)
            return slot_of[node.id]

        self._inputs = [(slot(n), n.feed) for n in graph.inputs]
        self._params = [(slot(n), n.value) for n in graph.parameters if n.feed is None]
        self._fed_params = [_FedParameter(slot(n), n.value, n.feed)
                            for n in graph.parameters if n.feed is not None]
        consts = [(slot(n), n.value) for n in graph.consts]
        steps = []
        for node in graph.nodes:
            kernel, ins = _lower(node)
            steps.append((kernel, tuple(slot(i) for i in ins), slot(node)))
        self._outputs = [slot(n) for n in graph.outputs]
        self._out_layouts = [n.layout for n in graph.outputs]
        self._schedule = _with_releases(steps, set(self._outputs))
        self._template: list[Any] = [None] * len(slot_of)
        for s, value in consts:
            self._template[s] = value

    def run(self, arrays: Sequence[np.ndarray]) -> list:
        """Execute the schedule on one array per graph input; the output arrays."""
        if len(arrays) != len(self._inputs):
            raise ValueError(f"For '{self.graph.name}', the number of inputs should be "
                             f"{len(self._inputs)}, but got {len(arrays)}.")
        slots = self._template.copy()
        for (s, feed), a in zip(self._inputs, arrays):
            slots[s] = a if feed is None else feed(a)
        for s, p in self._params:
            slots[s] = p._data
        for fp in self._fed_params:
            slots[fp.slot] = fp.get()
        for kernel, ins, out, dead in self._schedule:
            slots[out] = kernel(*[slots[i] for i in ins])
            for i in dead:
                slots[i] = None
        return [slots[s] for s in self._outputs]

    def __call__(self, arrays: Sequence[np.ndarray]) -> Any:
        """Like `run`, with the outputs as Tensors (a tuple when construct returned one).

        An output the parallel pass laid out carries its `layout` (for `gather_full`).
        """
        outs = []
        for value, layout in zip(self.run(arrays), self._out_layouts):
            t = None if value is None else Tensor._wrap(np.asarray(value))
            if layout is not None and t is not None:
                t.layout = layout
            outs.append(t)
        return tuple(outs) if self.graph.output_is_tuple else outs[0]

    def __len__(self) -> int:
        return len(self._schedule)
