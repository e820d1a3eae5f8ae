"""Tracer: run a Cell's `construct` on symbolic tensors and record every primitive call.

Symbolic tensors carry a graph node's shape and dtype but no value, so Python control
flow on static things (shapes, ints, attributes) unrolls while tracing, and anything
that needs a value (`if x:`, `x.asnumpy()`, iterating x) raises a GraphError naming
the user's line. Parameters used by construct become parameter nodes (once each);
captured Tensors become const nodes; tuples of tensors become make_tuple nodes.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common.codegen import MISS
from msops.common.source import user_source
from msops.common.state_epoch import bump
from msops.common.tensor import Parameter, Tensor, refuse_placeholder
from msops.common import tensor as _tensor
from msops.graph.ir import Graph, GraphError, Node, flatten_outputs
from msops.primitives import primitive as _primitive
from msops.primitives.math_ops import Cast

__all__ = ["SymbolicTensor", "trace", "trace_into", "adopt_parameters", "before_each_run",
           "active_graph", "note_cell", "record_cells", "recorded_cells", "substitute_call",
           "end_substitute", "substituted",
           "node_of", "as_traced", "inline", "InputSpec", "trace_nested",
           "is_tracing", "user_source"]

_active: "_Trace | None" = None
#: the Cells called while the compile under way traced (CompileCache watches them)
_called_cells: list | None = None


def is_tracing() -> bool:
    """True while a construct is being traced (Cells then inline their construct)."""
    return _active is not None


class SymbolicTensor(Tensor):
    """A traced value: a graph node seen as a Tensor (`.shape`, `.dtype`, operator sugar)."""

    def __init__(self, node: Node, owner: "_Trace") -> None:   # no data, so no super().__init__
        self._node = node
        self._owner = owner
        self._dtype = node.dtype

    @property
    def shape(self) -> tuple:
        return self._node.shape

    @property
    def ndim(self) -> int:
        return len(self._node.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self._node.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self._dtype.itemsize

    @property
    def _data(self):
        raise _no_value(self, "its value was read")

    def asnumpy(self) -> np.ndarray:
        raise _no_value(self, "asnumpy() was called")

    def item(self):
        raise _no_value(self, "item() was called")

    def __array__(self, dtype=None, copy=None):
        raise _no_value(self, "it was converted to a numpy array")

    def __bool__(self) -> bool:
        raise GraphError(f"data-dependent branch: the truth value of a traced Tensor "
                         f"(shape {list(self.shape)}, {self.dtype}) is not known at compile "
                         f"time, at {user_source()}. Branch on static values (shapes, "
                         f"attributes) or compute both sides and select with an op.")

    def astype(self, dtype: mstype.Type) -> Tensor:
        return Cast()(self, dtype)

    def copy(self) -> "SymbolicTensor":
        return self                          # graph values are immutable

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d Tensor.")
        if self.shape[0] < 0:
            raise GraphError(f"data-dependent length: len() of a traced Tensor of shape "
                             f"{list(self.shape)} is not known at compile time, at "
                             f"{user_source()}.")
        return self.shape[0]

    def __iter__(self):
        raise GraphError(f"data-dependent loop: iterating a traced Tensor of shape "
                         f"{list(self.shape)} is not supported in graph mode, at "
                         f"{user_source()}. Loop over range(x.shape[0]) or use Split.")

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"SymbolicTensor(%{self._node.id}, shape={list(self.shape)}, dtype={self.dtype})"

    __str__ = __repr__


def _no_value(t: SymbolicTensor, what: str) -> GraphError:
    return GraphError(f"data-dependent value: a traced Tensor (shape {list(t.shape)}, "
                      f"{t.dtype}) has no value at compile time, but {what} at "
                      f"{user_source()}.")


class _Trace:
    """State of one trace: the graph under construction and the nodes of captured objects.

    A nested trace (`trace_nested`) has the trace under way as its `parent`: a traced
    Tensor of an enclosing trace that it reads becomes one of its inputs (`captured`)."""

    def __init__(self, graph: Graph, parent: "_Trace | None" = None) -> None:
        self.graph = graph
        self.params: dict[int, Node] = {}
        self.consts: dict[int, tuple[Any, Node]] = {}
        self.parent = parent
        self.captured: dict[int, tuple[Any, Node]] = {}

    def _encloses(self, owner: "_Trace") -> bool:
        t = self.parent
        while t is not None and t is not owner:
            t = t.parent
        return t is not None

    def capture(self, a: "SymbolicTensor") -> Node:
        """The input node standing for `a`, a traced Tensor of an enclosing trace."""
        hit = self.captured.get(id(a))
        if hit is None:
            node = self.graph.add_input(a.shape, a.dtype, f"captured.{len(self.captured)}")
            hit = self.captured[id(a)] = (a, node)
        return hit[1]

    def parameter(self, p: Parameter) -> Node:
        node = self.params.get(id(p))
        if node is None:
            node = self.params[id(p)] = self.graph.add_parameter(p)
        return node

    def const(self, value: Any) -> Node:
        key = id(value)
        hit = self.consts.get(key)
        if hit is not None and hit[0] is value:
            return hit[1]
        node = self.graph.add_const(value)
        self.consts[key] = (value, node)     # holding `value` keeps its id unique
        return node

    def tensor(self, prim: Any, i: int, a: Any, like: Any) -> Node:
        """The node of a tensor-position argument."""
        if isinstance(a, SymbolicTensor):
            if a._owner is not self and self._encloses(a._owner):
                return self.capture(a)
            if a._owner is not self:
                raise GraphError(f"For '{prim.name}', the input {i} is a Tensor traced in "
                                 f"another graph (one kept from an earlier call), at "
                                 f"{user_source()}.")
            return a._node
        if isinstance(a, Parameter):
            return self.parameter(a)
        if isinstance(a, (Tensor, np.ndarray)):
            return self.const(a)
        if isinstance(a, (bool, int, float, complex, np.generic)):
            return self.graph.add_const(_primitive._scalar_like(a, like))
        if isinstance(a, (tuple, list)) and a and \
                all(isinstance(t, (Tensor, np.ndarray)) for t in a):
            return self.graph.make_tuple([self.tensor(prim, i, t, like) for t in a], user_source())
        raise TypeError(f"For '{prim.name}', the input {i} should be a Tensor, "
                        f"but got {type(a).__name__}.")

    def call(self, prim: Any, args: Sequence[Any]) -> Any:
        """The trace hook: record `prim(*args)` and return symbolic outputs."""
        like = _dtype_witness(prim, args)
        nodes = []
        for i, a in enumerate(args):
            if i in prim.const_inputs:
                if isinstance(a, SymbolicTensor):
                    raise GraphError(f"For '{prim.name}', the input {i} must be known at "
                                     f"compile time, but got a traced Tensor, at "
                                     f"{user_source()}.")
                value = a.asnumpy().tolist() if isinstance(a, Tensor) else a
                nodes.append(self.graph.add_const(value))
            else:
                nodes.append(self.tensor(prim, i, a, like))
        node = self.graph.apply(prim, nodes, user_source())
        written = prim.assigns_input
        if written is not None and isinstance(args[written], Parameter):
            self.params[id(args[written])] = node     # later reads see the written value
        if node.dtype is None:
            return None
        if not node.is_tuple:
            return SymbolicTensor(node, self)
        return tuple(SymbolicTensor(self.graph.getitem(node, k, node.source), self)
                     for k in range(len(node.dtype)))


def _dtype_witness(prim: Any, args: Sequence[Any]) -> np.ndarray | None:
    """A 0-d array of the first tensor argument's dtype: Python scalars take that dtype."""
    for i, a in enumerate(args):
        if i in prim.const_inputs:
            continue
        if isinstance(a, Tensor):
            return np.empty((), mstype.dtype_to_nptype(a.dtype))
        if isinstance(a, np.ndarray):
            return a
    return None


def trace(fn: Callable, args: Sequence[Any], name: str = "graph") -> Graph:
    """Trace `fn(*args)`: Tensors (and tuples of them) in `args` become graph inputs.

    Other arguments are passed through as static values. The graph's outputs are the
    Tensors `fn` returns (a tuple's, nested tuples' flattened: `graph.output_tree`).
    """
    if _active is not None:
        raise GraphError(f"'{name}' is compiled while '{_active.graph.name}' is traced; a "
                         f"Cell called inside construct is inlined, not compiled.")
    graph = Graph(name)
    state = _Trace(graph)
    names = _arg_names(fn, len(args))
    sym_args = [_symbolic_arg(graph, state, a, names[i]) for i, a in enumerate(args)]
    _set_outputs(graph, state, _run_traced(state, fn, sym_args, global_view=True))
    return graph


def _run_traced(state: "_Trace", fn: Callable, sym_args: Sequence[Any],
                global_view: bool = False) -> Any:
    """`fn(*sym_args)` with every primitive call recorded into `state`'s graph; with
    `global_view` (a construct traced whole, before partitioning) Parameters holding a
    slice show their whole shape to the Python code that reads it."""
    global _active
    outer, outer_view = _active, _tensor.GLOBAL_VIEW[0]
    _active = state
    _tensor.GLOBAL_VIEW[0] = global_view
    bump()                          # Cells called while tracing inline their construct
    prev = _primitive.set_trace_hook(state.call)
    try:
        return fn(*sym_args)
    finally:
        _primitive.set_trace_hook(prev)
        _active = outer             # None, or the trace a nested one ran inside
        _tensor.GLOBAL_VIEW[0] = outer_view
        bump()


class InputSpec:
    """A graph input to make in `trace_nested`: its shape and dtype."""

    def __init__(self, shape: Sequence[int], dtype: mstype.Type, name: str) -> None:
        self.shape, self.dtype, self.name = tuple(shape), dtype, name


def trace_nested(fn: Callable, args: Sequence[Any], name: str = "graph"
                 ) -> tuple[Graph, dict[int, Any]]:
    """Trace `fn(*args)` into a new graph, also while another trace is under way (then
    inside it: its traced Tensors that fn reads become inputs of the new graph). Each
    `InputSpec` in `args` (in tuples and lists at any depth) becomes a graph input, in
    order; other arguments are passed as they are. Returns the graph and its free values:
    node id -> the object the node stands for (an enclosing trace's Tensor for a captured
    input, the captured Tensor for a const node), to run the graph on them rather than on
    copies (a recording tape then sees the Tensors fn captured)."""
    graph = Graph(name)
    state = _Trace(graph, parent=_active)

    def symbolic(a: Any) -> Any:
        if isinstance(a, InputSpec):
            return SymbolicTensor(graph.add_input(a.shape, a.dtype, a.name), state)
        if isinstance(a, (tuple, list)):
            return type(a)(symbolic(t) for t in a)
        return a
    result = _run_traced(state, fn, [symbolic(a) for a in args], _tensor.GLOBAL_VIEW[0])
    _set_outputs(graph, state, result)
    free = {node.id: value for value, node in state.consts.values()}
    free.update((node.id, value) for value, node in state.captured.values())
    return graph, free


def trace_into(graph: Graph, fn: Callable, args: Sequence[Any], outputs: bool = False) -> Any:
    """Trace `fn(*args)` into the existing `graph`, after its nodes: a Node in `args` (or in a
    tuple there) is passed as a traced Tensor, anything else as it is. Parameters already
    in the graph are read through their nodes (a parallel graph's slices). Returns fn's
    result (traced Tensors); with `outputs` it becomes the graph's outputs, else they are
    left to the caller."""
    if _active is not None:
        raise GraphError(f"'{graph.name}' is extended while '{_active.graph.name}' is traced.")
    state = _Trace(graph)
    for node in graph.parameters:
        state.params.setdefault(id(node.value), node)

    def symbolic(a: Any) -> Any:
        if isinstance(a, Node):
            return SymbolicTensor(a, state)
        if isinstance(a, (tuple, list)):
            return type(a)(symbolic(t) for t in a)
        return a
    result = _run_traced(state, fn, [symbolic(a) for a in args])
    if outputs:
        _set_outputs(graph, state, result)
    return result


def inline(graph: Graph, fn: Callable, nodes: Sequence[Node]) -> list[Node]:
    """`fn` (a Python function of Tensors) traced into `graph` on `nodes` (inside the trace
    under way when it is this graph's, else after the graph's nodes): one node per Tensor
    it returns (a backward hook's result)."""
    def run(*ts: Any) -> list[Node]:
        result = fn(*ts)
        return [node_of(t) for t in (result if isinstance(result, (tuple, list)) else (result,))]
    if _active is not None and _active.graph is graph:
        return run(*[as_traced(n) for n in nodes])
    return trace_into(graph, run, list(nodes))


def adopt_parameters() -> None:
    """While tracing: Parameters added to the graph beside the tracer (an optimizer's state
    bound to its parameters' slices) are read through those nodes from now on."""
    if _active is None:
        raise GraphError("adopt_parameters() is for code being traced.")
    for node in _active.graph.parameters:
        _active.params.setdefault(id(node.value), node)


def before_each_run(hook: Callable[[], Any]) -> None:
    """While tracing: have the compiled graph call `hook()` on the host before each run."""
    if _active is None:
        raise GraphError("before_each_run() is for code being traced.")
    if hook not in _active.graph.pre_run:
        _active.graph.pre_run.append(hook)


#: calls the trace under way answers without tracing them: (fn, its argument nodes, a
#: function making the result); a parallel step's network call before its gradient
_substitutes: list[tuple] = []


def substitute_call(fn: Any, arg_nodes: tuple, result: Callable[[], Any]) -> None:
    """While the current trace runs, `fn(*args)` on exactly the traced values of
    `arg_nodes` returns `result()` (nodes the graph already has) instead of being traced."""
    _substitutes.append((fn, arg_nodes, result))


def end_substitute() -> None:
    _substitutes.pop()


def substituted(fn: Any, args: Sequence[Any]) -> Any:
    """The result `substitute_call` registered for `fn` called on `args`, else MISS."""
    for f, nodes, result in reversed(_substitutes):
        if f is fn and len(args) == len(nodes) and all(
                isinstance(a, SymbolicTensor) and a._node is n for a, n in zip(args, nodes)):
            return result()
    return MISS


def note_cell(cell: Any) -> None:
    """Record that `cell` was called (inlined) in the trace of the compile under way."""
    if _called_cells is not None:
        _called_cells.append(cell)


def record_cells() -> list | None:
    """Start recording the Cells the next traces call; returns the previous record, to
    give back to `recorded_cells`."""
    global _called_cells
    prev, _called_cells = _called_cells, []
    return prev


def recorded_cells(prev: list | None) -> list:
    """The Cells called since `record_cells` (in call order); restores `prev`."""
    global _called_cells
    called, _called_cells = _called_cells, prev
    return called or []


def active_graph() -> Graph | None:
    """The graph being traced, or None."""
    return None if _active is None else _active.graph


def node_of(value: Any) -> Node:
    """While tracing: the node of a traced Tensor, a Parameter or a captured constant."""
    if _active is None:
        raise GraphError("node_of() is for code being traced.")
    if isinstance(value, SymbolicTensor):
        return _active.tensor(_NamedCall("grad"), 0, value, None)
    if isinstance(value, Parameter):
        return _active.parameter(value)
    return _active.const(value)


def as_traced(node: Node) -> SymbolicTensor:
    """While tracing: a node of the graph being traced, as a traced Tensor."""
    if _active is None:
        raise GraphError("as_traced() is for code being traced.")
    return SymbolicTensor(node, _active)


class _NamedCall:
    """Stands for a primitive in `_Trace.tensor`'s error message."""

    def __init__(self, name: str) -> None:
        self.name = name


def _arg_names(fn: Callable, n: int) -> list[str]:
    """Names of fn's first n positional parameters (`arg<i>` past them or for *args)."""
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"arg{i}" for i in range(n)]


def _symbolic_arg(graph: Graph, state: _Trace, a: Any, name: str) -> Any:
    if isinstance(a, Tensor):
        refuse_placeholder(a, graph.name, f"input '{name}'")
    if isinstance(a, (Tensor, np.ndarray)):
        dtype = a.dtype if isinstance(a, Tensor) else mstype.from_numpy(a.dtype)
        return SymbolicTensor(graph.add_input(a.shape, dtype, name), state)
    if isinstance(a, (tuple, list)) and any(isinstance(t, (Tensor, np.ndarray)) for t in a):
        return type(a)(_symbolic_arg(graph, state, t, f"{name}.{k}") for k, t in enumerate(a))
    return a


def _set_outputs(graph: Graph, state: _Trace, result: Any) -> None:
    graph.output_is_tuple = isinstance(result, (tuple, list))
    items, graph.output_tree = flatten_outputs(result)   # nested: rebuilt on return
    outs = []
    for k, r in enumerate(items):
        if isinstance(r, SymbolicTensor):
            # a value of an enclosing trace returned as it is: captured as an input
            outs.append(state.capture(r) if r._owner is not state and state._encloses(r._owner)
                        else r._node)
        elif isinstance(r, Parameter):
            outs.append(state.parameter(r))
        elif isinstance(r, (Tensor, np.ndarray)):
            outs.append(state.const(r))
        else:
            what = f"output {k}" if graph.output_is_tuple else "output"
            raise GraphError(f"For '{graph.name}', the construct {what} should be a Tensor "
                             f"(or a tuple of Tensors and such tuples), but got "
                             f"{type(r).__name__}.")
    graph.outputs = outs
