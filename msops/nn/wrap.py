"""Training wrappers, as `mindspore.nn`: WithLossCell, TrainOneStepCell and
DistributedGradReducer."""
from __future__ import annotations

from typing import Any, Sequence

from msops import ops
from msops.autodiff import GradOperation, finish_graph, value_and_grad
from msops.common import dtype as mstype
from msops.common import validator
from msops.communication.management import GlobalComm, get_group_size
from msops.graph.dead_nodes import eliminate_dead_nodes
from msops.graph.executor import Executor
from msops.graph.ir import Graph
from msops.graph.tracer import is_tracing as tracing, trace_into
from msops.nn.cell import Cell
from msops.nn.grad_accumulation import GradAccumulationCell, MiniSteps
from msops.nn.optim import Optimizer, bind_mirrors
from msops.parallel.context import ParallelMode, get_auto_parallel_context, is_parallel
from msops.parallel.local_tail import complete_local_tail
from msops.parallel.opt_gather import gathering
from msops.pipeline import CompileCache

__all__ = ["WithLossCell", "TrainOneStepCell", "DistributedGradReducer", "WithEvalCell",
           "grads_of"]


def grads_of(cell: str, grads: Any, parameters: tuple) -> tuple:
    """A gradient reducer's input as a tuple, one gradient per parameter (else the
    ValueError naming `cell`)."""
    grads = tuple(grads)
    if len(grads) != len(parameters):
        raise ValueError(f"For '{cell}', the number of 'grads' should be the number of "
                         f"parameters: {len(parameters)}, but got {len(grads)}.")
    return grads


class WithLossCell(Cell):
    """`loss_fn(backbone(data), label)`: a network and its loss as one Cell."""

    def __init__(self, backbone: Cell, loss_fn: Cell) -> None:
        super().__init__(auto_prefix=False)
        self._backbone = backbone
        self._loss_fn = loss_fn

    def construct(self, data: Any, label: Any) -> Any:
        return self._loss_fn(self._backbone(data), label)

    @property
    def backbone_network(self) -> Cell:
        return self._backbone


class WithEvalCell(Cell):
    """Evaluation: `(loss_fn(network(data), label), network(data), label)`, the outputs
    Model.eval hands to its metrics."""

    def __init__(self, network: Cell, loss_fn: Cell, add_cast_fp32: bool = False) -> None:
        super().__init__(auto_prefix=False)
        self._network = network
        self._loss_fn = loss_fn
        self.add_cast_fp32 = validator.check_bool("add_cast_fp32", add_cast_fp32,
                                                  "WithEvalCell")

    def construct(self, data: Any, label: Any) -> Any:
        outputs = self._network(data)
        if self.add_cast_fp32:
            outputs = ops.Cast()(outputs, mstype.float32)
        return self._loss_fn(outputs, label), outputs, label


class TrainOneStepCell(Cell):
    """One training step: the loss and the gradients of `network` (a Cell returning the
    loss) with respect to the optimizer's parameters, scaled by `sens`, then the update.
    Returns the loss.

    GRAPH_MODE: forward, backward and the optimizer's update compiled into one graph, once
    per input signature, run as one flat schedule (the update's `ops.Assign`s write the
    Parameters). In a parallel context the forward is partitioned, the local graph
    differentiated (each gradient this rank's slice of its Parameter, msops.parallel.
    backward) and the update reads and writes that slice. PYNATIVE_MODE: the same
    gradient rules on a tape, then the same update ops, eagerly; made in a data_parallel
    or hybrid_parallel context (as MindSpore) the step owns `grad_reducer`, a
    DistributedGradReducer (mean = `gradients_mean`) applied to the rank's local gradients
    there (and in hybrid_parallel's compiled step, which is not partitioned).

    With `grad_accumulation_step=k` (auto-parallel context) the optimizer applies once every
    k calls, on the mean of the k calls' gradients (`MiniSteps`): the other calls only add
    their gradients into `accu_grads.<name>` buffers (their own compiled graph).
    With the parallel optimizer, a sharded weight's gather carries the accumulation
    (`_MiniStepAllGather`; `_MicroStepAllGather` when the network holds an
    `nn.GradAccumulationCell`): see `msops.nn.grad_accumulation`.
    """

    def __init__(self, network: Cell, optimizer: Optimizer, sens: float = 1.0) -> None:
        super().__init__(auto_prefix=False)
        validator.check_value_type("sens", sens, (int, float), self.cls_name)
        self.network = network
        self.optimizer = optimizer
        self.weights = optimizer.parameters
        self.sens = float(sens)
        self.__dict__["_value_and_grad"] = value_and_grad(network, None, list(self.weights))
        # a subclass's own construct (MindSpore's way to clip or scale gradients) is what
        # the compiled step traces; this class's step is compiled from its parts
        own = type(self).construct is TrainOneStepCell.construct
        self.__dict__["_compile_cache"] = CompileCache(self._compile_step if own else None)
        self.__dict__["_mini"] = None                 # MiniSteps under grad_accumulation_step
        # as MindSpore: in data_parallel (hybrid_parallel) mode the step owns a reducer of
        # the gradients, mean from `gradients_mean`. It acts in PYNATIVE_MODE, where each
        # rank differentiates its local loss; the compiled step's backward reduces already.
        self.reducer_flag = get_auto_parallel_context("parallel_mode") in (
            ParallelMode.DATA_PARALLEL, ParallelMode.HYBRID_PARALLEL)
        self.grad_reducer = DistributedGradReducer(
            self.weights, get_auto_parallel_context("gradients_mean"),
            get_group_size()) if self.reducer_flag else _identity
        # what MindSpore's subclasses call in their own construct
        self.grad = GradOperation(get_by_list=True, sens_param=True)

    def _mini_steps(self) -> MiniSteps | None:
        """The mini-step accumulation the context asks for (None: k = 1)."""
        k = get_auto_parallel_context("grad_accumulation_step")
        if k == 1:
            return None
        if self._mini is None or self._mini.k != k:
            self.__dict__["_mini"] = MiniSteps(self.weights, k)
        return self._mini

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        mini = self._mini_steps()
        out = super().__call__(*args, **kwargs)
        if mini is not None:
            mini.finish_call()
        return out

    def compile(self, *args: Any) -> Graph:
        """The compiled step for these arguments (what the next call runs), not run."""
        self._mini_steps()
        return super().compile(*args)

    def _tree_key(self) -> tuple:
        """An accumulating call and an applying call compile to different graphs."""
        flags = super()._tree_key()
        return flags if self._mini is None else flags + (self._mini.applies(),)

    def construct(self, *inputs: Any) -> Any:
        loss, grads = self._value_and_grad(*inputs)
        return self._apply(loss, grads)

    def _apply(self, loss: Any, grads: tuple) -> Any:
        """What the step does with the network's outputs and their gradients (ops only,
        eager or traced after the backward): the update; returns the step's outputs."""
        self._update(self._reduced(self._scaled(grads)))
        return loss

    def _reduced(self, grads: tuple) -> tuple:
        """The gradients through `grad_reducer`: an identity but in data_parallel and
        hybrid_parallel modes (see DistributedGradReducer for when it reduces)."""
        return self.grad_reducer(grads)

    def _update(self, grads: tuple) -> None:
        """The optimizer's update, or this mini-step's accumulation (ops only)."""
        mini = self._mini
        if mini is None:
            self.optimizer(grads)
        elif mini.applies():
            self.optimizer(mini.drain(grads))
        else:
            mini.accumulate(grads)

    def _scaled(self, grads: Any) -> tuple:
        return tuple(grads) if self.sens == 1.0 else tuple(g * self.sens for g in grads)

    def _gather_policy(self) -> Any:
        """Who picks the parallel optimizer's gathers while this step compiles: the mini-step
        accumulation, else a GradAccumulationCell of the network, else nobody (AllGather)."""
        if self._mini is not None:
            return self._mini
        return next((c for _, c in self.network.cells_and_names()
                     if isinstance(c, GradAccumulationCell)), None)

    def _compile_step(self, cell: Any, args: Sequence[Any]) -> tuple[Graph, Executor]:
        """Forward + backward (`value_and_grad`'s graph), then `_apply` (the update) traced
        after it; the graph returns what `_apply` returns (the loss)."""
        if self._mini is not None:
            self._mini.gathered.clear()
        with gathering(self._gather_policy()):
            graph, n_outputs, out_is_tuple = self._value_and_grad.build_graph(args,
                                                                              finish=False)
        outputs, grads = graph.outputs[:n_outputs], graph.outputs[n_outputs:]
        self.optimizer.bind_state(graph)
        if self._mini is not None:
            bind_mirrors(graph, self._mini.mirrors)
        start = len(graph.nodes)
        trace_into(graph, self._apply, [tuple(outputs) if out_is_tuple else outputs[0],
                                        tuple(grads)], outputs=True)
        complete_local_tail(graph, start, self.cls_name)
        graph = finish_graph(eliminate_dead_nodes(graph))
        return graph, Executor(graph)


def _identity(grads: Any) -> Any:
    """The `grad_reducer` of a step that needs none (MindSpore's F.identity)."""
    return grads


class DistributedGradReducer(Cell):
    """Data-parallel gradient reduction: `reducer(grads)` sums each gradient over `group`
    (AllReduce) and, when `mean`, divides it by `degree` (default: the group's size).

    `parameters` are the optimizer's (one gradient each, same order); every rank calls it
    with gradients of the same shapes. Returns a tuple of Tensors. Traced into a
    partitioned graph (data_parallel, semi_auto_parallel in GRAPH_MODE) it returns them as
    they are: the graph's backward has already reduced each replicated Parameter's
    gradient over its replicas (a MindSpore training cell calling it reduces once).
    """

    def __init__(self, parameters: Any, mean: bool = True, degree: int | None = None,
                 fusion_type: int = 1, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        super().__init__(auto_prefix=False)
        name = self.cls_name
        self.mean = validator.check_bool("mean", mean, name)
        if degree is None:
            degree = get_group_size(group)
        self.degree = validator.check_positive_int(degree, "degree", name)
        self.parameters = tuple(parameters)
        self.allreduce = ops.AllReduce(ops.ReduceOp.SUM, group)

    def __call__(self, grads: Any) -> tuple:
        """Outside a traced graph it runs eagerly in either mode (the AllReduces act on
        this rank's own gradients, never on a partitioned graph's fed slices); gradients
        that came out of a partitioned graph (they carry a layout) were already reduced
        by its backward, so they are returned as they are."""
        if tracing():
            return super().__call__(grads)
        grads = tuple(grads)
        if is_parallel() and grads and all(getattr(g, "layout", None) is not None
                                           for g in grads):
            return grads
        return self.construct(grads)

    def construct(self, grads: Any) -> tuple:
        grads = grads_of(self.cls_name, grads, self.parameters)
        if tracing() and is_parallel():   # a partitioned graph's backward reduced them
            return grads
        out = tuple(self.allreduce(g) for g in grads)
        if self.mean and self.degree != 1:
            out = tuple(g / self.degree for g in out)
        return out
