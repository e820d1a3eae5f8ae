"""The compile pipeline: trace -> dead-node elimination -> SPMD check -> partition pass ->
this rank's pipeline stage -> communication fusion -> executor, cached per call signature.

It sits above both graph/ (IR, tracer, executor) and parallel/ (the partition pass),
which therefore never import each other upward. A Cell keeps one `CompileCache`; its
key is the call signature (shapes and dtypes of the Tensor arguments, the values of
the others), the context mode, the train flags of the Cell tree and a snapshot of the
auto-parallel context, so a second call with the same signature reuses the executor
and a new shape (or `set_train`) retraces.
"""
from __future__ import annotations

import functools
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from msops import context
from msops.common.codegen import MISS, miss
from msops.common.state_epoch import EPOCH
from msops.common.tensor import Tensor
from msops.graph.dead_nodes import eliminate_dead_nodes
from msops.graph.dump import save_graph
from msops.graph.executor import Executor
from msops.graph.fusion import fuse_communication
from msops.graph.ir import Graph
from msops.graph import tracer
from msops.graph.tracer import trace
from msops.parallel.context import (comm_fusion_bytes, global_input_shape, is_parallel,
                                    parallel_snapshot)
from msops.parallel.partition import apply_parallel
from msops.parallel.stage_split import split_stages
from msops.parallel.spmd_check import check_same_program
from msops.parallel.strategy_ckpt import after_compile, apply_strategy_file

__all__ = ["compile_graph", "compile_function", "partition", "CompileCache", "signature",
           "tensor_arrays", "trace_inputs", "DeferredGradient"]


def compile_graph(cell: Any, args: Sequence[Any]) -> tuple[Graph, Executor]:
    """Trace `cell.construct(*args)` and build this rank's executor for it (a cell with a
    `to_float` type: its construct run in that type, `_run_construct`)."""
    fn = cell.construct
    if getattr(cell, "_mixed_type", None) is not None:
        def mixed(*a: Any) -> Any:
            return cell._run_construct(*a)
        fn = functools.update_wrapper(mixed, cell.construct)   # the inputs keep their names
    return compile_function(fn, args, type(cell).__name__, cell)


def compile_function(fn: Callable, args: Sequence[Any], name: str,
                     cell: Any = None) -> tuple[Graph, Executor]:
    """Trace `fn(*args)` (a construct, or a function under `ms.jit`) and build this rank's
    executor for it."""
    try:
        graph = trace(fn, trace_inputs(args), name)
    except DeferredGradient as deferred:   # a parallel training step: compiled around it
        graph = deferred.compile_step(fn, args, name)
    else:
        graph = split_stages(partition(eliminate_dead_nodes(graph), name, cell))
        fuse_communication(graph, comm_fusion_bytes())
    save_graph(graph)                   # set_context(save_graphs=True): to save_graphs_path
    return graph, Executor(graph)


class DeferredGradient(NotImplementedError):
    """Raised by a gradient function called while a step is traced in a parallel context.

    Its forward must be partitioned before it is differentiated, so the step cannot be
    traced in one pass: `compile_step(fn, args, name)` (msops.autodiff) builds the
    gradient function's partitioned forward and local backward and traces the rest of
    `fn` after it, as TrainOneStepCell's step. Uncaught (a gradient of such a step), it
    reads as the refusal in its message."""

    def __init__(self, message: str, compile_step: Callable[[Callable, Sequence[Any], str],
                                                            Graph]) -> None:
        super().__init__(message)
        self.compile_step = compile_step


def partition(graph: Graph, name: str, cell: Any = None) -> Graph:
    """This rank's graph: in a parallel context, the SPMD check, the strategy file's
    strategies (for `cell`'s ops), the partition pass, and the strategies recorded for
    `strategy_ckpt_save_file`; the graph itself otherwise."""
    if not is_parallel():
        return apply_parallel(graph)
    check_same_program(graph, f"{name}.compile")
    if cell is not None:
        apply_strategy_file(cell)
    graph = apply_parallel(graph)
    if cell is not None:
        after_compile(cell)
    return graph


def trace_inputs(args: Sequence[Any]) -> list:
    """The arguments to trace with: with full_batch=False each rank feeds its batch slice,
    so a Tensor is replaced by a zero-stride stand-in of the global shape (the tracer
    reads only shape and dtype). Fed inputs are counted in graph-input order (a tuple's
    Tensors one each) for a per-input dataset_strategy."""
    out, index = [], 0
    for a in args:
        if isinstance(a, Tensor):
            shape = global_input_shape(a.shape, index)
            out.append(a if shape == tuple(a.shape) else
                       np.broadcast_to(np.zeros((), a.asnumpy().dtype), shape))
            index += 1
        else:
            out.append(a)
            index += len(tensor_arrays([a], [])) if isinstance(a, (np.ndarray, tuple, list)) \
                else 0
    return out


def _arg_key(a: Any) -> Any:
    if type(a) is Tensor:
        v = a._data
        return (v.shape, v.dtype)
    if isinstance(a, Tensor):
        return (a.shape, a.dtype)
    if isinstance(a, np.ndarray):
        return (a.shape, a.dtype, "ndarray")
    if isinstance(a, (tuple, list)):
        return (type(a),) + tuple(_arg_key(v) for v in a)
    try:
        hash(a)
    except TypeError:
        return (type(a), repr(a))
    return (type(a), a)


def tensor_arrays(args: Sequence[Any], out: list) -> list:
    """The arrays of the Tensor arguments, flattened in graph-input order."""
    for a in args:
        if isinstance(a, Tensor):
            out.append(a._data)
        elif isinstance(a, np.ndarray):
            out.append(a)
        elif isinstance(a, (tuple, list)):
            tensor_arrays(a, out)
    return out


def signature(args: Sequence[Any], tree_key: tuple) -> tuple:
    """The compile-cache key of one call."""
    return (tuple([_arg_key(a) for a in args]), context.get_context("mode"), tree_key,
            parallel_snapshot())


def _outside(root: Any, called: Sequence[Any]) -> list:
    """(weakref, tree key) of each Cell of `called` outside `root`'s tree and the trees
    already listed: whose changes the entry's key would not see."""
    covered = {id(c) for _, c in root.cells_and_names()} if hasattr(root, "cells_and_names") \
        else set()
    out = []
    for c in called:
        if id(c) not in covered:
            out.append((weakref.ref(c), c._tree_key()))
            covered.update(id(s) for _, s in c.cells_and_names())
    return out


def _unchanged(watched: Sequence) -> bool:
    """Whether each watched (weakref, tree key) Cell is alive with the same tree."""
    for ref, traced in watched:
        c = ref()
        if c is None:
            return False
        now = c._tree_key()
        if now is not traced and now != traced:
            return False
    return True


class CompileCache:
    """Compiled (graph, executor) pairs of one Cell, by call signature; `traces` counts misses.

    `compiler(cell, args) -> (graph, executor)` builds an entry: `compile_graph`, or the
    forward + backward graph of a gradient function (msops.autodiff)."""

    def __init__(self, compiler: Callable[[Any, Sequence[Any]], tuple] | None = None) -> None:
        self._compile = compile_graph if compiler is None else compiler
        self._entries: dict[tuple, tuple[Graph, Executor]] = {}
        #: per entry, (weak reference, tree key when traced) of the Cells it called that
        #: are not in the compiled Cell's own tree (whose key is part of the entry's key)
        self._watched: dict[tuple, list] = {}
        self.traces = 0
        self._last_key: tuple | None = None   # the last call's whole key
        self._last_watched: Sequence = ()      # and its entry's watched Cells
        self._last_executor: Executor | None = None
        #: the last call again, as one generated function (Executor.fast_call), valid while
        #: the state epoch is `epoch` (-1: none): `fast(args)` runs it or returns MISS
        self.fast: Callable = miss
        self.epoch = -1

    def get(self, cell: Any, args: Sequence[Any], tree_key: tuple) -> tuple[Graph, Executor]:
        return self._entry(cell, args, signature(args, tree_key))

    def _entry(self, cell: Any, args: Sequence[Any], key: tuple) -> tuple[Graph, Executor]:
        hit = self._entries.get(key)
        if hit is None or not _unchanged(self._watched.get(key, ())):
            prev = tracer.record_cells()
            try:
                hit = self._entries[key] = self._compile(cell, args)
            finally:
                called = tracer.recorded_cells(prev)
            self._watched[key] = _outside(cell, called)
            self.traces += 1
        return hit

    def run(self, cell: Any, args: Sequence[Any], tree_key: tuple) -> Any:
        """Compile (once per signature) and execute `cell` on `args`.

        A call of Tensors like the last one, while nothing changed since (the state epoch),
        runs as one generated function (`fast`: argument checks, the step, the result).
        Other calls build their key; one equal to the last call's (other arguments, the
        optimizer's) reuses its executor before the key is hashed."""
        if self.epoch == EPOCH[0]:
            out = self.fast(args)
            if out is not MISS:
                return out
        key = signature(args, tree_key)
        executor = self._last_executor
        if key != self._last_key or not _unchanged(self._last_watched):
            executor = self._entry(cell, args, key)[1]
            self._last_key, self._last_executor = key, executor
            self._last_watched = self._watched.get(key, ())
        out = executor(tensor_arrays(args, []))
        if all(type(a) is Tensor for a in args):
            self.fast, self.epoch = executor.fast_call(key[0]), EPOCH[0]
        return out

    def last_graph(self) -> Graph | None:
        """The graph the last call ran (None before any call): for inspecting a compiled
        step's parameters and collectives."""
        executor = self._last_executor
        return None if executor is None else executor.graph

    def clear(self) -> None:
        self._entries.clear()
        self._watched.clear()
        self._last_watched = ()
        self._last_key, self._last_executor = None, None
        self.fast, self.epoch = miss, -1

    def __len__(self) -> int:
        return len(self._entries)
