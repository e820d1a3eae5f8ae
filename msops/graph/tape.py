"""The eager builder: a tape of primitive calls with the Graph's building interface.

`Tape` has what backward rules and the autodiff pass use of a Graph — `nodes`,
`apply`, `add_const`, `getitem`, `make_tuple`, and Nodes with shape, dtype and value —
but `apply` runs the primitive at once and a node's `value` is its array (a tuple of
arrays for a multi-output op). So PYNATIVE_MODE differentiates by recording `fn`'s
primitive calls while it runs eagerly (`recording`), then running the very same pass
and rules on the tape: the backward runs as it is built.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Parameter, Tensor
from msops.graph.ir import GraphError, MakeTuple, Node, TupleGetItem
from msops.graph.tracer import user_source
from msops.primitives import primitive as _primitive

__all__ = ["Tape"]


def _abstract(value: Any) -> tuple:
    """(shape, dtype) of an array, or of a tuple of arrays, as a Node holds them."""
    if isinstance(value, (tuple, list)):
        return (tuple(v.shape for v in value),
                tuple(mstype.from_numpy(v.dtype) for v in value))
    return value.shape, mstype.from_numpy(value.dtype)


def _array(result: Any) -> Any:
    if result is None:
        return None
    if isinstance(result, tuple):
        return tuple(t._data for t in result)
    return result._data


class Tape:
    """Op nodes in the order they ran (`nodes`); each node's `value` holds its result."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self._next_id = 0
        self._of: dict[int, tuple[Tensor, Node]] = {}     # id(Tensor) -> (it, its node)
        self._params: dict[int, Parameter] = {}             # parameter node id -> Parameter

    def _new(self, kind: str, value: Any, **kw: Any) -> Node:
        shape, dtype = _abstract(value) if value is not None else ((), None)
        node = Node(self._next_id, kind, shape=shape, dtype=dtype, value=value, **kw)
        self._next_id += 1
        if kind == "op":
            self.nodes.append(node)
        return node

    # -- the builder interface (backward rules, the autodiff pass) ------------------------
    def add_const(self, value: Any) -> Node:
        """A constant: a Python value (for `const_inputs`) or an array."""
        if isinstance(value, Tensor):
            value = value.asnumpy()
        if isinstance(value, np.ndarray):
            return self._new("const", value)
        node = self._new("const", None)
        node.value = value
        return node

    def apply(self, prim: Any, inputs: Sequence[Node], source: str | None = None) -> Node:
        """Run `prim` on the inputs' values now; a node holding its result."""
        args = []
        for i, n in enumerate(inputs):
            if i in prim.const_inputs or (n.kind == "const" and n.dtype is None):
                args.append(n.value)
            elif n.kind == "parameter":       # the Parameter itself: a backward may Assign it
                args.append(self._params[n.id])
            elif n.is_tuple:
                args.append(tuple(Tensor._wrap(v) for v in n.value))
            else:
                args.append(Tensor._wrap(n.value))
        prev = _primitive.set_trace_hook(None)
        try:
            result = prim(*args)
        finally:
            _primitive.set_trace_hook(prev)
        return self._new("op", _array(result), prim=prim, inputs=list(inputs), source=source)

    def getitem(self, node: Node, index: int, source: str | None = None) -> Node:
        return self._new("op", node.value[index], prim=TupleGetItem(),
                         inputs=[node, self.add_const(index)], source=source)

    def make_tuple(self, nodes: Sequence[Node], source: str | None = None) -> Node:
        return self._new("op", tuple(n.value for n in nodes), prim=MakeTuple(),
                         inputs=list(nodes), source=source)

    def inline(self, fn: Any, nodes: Sequence[Node]) -> list[Node]:
        """`fn` (a Python function of Tensors) run now on the nodes' values, its primitive
        calls recorded here: one node per Tensor it returns (a backward hook's result)."""
        args = [self._bind(Tensor._wrap(n.value), n) for n in nodes]
        prev = _primitive.set_trace_hook(self._record)
        try:
            result = fn(*args)
        finally:
            _primitive.set_trace_hook(prev)
        items = result if isinstance(result, (tuple, list)) else (result,)
        return [self.node_of(t) for t in items]

    # -- recording a function's eager run -------------------------------------------------
    def input(self, t: Tensor) -> Node:
        """A fresh Tensor on `t`'s data, recorded as an input leaf (the caller passes it on)."""
        return self._bind(Tensor._wrap(t._data), self._new("input", t._data))

    def parameter(self, p: Parameter) -> Node:
        """The leaf of Parameter `p` (made on first use)."""
        hit = self._of.get(id(p))
        if hit is None:
            node = self._new("parameter", p._data, name=p.name)
            self._params[node.id] = p
            self._bind(p, node)
            return node
        return hit[1]

    def node_of(self, value: Any, like: Any = None) -> Node:
        """The node of a value fn used or returned: its recorded node, a Parameter's leaf,
        or a constant."""
        hit = self._of.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        if isinstance(value, Parameter):
            return self.parameter(value)
        if isinstance(value, Tensor):
            return self.add_const(value._data)
        return self.add_const(like if like is not None else value)

    def tensor_of(self, node: Node) -> Tensor:
        return Tensor._wrap(node.value)

    def records(self, t: Tensor) -> bool:
        """Whether `t` is a value recorded on this tape (an input or an op's result)."""
        hit = self._of.get(id(t))
        return hit is not None and hit[0] is t

    def rebind(self, t: Tensor, value: Tensor) -> None:
        """`t` now holds `value`'s data (`t[...] = v`): later uses of t are value's node."""
        self._bind(t, self.node_of(value))

    def _bind(self, t: Any, node: Node) -> Any:
        self._of[id(t)] = (t, node)          # holding t keeps its id unique
        return t

    def _record(self, prim: Any, args: Sequence[Any]) -> Any:
        """The hook: run `prim(*args)` eagerly and record it; its result, as new Tensors
        (an op returning its input, Identity or StopGradient, must not rename that input)."""
        values = prim._eager_values(args)
        prev = _primitive.set_trace_hook(None)
        try:
            result = prim(*args)
        finally:
            _primitive.set_trace_hook(prev)
        inputs = []
        for i, (a, v) in enumerate(zip(args, values)):
            if i in prim.const_inputs:
                inputs.append(self.add_const(v))
            elif isinstance(a, (tuple, list)):
                inputs.append(self.make_tuple([self.node_of(t, tv) for t, tv in zip(a, v)]))
            else:
                inputs.append(self.node_of(a, v))
        node = self._new("op", _array(result), prim=prim, inputs=inputs, source=user_source())
        if result is None:
            return None
        if not isinstance(result, tuple):
            return self._bind(Tensor._wrap(result._data), node)
        return tuple(self._bind(Tensor._wrap(t._data), self.getitem(node, k, node.source))
                     for k, t in enumerate(result))

    @staticmethod
    def is_recording() -> bool:
        """Whether a tape records the primitive calls made now (a gradient of PYNATIVE_MODE
        is running its function)."""
        return isinstance(getattr(_primitive._trace_hook, "__self__", None), Tape)

    @contextlib.contextmanager
    def recording(self) -> Iterator["Tape"]:
        """Record every primitive call made eagerly inside the block."""
        if _primitive._trace_hook is not None:
            raise GraphError("For 'grad', a gradient function should be called eagerly, not "
                             "while a graph is traced or another gradient is recorded.")
        _primitive.set_trace_hook(self._record)
        try:
            yield self
        finally:
            _primitive.set_trace_hook(None)
