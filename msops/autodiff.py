"""The gradient API, MindSpore's spellings: `grad`, `value_and_grad`, `GradOperation`.

In GRAPH_MODE a gradient function traces `fn` (a Cell or a plain function), appends the
backward (`graph.autodiff`) and runs forward and backward as one compiled graph,
compiled once per call signature (the pipeline's CompileCache). In PYNATIVE_MODE `fn`
runs eagerly on a tape (`graph.tape`) and the same pass and backward rules run on the
tape, each primitive at once: the same numbers, and fn's Python may branch on values.
In a parallel context (GRAPH_MODE) the traced forward is partitioned first and the
rank-local graph differentiated (`parallel.backward`): every gradient is this rank's
slice of the serial gradient, laid out as its Parameter or input. A gradient function
called inside a parallel step (`ms.jit`, a Cell's construct) defers that step's compile
to `_compile_parallel_step`: its own graph first, the rest of the step traced after it,
as TrainOneStepCell compiles. PYNATIVE_MODE in data_parallel differentiates each rank's
local loss (the gradients are reduced by nn.DistributedGradReducer, as in MindSpore).
"""
from __future__ import annotations

import itertools
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from msops import context
from msops.common.tensor import Parameter, Tensor, contiguous
from msops.graph.autodiff import differentiable, differentiate
from msops.graph.dead_nodes import eliminate_dead_nodes
from msops.graph.dump import save_graph
from msops.graph.executor import Executor
from msops.graph.fusion import fuse_communication
from msops.graph.interpret import interpret
from msops.graph.ir import Graph, Node, flatten_outputs, nest_outputs
from msops.graph.tape import Tape
from msops.ops.tensor_hooks import apply_leaf_hooks, leaf_hooks_refused
from msops.graph import tracer
from msops.graph.tracer import trace, trace_into
from msops.parallel.local_tail import complete_local_tail
from msops.parallel.backward import output_seed, reduce_leaf_gradients, sens_seed
from msops.parallel.context import (ParallelMode, comm_fusion_bytes,
                                    get_auto_parallel_context, grad_bucket_bytes,
                                    is_parallel)
from msops.parallel.slices import local_slice
from msops.parallel.stage_split import split_stages
from msops.parallel.stages import layout_rank
from msops.pipeline import (CompileCache, DeferredGradient, partition, tensor_arrays,
                            trace_inputs)

__all__ = ["grad", "value_and_grad", "GradOperation", "finish_graph"]


def _check_positions(api: str, grad_position: Any) -> tuple[int, ...] | None:
    if grad_position is None:
        return None
    items = grad_position if isinstance(grad_position, tuple) else (grad_position,)
    if not items or any(not isinstance(p, int) or isinstance(p, bool) or p < 0 for p in items):
        raise TypeError(f"For '{api}', the 'grad_position' should be a non-negative int, a "
                        f"non-empty tuple of them, or None, but got {grad_position!r}.")
    return items


def _check_weights(api: str, weights: Any) -> tuple[Parameter, ...] | None:
    if weights is None:
        return None
    items = (weights,) if isinstance(weights, Parameter) else weights
    if not isinstance(items, (list, tuple)) or \
            any(not isinstance(w, Parameter) for w in items):
        raise TypeError(f"For '{api}', the 'weights' should be a Parameter, or a list or "
                        f"ParameterTuple of Parameters, but got {weights!r}.")
    return tuple(items)


def _check_pynative_parallel(api: str) -> None:
    """PYNATIVE_MODE differentiates each rank's own computation: in data_parallel that is
    the rank's local loss (its gradients are reduced by nn.DistributedGradReducer, or by
    TrainOneStepCell, as in MindSpore); a sharded network needs the partition pass, which
    runs on a compiled graph only (MindSpore, too, requires GRAPH_MODE or jit for it)."""
    mode = get_auto_parallel_context("parallel_mode")
    if is_parallel() and mode != ParallelMode.DATA_PARALLEL:
        raise RuntimeError(
            f"For '{api}', the parallel mode '{mode}' (set_auto_parallel_context("
            f"parallel_mode=...)) should run in GRAPH_MODE (set_context(mode=ms.GRAPH_MODE)) "
            f"or inside ms.jit, but got PYNATIVE_MODE: PYNATIVE_MODE supports "
            f"'data_parallel' and 'stand_alone' only.")


#: while a parallel step is traced the second time: (the gradient function, its graph's
#: outputs and gradients, its output count, whether its output is a tuple, called yet)
_replay: list[tuple] = []


class _Slot:
    """The k-th Tensor input of a step, in graph-input order."""

    def __init__(self, k: int) -> None:
        self.k = k


def _step_input_indices(api: str, a: Any, graph: Graph, order: list[int]) -> Any:
    """A gradient function's argument in a parallel step's first trace, its traced Tensors
    as `_Slot`s of the step's inputs (their indices appended to `order`)."""
    if isinstance(a, tracer.SymbolicTensor):
        node = a._node
        k = next((k for k, n in enumerate(graph.inputs) if n is node), None)
        if k is None:
            raise NotImplementedError(f"For '{api}', a parallel step's gradient function should "
                                      f"take the step's own Tensor inputs, but got a computed "
                                      f"Tensor, at {tracer.user_source()}.")
        order.append(k)
        return _Slot(k)
    if isinstance(a, Tensor):
        raise NotImplementedError(f"For '{api}', a parallel step's gradient function should "
                                  f"take the step's own Tensor inputs, but got a "
                                  f"{'Parameter' if isinstance(a, Parameter) else 'captured'} "
                                  f"Tensor, at {tracer.user_source()}.")
    if isinstance(a, (tuple, list)):
        return type(a)(_step_input_indices(api, t, graph, order) for t in a)
    return a


def _holds_symbolic(a: Any) -> bool:
    if isinstance(a, (tuple, list)):
        return any(_holds_symbolic(t) for t in a)
    return isinstance(a, tracer.SymbolicTensor)


def _local_sens(sens: Tensor, out: Node) -> np.ndarray:
    """This rank's part of a constant sens of `out`: its slice when given whole and `out`
    is split, else the sens itself."""
    data = sens._data
    lay = out.layout
    if lay is not None and tuple(data.shape) == tuple(lay.tensor_shape) and \
            tuple(data.shape) != tuple(out.shape):
        return contiguous(local_slice(data, lay, layout_rank()))
    return data


def _is_input(a: Any) -> bool:
    return isinstance(a, (Tensor, np.ndarray))


def _flat_tensors(args: Sequence[Any], out: list) -> list:
    """The step's Tensor arguments in graph-input order (as the tracer makes its inputs)."""
    for a in args:
        if _is_input(a):
            out.append(a)
        elif isinstance(a, (tuple, list)) and any(_is_input(t) for t in a):
            _flat_tensors(a, out)
    return out


def _marked(args: Any) -> Any:
    """`args` with each Tensor that becomes a graph input replaced by a `_Slot`."""
    counter = itertools.count()

    def mark(a: Any) -> Any:
        if _is_input(a):
            return _Slot(next(counter))
        if isinstance(a, (tuple, list)) and any(_is_input(t) for t in a):
            return type(a)(mark(t) for t in a)
        return a
    return [mark(a) for a in args]


def _substitute(a: Any, values: Sequence[Any]) -> Any:
    """`a` with each `_Slot` replaced by values[k]."""
    if isinstance(a, _Slot):
        return values[a.k]
    if isinstance(a, (tuple, list)):
        return type(a)(_substitute(t, values) for t in a)
    return a


def _tensors(args: Sequence[Any], out: list) -> list:
    """The Tensor arguments (arrays made Tensors), flattened in graph-input order."""
    for a in args:
        if isinstance(a, Tensor):
            out.append(a)
        elif isinstance(a, np.ndarray):
            out.append(Tensor(a))
        elif isinstance(a, (tuple, list)):
            _tensors(a, out)
    return out


def _name(fn: Callable) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


class _GradFunction:
    """`fn`'s gradient function: call it like `fn` (plus the sens when `sens_param`).

    positions: the positional arguments differentiated (None: none); weights: the
    Parameters differentiated (None: none); the flags shape what a call returns.
    """

    def __init__(self, api: str, fn: Callable, positions: tuple | None, weights: tuple | None,
                 *, has_aux: bool = False, sens_param: bool = False, with_value: bool = False,
                 single_position: bool = False, single_weight: bool = False) -> None:
        if not callable(fn):
            raise TypeError(f"For '{api}', the 'fn' should be a Cell or a function, but got "
                            f"{type(fn).__name__}.")
        if positions is None and weights is None:
            raise ValueError(f"For '{api}', 'grad_position' and 'weights' should not both be "
                             f"None: there is nothing to differentiate.")
        self.api, self.fn = api, fn
        self.positions, self.weights = positions, weights
        self.has_aux, self.sens_param, self.with_value = has_aux, sens_param, with_value
        self.single_position, self.single_weight = single_position, single_weight
        self._cache = CompileCache(self._compile)
        self._out_is_tuple: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        # a graph's nesting of fn's outputs (None: as they are)
        self._out_tree: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        # a graph's outputs' layouts: a sens is fed as this rank's slice of each
        self._sens_layouts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    # -- the backward, on a Graph (GRAPH_MODE) or a Tape (PYNATIVE_MODE) --------------------
    def _backward(self, builder: Any, name: str, args: Sequence[Any], outputs: list,
                  out_is_tuple: bool, by_position: dict, weight_node: Callable,
                  sens_node: Callable, seed_node: Callable | None = None,
                  leaf_grads: Callable | None = None) -> list:
        """Seed `outputs` (ones, `seed_node(output)`, or the sens), differentiate, and
        return the gradient nodes: one per grad position, then one per weight (passed
        through `leaf_grads(leaves, grads)` when given)."""
        wrt = []
        for p in self.positions or ():
            if p not in by_position:
                got = type(args[p]).__name__ if p < len(args) else f"only {len(args)} arguments"
                raise ValueError(f"For '{self.api}', the 'grad_position' {p} should name a "
                                 f"Tensor argument of '{name}', but got {got}.")
            wrt.append(by_position[p])
        wrt += [weight_node(w) for w in self.weights or ()]
        differentiated = outputs[:1] if self.has_aux else outputs
        for k, o in enumerate(differentiated):
            if not differentiable(o.dtype, ("float",)):      # a real loss
                raise TypeError(f"For '{self.api}', the output {k} of '{name}' should be a "
                                f"float Tensor to differentiate, but got {o.dtype}.")
        if self.sens_param:
            seeds = list(zip(outputs, self._sens(name, args[-1], outputs, out_is_tuple,
                                                 sens_node)))
        else:
            seeds = [(o, seed_node(o) if seed_node else
                      builder.add_const(np.ones(o.shape, o.dtype.np_dtype)))
                     for o in differentiated]
        grads = differentiate(builder, seeds, wrt)
        return grads if leaf_grads is None else leaf_grads(wrt, grads)

    def _sens(self, name: str, sens: Any, outputs: list, out_is_tuple: bool,
              sens_node: Callable) -> list:
        items = list(sens) if isinstance(sens, (tuple, list)) else [sens]
        want = len(outputs) if out_is_tuple else 1
        if len(items) != want or not all(isinstance(s, Tensor) for s in items):
            raise ValueError(f"For '{self.api}', the sens (the last argument) should match "
                             f"the outputs of '{name}': {want} Tensor(s), but got {sens!r}.")
        nodes = []
        for k, (o, s) in enumerate(zip(outputs, items)):
            # a partitioned output: the sens of the whole output, or this rank's slice of it
            shapes = [tuple(o.shape)] if o.layout is None else \
                [tuple(o.layout.tensor_shape), tuple(o.shape)]
            if tuple(s.shape) not in shapes or s.dtype != o.dtype:
                raise ValueError(f"For '{self.api}', the sens {k} should have the shape and "
                                 f"dtype of output {k}: "
                                 f"{' or '.join(str(list(x)) for x in shapes)} {o.dtype}, but "
                                 f"got {list(s.shape)} {s.dtype}.")
            nodes.append(sens_node(k, o, s))
        return nodes

    def _compile(self, fn: Callable, args: Sequence[Any]) -> tuple[Graph, Executor]:
        """Forward + backward as one graph: the traced outputs, then the gradients."""
        graph, _, out_is_tuple = self.build_graph(args)
        graph = eliminate_dead_nodes(graph)
        save_graph(graph)               # set_context(save_graphs=True): to save_graphs_path
        self._out_is_tuple[graph] = out_is_tuple
        return graph, Executor(graph)

    def build_graph(self, args: Sequence[Any], const_sens: bool = False,
                    finish: bool = True) -> tuple[Graph, int, bool]:
        """(graph, n, out_is_tuple): fn traced on `args` (partitioned in a parallel context)
        with its backward; the graph's outputs are fn's n outputs, then the gradients.
        `const_sens`: the sens (the last of `args`) is a constant of the graph, not an
        input (a parallel step's, made in its construct). `finish`: this rank's pipeline
        stage taken and communication fused (else left to the caller, which traces more
        of the step after it)."""
        fn = self.fn
        fn_args = args[:-1] if self.sens_param else args
        parallel = is_parallel()
        graph = trace(fn, trace_inputs(fn_args) if parallel else fn_args, _name(fn))
        if parallel:        # partition the forward, then differentiate the local graph
            net = getattr(fn, "__self__", fn)  # a Cell (or its bound construct) has names
            graph = partition(eliminate_dead_nodes(graph), graph.name, net)
        outputs, by_position, inputs = list(graph.outputs), {}, iter(graph.inputs)
        for k, a in enumerate(fn_args):          # graph inputs, in the tracer's order
            if isinstance(a, (Tensor, np.ndarray)):
                by_position[k] = next(inputs)
            elif isinstance(a, (tuple, list)):
                for t in a:
                    if isinstance(t, (Tensor, np.ndarray)):
                        next(inputs)
        params = {id(n.value): n for n in graph.parameters}
        grads = self._backward(
            graph, graph.name, args, outputs, graph.output_is_tuple, by_position,
            lambda w: params.get(id(w)) or graph.add_parameter(w),    # unused: zeros
            (lambda k, o, s: sens_seed(graph, o, graph.add_const(_local_sens(s, o))))
            if const_sens else
            (lambda k, o, s: sens_seed(graph, o, graph.add_input(o.shape, o.dtype,
                                                                 f"sens.{k}")))
            if parallel else lambda k, o, s: graph.add_input(o.shape, o.dtype, f"sens.{k}"),
            (lambda o: output_seed(graph, o)) if parallel else None,
            (lambda leaves, gs: reduce_leaf_gradients(graph, leaves, gs, grad_bucket_bytes()))
            if parallel else None)
        out_is_tuple = graph.output_is_tuple
        # fn's outputs and the gradients, flat: `_results` arranges them (fn's nesting too)
        self._out_tree[graph], graph.output_tree = graph.output_tree, None
        graph.outputs, graph.output_is_tuple = outputs + grads, True
        self._sens_layouts[graph] = [o.layout for o in outputs]
        if finish:
            finish_graph(graph)
        return graph, len(outputs), out_is_tuple

    def _run_eagerly(self, args: Sequence[Any]) -> Any:
        """PYNATIVE_MODE: run fn eagerly on a tape, then the same pass and rules on it."""
        fn_args = args[:-1] if self.sens_param else args
        tape, by_position = Tape(), {}
        call_args = list(fn_args)
        for k, a in enumerate(fn_args):
            if isinstance(a, (Tensor, np.ndarray)):
                t = a if isinstance(a, Tensor) else Tensor(a)
                call_args[k] = tape.input(t)
                by_position[k] = tape.node_of(call_args[k])
        with tape.recording():
            for k in by_position:          # hooks registered on an input before the call
                call_args[k] = apply_leaf_hooks(fn_args[k], call_args[k])
            result = self.fn(*call_args)
        out_is_tuple = isinstance(result, (tuple, list))
        items, tree = flatten_outputs(result)
        outputs = [tape.node_of(r) for r in items]
        grads = self._backward(tape, _name(self.fn), args, outputs, out_is_tuple, by_position,
                               tape.parameter, lambda k, o, s: tape.add_const(s._data))
        values = [Tensor._wrap(n.value) for n in outputs + grads]
        return self._results(values, len(outputs), out_is_tuple, tree)

    def _run_recorded(self, args: Sequence[Any]) -> Any:
        """PYNATIVE_MODE inside another gradient's recording (a higher-order gradient): the
        forward and backward built once as a graph, then run op by op through the
        primitives, so the outer tape records them and can differentiate them again."""
        flags = self.fn._tree_key() if hasattr(self.fn, "_tree_key") else ()
        graph = self._cache.get(self.fn, args, flags)[0]
        values = interpret(graph, _tensors(args, []))
        return self._results(values, len(graph.outputs) - self._grad_count(),
                             self._out_is_tuple[graph], self._out_tree.get(graph))

    def _run_inline(self, args: Sequence[Any]) -> Any:
        """Called inside a graph being traced (`ms.jit`, a construct): fn's forward and its
        backward are traced into that graph, so the caller's step is one graph."""
        if is_parallel():
            return self._in_parallel_step(args)
        graph = tracer.active_graph()
        fn_args = args[:-1] if self.sens_param else args
        by_position = {k: tracer.node_of(a) for k, a in enumerate(fn_args)
                       if isinstance(a, Tensor) and not isinstance(a, Parameter)}
        result = self.fn(*fn_args)
        out_is_tuple = isinstance(result, (tuple, list))
        items, tree = flatten_outputs(result)
        outputs = [tracer.node_of(r) for r in items]
        grads = self._backward(graph, _name(self.fn), args, outputs, out_is_tuple, by_position,
                               tracer.node_of, lambda k, o, s: tracer.node_of(s))
        values = [tracer.as_traced(n) for n in outputs + grads]
        return self._results(values, len(outputs), out_is_tuple, tree)

    # -- inside a parallel step (ms.jit, a Cell's construct) ----------------------------
    def _in_parallel_step(self, args: Sequence[Any]) -> Any:
        """A parallel step is compiled as TrainOneStepCell's: this function's partitioned
        forward and local backward first (`build_graph`), then the rest of the step traced
        after it. The first trace stops here (DeferredGradient, caught by the pipeline);
        while the rest is traced this call returns the built graph's outputs and gradients."""
        mode = get_auto_parallel_context("parallel_mode")
        where = f"a parallel step (ms.jit or a Cell's construct, parallel mode '{mode}')"
        graph = tracer.active_graph()
        if _replay:                                     # the second trace
            owner, nodes, n_outputs, out_is_tuple, used, start = _replay[-1]
            if used or owner._signature() != self._signature():
                raise NotImplementedError(
                    f"For '{self.api}', {where} should call one gradient function, once, but "
                    f"got another call at {tracer.user_source()}.")
            if len(graph.nodes) != start:
                first = graph.nodes[start]
                raise NotImplementedError(
                    f"For '{self.api}', in {where} the gradient function should be called "
                    f"first, on the step's own Tensor inputs (its forward is partitioned before "
                    f"the rest of the step is traced; a call of the same network on the same "
                    f"inputs before it is allowed), but got '{first.op}' before it, at "
                    f"{first.source}.")
            _replay[-1] = (owner, nodes, n_outputs, out_is_tuple, True, start)
            return self._results([tracer.as_traced(x) for x in nodes], n_outputs, out_is_tuple)
        fn_args = args[:-1] if self.sens_param else args
        if self.sens_param and _holds_symbolic(args[-1]):
            raise NotImplementedError(
                f"For '{self.api}', in {where} the sens should be a constant Tensor (as "
                f"ops.fill(loss.dtype, loss.shape, value) makes), but got one computed in the "
                f"step, at {tracer.user_source()}.")
        order: list[int] = []
        grad_args = [_step_input_indices(self.api, a, graph, order) for a in fn_args]
        if self.sens_param:
            grad_args.append(args[-1])
        if order != list(range(len(graph.inputs))):
            raise NotImplementedError(
                f"For '{self.api}', in {where} the gradient function should take the step's "
                f"Tensor inputs, each once and in order, but got inputs {order} of "
                f"{len(graph.inputs)}, at {tracer.user_source()}.")
        raise DeferredGradient(
            f"For '{self.api}', a gradient function called inside a traced graph is compiled "
            f"as a parallel step only by ms.jit or a Cell's call, but got it inside another "
            f"gradient's graph (parallel mode '{mode}').",
            lambda step, step_args, name: self._compile_parallel_step(step, step_args, name,
                                                                      grad_args))

    def _signature(self) -> tuple:
        """What makes two gradient functions the same one (a step may make its gradient
        function anew each time it is traced): fn's kind, what is differentiated, the
        flags."""
        fn = self.fn
        kind = getattr(fn, "__code__", None) or type(getattr(fn, "__self__", fn))
        return (kind, self.positions, tuple(id(w) for w in self.weights or ()), self.has_aux,
                self.sens_param, self.with_value, self.single_position, self.single_weight)

    def _compile_parallel_step(self, step: Callable, step_args: Sequence[Any], name: str,
                               grad_args: list) -> Graph:
        """`step` compiled around this gradient function: its forward + backward graph, then
        the rest of `step` traced after it (the optimizer's update on each rank's slices)."""
        flat = _flat_tensors(step_args, [])
        graph, n_outputs, out_is_tuple = self.build_graph(
            [_substitute(a, flat) for a in grad_args], const_sens=self.sens_param, finish=False)
        graph.name = name
        node_args = [_substitute(a, graph.inputs) for a in _marked(step_args)]
        outputs = list(graph.outputs)
        # the step may call the network on the same inputs before its gradient function
        # (MindSpore's training cells do): that call is the built forward's outputs
        fn_nodes = tuple(_substitute(a, graph.inputs) for a in grad_args[:len(grad_args) - (
            1 if self.sens_param else 0)])

        def forward() -> Any:
            outs = [tracer.as_traced(x) for x in outputs[:n_outputs]]
            return tuple(outs) if out_is_tuple else outs[0]
        tracer.substitute_call(self.fn, fn_nodes, forward)
        start = len(graph.nodes)
        _replay.append((self, outputs, n_outputs, out_is_tuple, False, start))
        try:
            trace_into(graph, step, node_args, outputs=True)
        finally:
            used = _replay.pop()[-2]
            tracer.end_substitute()
        complete_local_tail(graph, start, self.api)
        if not used:
            raise NotImplementedError(f"For '{self.api}', {name} called its gradient function "
                                      f"once while traced, but not when traced again: a "
                                      f"parallel step should call it unconditionally.")
        return finish_graph(eliminate_dead_nodes(graph))

    # -- calling ---------------------------------------------------------------------
    def __call__(self, *args: Any) -> Any:
        if tracer.is_tracing():
            return self._run_inline(args)
        graph_mode = context.get_context("mode") == context.GRAPH_MODE
        if not graph_mode:
            _check_pynative_parallel(self.api)
            if Tape.is_recording():        # inside another gradient: recorded by its tape
                return self._run_recorded(args)
            return self._run_eagerly(args)
        leaf_hooks_refused(self.api, args)
        flags = self.fn._tree_key() if hasattr(self.fn, "_tree_key") else ()
        graph, executor = self._cache.get(self.fn, args, flags)
        arrays = tensor_arrays(args[:-1] if self.sens_param else args, [])
        if self.sens_param:
            sens = args[-1]
            layouts, rank = self._sens_layouts[graph], layout_rank() if is_parallel() else 0
            arrays += [s._data if lay is None else local_slice(s._data, lay, rank)
                       for s, lay in zip(sens if isinstance(sens, (tuple, list)) else [sens],
                                         layouts)]
        values = executor(arrays)
        return self._results(values, len(graph.outputs) - self._grad_count(),
                             self._out_is_tuple[graph], self._out_tree.get(graph))

    def _results(self, values: Sequence[Tensor], n_outputs: int, out_is_tuple: bool,
                 tree: Any = None) -> Any:
        """fn's outputs (nested as `tree` says, when fn nested them) and the gradients,
        arranged as MindSpore returns them."""
        outs, grads = tuple(values[:n_outputs]), list(values[n_outputs:])
        if tree is not None:
            outs = tuple(nest_outputs(list(outs), tree))
        inputs_grads = weights_grads = None
        if self.positions is not None:
            k = len(self.positions)
            inputs_grads = grads[0] if self.single_position else tuple(grads[:k])
            grads = grads[k:]
        if self.weights is not None:
            weights_grads = grads[0] if self.single_weight else tuple(grads)
        if inputs_grads is None:
            result = weights_grads
        elif weights_grads is None:
            result = inputs_grads
        else:
            result = (inputs_grads, weights_grads)
        if self.with_value:
            return (outs if out_is_tuple else outs[0]), result
        if self.has_aux:
            return result, outs[1:]
        return result

    def _grad_count(self) -> int:
        return len(self.positions or ()) + len(self.weights or ())


def finish_graph(graph: Graph) -> Graph:
    """This rank's pipeline stage of a differentiated graph, its communication fused (after
    autodiff, see graph/fusion; after the stage split, so a bucket holds one stage's)."""
    graph = split_stages(graph)
    fuse_communication(graph, comm_fusion_bytes())
    return graph


def grad(fn: Callable, grad_position: int | tuple | None = 0, weights: Any = None,
         has_aux: bool = False) -> Callable:
    """The gradient function of `fn` (as `mindspore.grad`).

    grad_position: an int (one gradient), a tuple (a tuple of them) or None (no input);
    weights: a Parameter (one gradient) or a list/ParameterTuple (a tuple of them).
    Returns input gradients, weight gradients, or (input gradients, weight gradients)
    when both; with has_aux, (gradients, aux): only fn's first output is differentiated
    and the others are returned as the tuple aux. Without has_aux, every output of fn is
    differentiated (their gradients summed).
    """
    positions = _check_positions("grad", grad_position)
    return _GradFunction("grad", fn, positions, _check_weights("grad", weights),
                         has_aux=bool(has_aux), single_position=isinstance(grad_position, int),
                         single_weight=isinstance(weights, Parameter))


def value_and_grad(fn: Callable, grad_position: int | tuple | None = 0, weights: Any = None,
                   has_aux: bool = False) -> Callable:
    """Like `grad`, returning (fn's output, gradients) (as `mindspore.value_and_grad`); with
    has_aux the output is fn's whole output tuple and only its first element is differentiated."""
    positions = _check_positions("value_and_grad", grad_position)
    return _GradFunction("value_and_grad", fn, positions,
                         _check_weights("value_and_grad", weights), has_aux=bool(has_aux),
                         with_value=True, single_position=isinstance(grad_position, int),
                         single_weight=isinstance(weights, Parameter))


class GradOperation:
    """`GradOperation(get_all, get_by_list, sens_param)(fn, weights)`: a gradient function
    (as `mindspore.ops.GradOperation`).

    Default: the gradient of fn's first input. get_all: a tuple, one per input.
    get_by_list: a tuple, one per weight; with get_all, (inputs' tuple, weights' tuple).
    sens_param: the gradient function takes one more argument, the output's gradient
    (a Tensor, or a tuple for a tuple output), instead of ones.
    """

    def __init__(self, get_all: bool = False, get_by_list: bool = False,
                 sens_param: bool = False) -> None:
        for name, value in (("get_all", get_all), ("get_by_list", get_by_list),
                            ("sens_param", sens_param)):
            if not isinstance(value, bool):
                raise TypeError(f"For 'GradOperation', the '{name}' should be a bool, but got "
                                f"{type(value).__name__}.")
        self.get_all, self.get_by_list, self.sens_param = get_all, get_by_list, sens_param

    def __call__(self, fn: Callable, weights: Any = None) -> Callable:
        if self.get_by_list and weights is None:
            raise ValueError("For 'GradOperation', 'weights' should be given when get_by_list "
                             "is True, but got None.")
        weights = _check_weights("GradOperation", weights) if self.get_by_list else None
        return _AllInputs(self, fn, weights) if self.get_all else \
            _GradFunction("GradOperation", fn, None if self.get_by_list else (0,), weights,
                          sens_param=self.sens_param, single_position=True)


class _AllInputs:
    """GradOperation(get_all=True): every Tensor input's gradient (known at the call)."""

    def __init__(self, op: GradOperation, fn: Callable, weights: tuple | None) -> None:
        self.op, self.fn, self.weights = op, fn, weights
        self._by_positions: dict[tuple, _GradFunction] = {}

    def __call__(self, *args: Any) -> Any:
        fn_args = args[:-1] if self.op.sens_param else args
        positions = tuple(k for k, a in enumerate(fn_args) if isinstance(a, (Tensor, np.ndarray)))
        f = self._by_positions.get(positions)
        if f is None:
            if not positions:
                raise ValueError("For 'GradOperation', get_all needs at least one Tensor "
                                 "input, but got none.")
            f = self._by_positions[positions] = _GradFunction(
                "GradOperation", self.fn, positions, self.weights, sens_param=self.op.sens_param)
        return f(*args)
