"""Executor: a graph flattened once into a step function of straight-line kernel calls.

Kernels come from `prim.lower(input_nodes, node)`, so a primitive specialises its
kernel to the compiled shapes once. Outputs of `writes_output` ops go into buffers the
executor owns, planned from the graph's lifetimes (`buffers.plan_buffers`): made at
the first run and reused every step after, so a step allocates only the outputs it
returns, which are new arrays nothing in msops keeps. Inputs take the arrays passed to
`run` (through `node.feed`, which maps the full value to this rank's slice, when the
parallel pass set one); a Parameter's own array is read each step: it holds exactly the
slice its node stands for (`_settle`, at construction and whenever some Parameter was
re-laid out since); a value nobody reads any more is dropped at once.

The step is generated Python source (`Executor.source`, one line a node) rather than a
loop over a schedule: a line calls its kernel on local names, about a tenth of the
dispatch cost of unpacking a schedule entry and gathering its arguments from slots
(docs/performance.md, "Graph step").
"""
from __future__ import annotations

import linecache
import threading
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from msops.common import tensor as _tensor
from msops.common.dtype import from_numpy
from msops.common.codegen import MISS, Source, inline_lines
from msops.common.state_epoch import EPOCH
from msops.common.tensor import _TYPE_OF_NP, Tensor
from msops.communication import watchdog
from msops.graph.buffers import (FRESH, BufferPlan, alias_roots, check_parameter_writes,
                                 plan_buffers)
from msops.graph.ir import Graph, Node, TupleGetItem, nest_outputs

__all__ = ["Executor"]

_new_object = object.__new__



def _held_layout(node: Node) -> Any:
    """The layout whose slice a parameter node's Parameter must hold (None: whole)."""
    layout = node.layout
    if layout is None or tuple(node.shape) == tuple(layout.tensor_shape):
        return None
    return layout


def _settle(graph: Graph) -> None:
    """Make every Parameter of `graph` hold what its node stands for (this rank's slice of
    the node's layout, or the whole array): data moves only for a Parameter another
    compile left in another layout (a collective, SPMD like the compile itself)."""
    for node in graph.parameters:
        param, want = node.value, _held_layout(node)
        if not isinstance(param, _tensor.Parameter):
            continue
        if param._layout != want:
            relayout = _tensor._RELAYOUT[0]
            if relayout is None:
                raise RuntimeError(f"For '{graph.name}', the Parameter '{param.name}' should "
                                   f"be laid out as {want}, but msops.parallel is not loaded.")
            relayout(param, want)
        if tuple(param.shape) != tuple(node.shape):
            raise ValueError(f"For '{graph.name}', the Parameter '{param.name}' should hold "
                             f"shape {list(node.shape)}, but got {list(param.shape)}.")


class _StepSource(Source):
    """The lines of one step function and the objects its free names are bound to."""

    def __init__(self) -> None:
        super().__init__()
        self.args: list[str] = []
        self.lines: list[str] = []
        #: on an exception the watchdog is told the step left its call (`leave`)
        self.on_error: str | None = None
        #: the expressions of the step's outputs, in graph-output order
        self.results: list[str] = []

    def function(self, filename: str) -> Callable:
        """Compile the step `step(*arrays) -> list of output arrays`; its lines show in
        tracebacks under `filename`."""
        head = f"def step({', '.join(self.args)}):\n"
        return self.compile(filename, head + self._body("    ", [])
                             + f"    return [{', '.join(self.results)}]\n")

    def call_function(self, filename: str, keys: Sequence[tuple], lock: Any,
                      pre_run: Sequence[Callable], wrap: Sequence[str]) -> Callable:
        """Compile `call(args) -> result`, the whole of a compiled call from the caller's
        argument tuple: `args` must be exactly Tensors of the (shape, dtype) `keys` (else
        `call` returns MISS and runs nothing), then the step runs on their arrays under the
        executor's `lock` (MISS when another thread holds it) after the `pre_run` hooks,
        and `wrap` (lines over the result names) makes the returned value."""
        lines = [f"if len(args) != {len(keys)}:", "    return MISS"]
        self.bind("MISS", MISS)
        self.bind("Tensor", Tensor)
        for k, (name, (shape, dtype)) in enumerate(zip(self.args, keys)):
            lines += [f"t{k} = args[{k}]", f"if type(t{k}) is not Tensor:", "    return MISS",
                      f"{name} = t{k}._data",
                      f"if {name}.shape != {self.bind(f's{k}', shape)} or "
                      f"{name}.dtype is not {self.bind(f'd{k}', dtype)}:", "    return MISS"]
        lines += [f"if not {self.bind('acquire', lock.acquire)}(False):", "    return MISS"]
        hooks = [f"{self.bind(f'h{k}', hook)}()" for k, hook in enumerate(pre_run)]
        release = self.bind("release", lock.release)
        text = ("def call(args):\n" + "".join(f"    {line}\n" for line in lines)
                + "    try:\n" + self._body("        ", hooks)
                + f"    finally:\n        {release}()\n"
                + "".join(f"    {line}\n" for line in wrap))
        return self.compile(filename, text)

    def _body(self, pad: str, before: Sequence[str]) -> str:
        """The step's lines indented by `pad`, after `before`; in a try that tells the
        watchdog the step left its call when something raises (free until it does)."""
        if self.on_error is None:
            return "".join(f"{pad}{line}\n" for line in [*before, *self.lines] or ["pass"])
        return ("".join(f"{pad}{line}\n" for line in [*before, "try:"])
                + "".join(f"{pad}    {line}\n" for line in self.lines)
                + f"{pad}except BaseException:\n{pad}    {self.on_error}\n{pad}    raise\n")

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _leaves(graph: Graph, src: _StepSource) -> dict[int, str]:
    """Names of the inputs (step arguments), parameters (their arrays, read each step: a
    Parameter holds exactly its node's slice) and consts."""
    reads = []                                    # (node, the expression of its value)
    for n in graph.inputs:
        src.args.append(f"v{n.id}" if n.feed is None else f"a{n.id}")
        if n.feed is not None:
            reads.append((n, f"{src.bind(f'f{n.id}', n.feed)}(a{n.id})"))
    for n in graph.parameters:
        reads.append((n, f"{src.bind(f'p{n.id}', n.value)}._data"))
    src.lines += [f"v{n.id} = {expr}" for n, expr in reads]
    names = {n.id: f"v{n.id}" for n in graph.inputs + graph.parameters}
    for n in graph.consts:
        names[n.id] = src.bind(f"c{n.id}", n.value)
    return names


def _generate(graph: Graph, kernels: dict[int, Callable], plan: BufferPlan,
              copied: frozenset, watched: dict[int, tuple]) -> _StepSource:
    """The step of `graph`, its writers writing where `plan` says (FRESH: out=None).

    `copied`: ids of outputs that may share a const's or a Parameter's memory (returned as
    copies); `watched`: node id -> (watchdog Entry, source line), for communication nodes."""
    src = _StepSource()
    if watched:
        src.on_error = f"{src.bind('leave', watchdog.leave)}()"
    names = _leaves(graph, src)
    buffers = [_aligned_bytes(size) for size in plan.nbytes]
    views: dict[tuple, str] = {}
    outputs = {n.id for n in graph.outputs}
    last_read = {i.id: k for k, n in enumerate(graph.nodes) for i in n.inputs}
    made = {n.id for n in graph.inputs if n.feed is not None}
    for k, node in enumerate(graph.nodes):
        args = [names[i.id] for i in node.inputs]
        b = plan.buffer_of.get(node.id, FRESH)
        kernel = kernels[node.id]
        if isinstance(node.prim, TupleGetItem):
            lines = [f"v{node.id} = {args[0]}[{node.inputs[1].value!r}]"]
        elif b != FRESH:
            # one view object per (buffer, shape, dtype): numpy checks an `out` that is an
            # input's very object at once, another view of the same memory slowly
            key = (b, node.shape, node.dtype)
            if key not in views:
                view = buffers[b].view(node.dtype.np_dtype).reshape(node.shape)
                views[key] = src.bind(f"o{node.id}", view)
            names[node.id] = views[key]
            # a kernel's `with_out` (a ufunc itself) does the same without the kernel's frame
            with_out = getattr(kernel, "with_out", None)
            if with_out is not None:
                lines = [f"{src.bind(f'k{node.id}', with_out)}"
                         f"({', '.join([*args, f'out={views[key]}'])})"]
            else:
                lines = inline_lines(kernel, src, args, views[key], None, f"k{node.id}")
        else:
            lines = inline_lines(kernel, src, args, None, f"v{node.id}", f"k{node.id}")
        if node.id not in names:
            names[node.id] = f"v{node.id}"
            made.add(node.id)
        # every statement names its node: a traceback through the step shows which op raised
        note = f"  # {node.op} {_abstract_text(node)}"
        lines = [line if line.endswith(":") else line + note for line in lines]
        watch = watched.get(node.id)
        if watch is None:
            src.lines += lines
        else:                                   # the watchdog times the call (watchdog.py)
            entry, source = watch
            before, after = watchdog.call_lines(src.bind, entry, src.bind("source", source))
            src.lines += [*before, *lines, *after]
        dead = [i for i in node.inputs if last_read[i.id] == k]
        if node.id not in last_read:
            dead.append(node)
        dead_names = sorted({names[n.id] for n in dead if n.id in made and n.id not in outputs})
        if dead_names:                            # drop what nobody reads any more
            src.lines.append(f"del {', '.join(dead_names)}")
    src.results = [names[n.id] + (".copy()" if n.id in copied else "") for n in graph.outputs]
    return src


#: buffers start on a cache line (a 16-byte offset made an 8-layer MLP step ~2% slower)
ALIGNMENT = 64


def _aligned_bytes(nbytes: int) -> np.ndarray:
    raw = np.empty(nbytes + ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    return raw[start:start + nbytes]


def _abstract_text(node: Node) -> str:
    if node.is_tuple:
        return f"{node.shape} {node.dtype}"
    return f"{list(node.shape)} {node.dtype}"


def _lower(node: Node) -> Callable | None:
    """The kernel of one op node (None for TupleGetItem: the step indexes the tuple)."""
    if isinstance(node.prim, TupleGetItem):
        return None
    return node.prim.lower(node.inputs, node)


def _watched(node: Node) -> tuple | None:
    """(watchdog Entry, made once, source line) of a communication node (None for any
    other): the step enters and leaves the watchdog around it, inline
    (`watchdog.call_lines`; no per-step cross-rank check: the program was checked at
    compile)."""
    group = getattr(node.prim, "_group", None)
    if not node.prim.is_communication or group is None or group._comm is None:
        return None
    first = node.inputs[0] if node.inputs else None
    entry = watchdog.Entry(node.prim.name, group.name, group.ranks,
                           getattr(first, "shape", ()), getattr(first, "dtype", ""),
                           not getattr(node.prim, "point_to_point", False))
    return entry, node.source


def _as_tensor(value: Any) -> Tensor | None:
    if value is None:
        return None
    return Tensor._wrap(value if type(value) is np.ndarray else np.asarray(value))


class Executor:
    """Runs a Graph: `run(arrays) -> list of output arrays`; `__call__` takes/returns Tensors.

    `in_abstracts` handed to `prim.lower` are the input Nodes (`.shape`, `.dtype`,
    `.value` for consts, `.layout`), `out_abstract` the node itself. One step runs at a
    time on the executor's buffers; a step begun while another is running (another
    thread) writes every output into new arrays instead.
    """

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.plan = plan_buffers(graph)
        self._kernels = {n.id: _lower(n) for n in graph.nodes}
        _settle(graph)                  # the Parameters hold their slices from now on
        self._held_epoch = EPOCH[0]
        self._watched = {n.id: w for n in graph.nodes if (w := _watched(n)) is not None}
        roots = alias_roots(graph)
        check_parameter_writes(graph, roots)
        # outputs that may share a const's or a Parameter's memory are returned as copies
        kept = {n.id for n in graph.consts + graph.parameters}
        self._copied = frozenset(n.id for n in graph.outputs if roots[n.id] & kept)
        self._out_layouts = [n.layout for n in graph.outputs]
        self._plain_single = len(graph.outputs) == 1 and not graph.output_is_tuple and \
            graph.outputs[0].layout is None
        self._n_inputs = len(graph.inputs)
        self._pre_run = tuple(graph.pre_run)
        self._lock = threading.Lock()
        self._step: Callable = self._first_step     # generated at the first run, with buffers
        self._src: _StepSource | None = None
        self._unshared: Callable | None = None
        self._fast_calls: dict[tuple, Callable] = {}
        self.source: str | None = None

    def _filename(self, tag: str) -> str:
        filename = f"<msops step {self.graph.name} {tag} {id(self):x}>"
        weakref.finalize(self, linecache.cache.pop, filename, None)
        return filename

    def _make_step(self, plan: BufferPlan, tag: str) -> tuple[_StepSource, Callable]:
        src = _generate(self.graph, self._kernels, plan, self._copied, self._watched)
        return src, src.function(self._filename(tag))

    def _first_step(self, *arrays: np.ndarray) -> list:
        self._generate()
        return self._step(*arrays)

    def _generate(self) -> None:
        """The planned step, generated with its buffers (at the first run or fast call)."""
        self._src, self._step = self._make_step(self.plan, "planned")
        self.source = self._src.text

    def fast_call(self, keys: Sequence[tuple]) -> Callable:
        """`call(args) -> result`: the whole of `__call__` for an argument tuple of exactly
        Tensors of the (shape, dtype) `keys`, one per graph input, in one generated function
        (MISS, having run nothing, for any other arguments or while another thread runs a
        step). Valid while nothing changed since the last `run` (the caller checks the state
        epoch): the Parameters' layouts are not re-checked."""
        if self._src is None:
            self._generate()
        keys = tuple(keys)
        call = self._fast_calls.get(keys)
        if call is None:
            if len(keys) != self._n_inputs:
                raise ValueError(f"For '{self.graph.name}', the number of inputs should be "
                                 f"{self._n_inputs}, but got {len(keys)} keys.")
            src = self._src
            call = self._fast_calls[keys] = src.call_function(
                self._filename("call"), keys, self._lock, self._pre_run, self._wrap_lines(src))
        return call

    def _wrap_lines(self, src: _StepSource) -> list[str]:
        """`call`'s last lines: the step's results as `__call__` returns them."""
        if self._plain_single:
            node, result = self.graph.outputs[0], src.results[0]
            fresh = self.plan.buffer_of.get(node.id, FRESH) == FRESH
            if getattr(node.prim, "writes_output", False) and fresh and not node.is_tuple:
                # a new C-contiguous array of the node's dtype (the writers' contract)
                return [f"t = {src.bind('new', _new_object)}({src.bind('Tensor', Tensor)})",
                        f"t._data = {result}", f"t._dtype = {src.bind('r0', node.dtype)}",
                        "return t"]
        return [f"return {src.bind('finish', self._finish)}([{', '.join(src.results)}])"]

    def _unshared_step(self) -> Callable:
        if self._unshared is None:
            fresh = BufferPlan({w: FRESH for w in self.plan.buffer_of}, ())
            self._unshared = self._make_step(fresh, "unshared")[1]
        return self._unshared

    def run(self, arrays: Sequence[np.ndarray]) -> list:
        """Execute one step on one array per graph input; the output arrays."""
        if len(arrays) != self._n_inputs:
            raise ValueError(f"For '{self.graph.name}', the number of inputs should be "
                             f"{self._n_inputs}, but got {len(arrays)}.")
        if self._held_epoch != EPOCH[0]:     # some compile may have re-laid some out since
            _settle(self.graph)
            self._held_epoch = EPOCH[0]
        for hook in self._pre_run:                   # host work of the step (learning rate)
            hook()
        lock = self._lock
        if not lock.acquire(False):                 # the buffers are in use (another thread)
            return self._unshared_step()(*arrays)
        try:
            return self._step(*arrays)
        finally:
            lock.release()

    def __call__(self, arrays: Sequence[np.ndarray]) -> Any:
        """Like `run`, with the outputs as Tensors (a tuple when construct returned one).

        An output the parallel pass laid out carries its `layout` (for `gather_full`).
        """
        return self._finish(self.run(arrays))

    def _finish(self, values: list) -> Any:
        """The step's output arrays as `__call__` returns them."""
        if self._plain_single:
            v = values[0]
            if type(v) is np.ndarray and v.flags.c_contiguous:     # Tensor._wrap, inline
                t = _new_object(Tensor)
                t._data, t._dtype = v, _TYPE_OF_NP.get(v.dtype) or from_numpy(v.dtype)
                return t
            return _as_tensor(v)
        outs = []
        for value, layout in zip(values, self._out_layouts):
            t = _as_tensor(value)
            if layout is not None and t is not None:
                t.layout = layout
            outs.append(t)
        if self.graph.output_tree is not None:
            return nest_outputs(outs, self.graph.output_tree)
        return tuple(outs) if self.graph.output_is_tuple else outs[0]

    def __len__(self) -> int:
        return len(self.graph.nodes)
