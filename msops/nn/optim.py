"""Optimizers, as `mindspore.nn`: SGD, Momentum, Adam and AdamWeightDecay, updating their
Parameters in place with ops.

`optimizer(gradients)` takes one gradient per parameter (the order of `parameters`). The
update is written with primitives and ends in `ops.Assign`, so it runs eagerly in
PYNATIVE_MODE, is compiled (once per gradient signature) in GRAPH_MODE, and is traced
into the training step's graph by `TrainOneStepCell` or `ms.jit`: forward, backward and
update as one schedule. The optimizer's state is Parameters it owns, with MindSpore's
names: `global_step` (int32 [1]), `learning_rate`, `accum`/`stat` (SGD), `moments`
(Momentum), `moment1`/`moment2`/`beta1_power`/`beta2_power` (Adam), `moments1`/
`moments2` (AdamWeightDecay); each per-parameter state is named `<state>.<parameter>`.

`parameters` may be grouped (msops/nn/param_groups.py: a learning rate, weight decay and
gradient centralization per group, and the update order). Each gradient is, in
MindSpore's order: plus weight_decay * p (but AdamWeightDecay, which decays p itself),
centralized when its group says so, then divided by `loss_scale`.

The learning rate (a number, a list or 1-D Tensor per step, or a schedule: a callable of
the global step) is the `learning_rate` Parameter (`learning_rate_group_<i>`, one per
group, when groups set their own); for a list or a schedule the host writes this step's
value into it before each step (a compiled graph runs that as a pre-run hook), so the
compiled step's rate changes per step without a retrace.

In a parallel context a gradient is this rank's slice of its Parameter (it carries the
Parameter's `layout`): the compiled update reads and writes that slice only, and the
Parameter's per-parameter state is laid out like it. A Parameter's data is then current
on this rank only inside its slice, which is all the compiled graphs of that layout read.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence, Union

import numpy as np

from msops import context, ops
from msops.common import validator
from msops.common.dtype import float64 as ms_float64
from msops.common.tensor import Parameter, Tensor
from msops.graph import tracer
from msops.graph.executor import Executor
from msops.graph.ir import Graph, Node
from msops.nn.cell import Cell
from msops.nn.param_groups import ParameterGroups
from msops.parallel.local_tail import complete_local_tail
from msops.parallel.param_layout import record_layout_like
from msops.parallel.param_store import state_like
from msops.parallel.slices import is_split
from msops.pipeline import CompileCache

__all__ = ["Optimizer", "SGD", "Momentum", "Adam", "AdamWeightDecay", "bind_mirrors"]

LearningRate = Union[float, Sequence[float], Callable[[int], Any]]


class Optimizer(Cell):
    """The base (as `mindspore.nn.Optimizer`): `parameters` (Parameters, a Cell's
    `trainable_params()`, or groups: see msops/nn/param_groups.py), a `learning_rate` (a
    number; a list/tuple or 1-D Tensor, one per step, the last repeated; or a schedule: a
    callable of the global step, as `nn.LearningRateSchedule`), `weight_decay` (g +
    weight_decay * p before the update; ungrouped, not for "beta"/"gamma" names) and
    `loss_scale` (the gradients are divided by it).

    A subclass creates its state with `_state_like` / `_scalar_state` and writes, with ops,
    `_update(k, p, g, step)`: the new value of parameter k from its gradient (decayed,
    centralized, unscaled) and this step's scalars for its group (`_step_values`: the
    rate, ...) in p's dtype."""

    _decay_in_gradient = True                         # False: the subclass decays p itself
    _layerwise = False                                # True: the update takes per-parameter norms

    def __init__(self, learning_rate: LearningRate, parameters: Sequence[Any],
                 weight_decay: float = 0.0, loss_scale: float = 1.0) -> None:
        super().__init__(auto_prefix=False)
        name = self.cls_name
        groups = ParameterGroups(name, parameters, learning_rate, weight_decay)
        validator.check_value_type("loss_scale", loss_scale, (int, float), name)
        if not loss_scale > 0:
            raise ValueError(f"For '{name}', the 'loss_scale' should be > 0, but got "
                             f"{loss_scale}.")
        self.__dict__["parameters"] = groups.parameters   # not registered: the network's
        self.__dict__["_groups"] = groups
        self.__dict__["_mirrors"] = []                # (state Parameter, its Parameter)
        self.learning_rate = groups.learning_rates[0] if not groups.is_group_lr \
            else tuple(groups.learning_rates)
        self.weight_decay = float(weight_decay)
        self.loss_scale = float(loss_scale)
        self.global_step = Parameter(Tensor(np.zeros(1, np.int32)), "global_step",
                                     requires_grad=False)
        rates = []
        for i, lr in enumerate(groups.learning_rates):
            value = Tensor(np.asarray(lr if isinstance(lr, float) else 0.0, np.float64))
            if groups.is_group_lr:
                rate = Parameter(value, f"learning_rate_group_{i}", requires_grad=False)
                self._params[rate.name] = rate
            else:
                rate = self.learning_rate_value = Parameter(value, "learning_rate",
                                                            requires_grad=False)
            rates.append(rate)
        self.__dict__["_rates"] = rates
        self.__dict__["_dynamic_lr"] = any(not isinstance(lr, float)
                                           for lr in groups.learning_rates)
        self._assign = ops.Assign()
        self._cast = ops.Cast()
        self._centralize = ops.ReduceMean(keep_dims=True)
        self._squeeze, self._equal = ops.Squeeze(), ops.Equal()
        self.__dict__["_compiled"] = CompileCache(self._compile_update)

    @property
    def is_group(self) -> bool:
        """Whether `parameters` were given as groups (MindSpore's attribute)."""
        return self._groups.is_group

    @property
    def is_group_lr(self) -> bool:
        """Whether groups set their own learning rates (then one Parameter each)."""
        return self._groups.is_group_lr

    # -- state -----------------------------------------------------------------------
    def _state_like(self, prefix: str, init: float = 0.0,
                    params: Sequence[Parameter] | None = None,
                    dtype: Any = None) -> tuple[Parameter, ...]:
        """One state Parameter per parameter (of `params`, default all), of its shape and
        dtype (or numpy `dtype`), named `<prefix>.<name>` and laid out like it in a
        parallel graph."""
        states = []
        for p in self.parameters if params is None else params:
            s = state_like(p, init, f"{prefix}.{p.name}", dtype)
            self._params[s.name] = s
            self._mirrors.append((s, p))
            states.append(s)
        return tuple(states)

    def _scalar_state(self, name: str, value: float) -> Parameter:
        """A float64 0-d state Parameter (a power of beta), whole on every rank."""
        s = Parameter(Tensor(np.asarray(value, np.float64)), name, requires_grad=False)
        self._params[name] = s
        return s

    # -- the learning rate ----------------------------------------------------------------
    def _step_count(self) -> int:
        return int(self.global_step._data[0])

    def get_lr(self) -> float | tuple[float, ...]:
        """The learning rate of the current step (`global_step`); with groups that set
        their own, a tuple of one per group."""
        step = self._step_count()
        # a number's Parameter is the rate the step reads (a callback may have rewritten it)
        values = tuple(float(rate.asnumpy()) if isinstance(lr, float) else
                       self._groups.lr_at(lr, step)
                       for rate, lr in zip(self._rates, self._groups.learning_rates))
        return values if self.is_group_lr else values[0]

    def get_lr_parameter(self, param: Parameter | Sequence[Parameter]) -> Parameter | list:
        """The learning-rate Parameter that updates `param` (a list for a list)."""
        if isinstance(param, (list, tuple)):
            return [self.get_lr_parameter(p) for p in param]
        for p, k in zip(self.parameters, self._groups.lr_index):
            if p is param:
                return self._rates[k]
        raise ValueError(f"For 'get_lr_parameter', the Parameter '{getattr(param, 'name', param)}'"
                         f" should be one this {self.cls_name} updates, but it is not.")

    def _write_learning_rate(self) -> None:
        """Host: this step's rates into the learning-rate Parameters (list or schedule)."""
        step = self._step_count()
        for rate, lr in zip(self._rates, self._groups.learning_rates):
            np.copyto(rate._data, self._groups.lr_at(lr, step))
            rate.version += 1

    def _step_number(self) -> dict:
        """This step's float64 0-d values, with ops: "t" the step being taken (1 first, as
        MindSpore counts it: global_step + 1) and "first" (1.0 at t == 1, else 0.0)."""
        step = self._squeeze(self.global_step)
        return {"t": self._cast(step + 1, ms_float64),
                "first": self._cast(self._equal(step, 0), ms_float64)}

    def _as(self, value64: Any, dtype: Any) -> Any:
        """A float64 step value (the rate) in a parameter's dtype."""
        return value64 if dtype == ms_float64 else self._cast(value64, dtype)

    # -- the update --------------------------------------------------------------------
    def _check_gradients(self, gradients: Sequence[Any]) -> tuple:
        gradients = tuple(gradients)
        if len(gradients) != len(self.parameters):
            raise ValueError(f"For '{self.cls_name}', the number of gradients should be the "
                             f"number of parameters: {len(self.parameters)}, but got "
                             f"{len(gradients)}.")
        return gradients

    def construct(self, gradients: Sequence[Any]) -> bool:
        """Every parameter's update from its gradient, then global_step + 1 (ops only)."""
        shared = self._shared_values()
        steps = [self._step_values(rate, shared) for rate in self._rates]
        cast: dict = {}
        for k, (p, g) in enumerate(zip(self.parameters, self._check_gradients(gradients))):
            group = self._groups.lr_index[k]
            values = cast.get((p.dtype, group))
            if values is None:
                values = cast[(p.dtype, group)] = {n: self._as(v, p.dtype)
                                                   for n, v in steps[group].items()}
            self._assign(p, self._update(k, p, self._gradient(k, p, g), values))
        self._after_update()
        self._assign(self.global_step, self.global_step + 1)
        return True

    def _gradient(self, k: int, p: Parameter, g: Any) -> Any:
        """Parameter k's gradient as the update takes it, in MindSpore's order: decayed
        (g + weight_decay * p), centralized, divided by the loss scale."""
        decay = self._groups.weight_decay[k]
        if decay and self._decay_in_gradient:
            g = g + p * decay
        if self._groups.centralize[k]:
            g = g - self._centralize(g, (1, 2, 3))
        if self.loss_scale != 1.0:
            g = g * (1.0 / self.loss_scale)
        return g

    def _shared_values(self) -> dict:
        """This step's float64 scalars common to every group (state written once a step)."""
        return {}

    def _step_values(self, lr: Any, shared: dict) -> dict:
        """One group's float64 scalars of this step, by name: "lr" (Adam folds its bias
        correction in) and the `shared` ones."""
        return {"lr": lr, **shared}

    def _update(self, k: int, p: Parameter, g: Any, step: dict) -> Any:
        """The new value of parameter k from its gradient and this step's scalars."""
        raise NotImplementedError(f"For '{self.cls_name}', _update() is not defined.")

    def _after_update(self) -> None:
        """State written once a step, after every parameter's update."""

    def __call__(self, gradients: Sequence[Any]) -> bool:
        """Update every parameter from its gradient: eagerly (PYNATIVE_MODE), traced into the
        graph being compiled, or as a compiled update graph (GRAPH_MODE)."""
        gradients = self._check_gradients(gradients)
        if self._dynamic_lr:
            if tracer.is_tracing():
                tracer.before_each_run(self._write_learning_rate)
            elif context.get_context("mode") != context.GRAPH_MODE:
                self._write_learning_rate()
        if tracer.is_tracing():      # the state reads and writes its parameter's slice
            self.bind_state(tracer.active_graph())
            tracer.adopt_parameters()
        if tracer.is_tracing():
            return self.construct(gradients)
        if context.get_context("mode") != context.GRAPH_MODE:
            self._check_eager_slices(gradients)
            return self.construct(gradients)
        self._compiled.run(self, (_GradientSignature(gradients),) + gradients, ())
        return True

    def _check_eager_slices(self, gradients: tuple) -> None:
        """Refuse eager per-parameter norms of parallel slices: this rank's part only."""
        if not self._layerwise:
            return
        for p, g in zip(self.parameters, gradients):
            layout = getattr(g, "layout", None)
            if layout is not None and is_split(layout):
                raise NotImplementedError(
                    f"For '{self.cls_name}', the gradient of '{p.name}' is this rank's slice "
                    f"({layout}) and the update takes per-parameter norms, which an eager "
                    f"(PYNATIVE_MODE) update would take over the slice only. Update in "
                    f"GRAPH_MODE (the optimizer's compiled update) or in the training step.")

    # -- compiled -----------------------------------------------------------------------
    def append_update(self, graph: Graph, grads: Sequence[Node]) -> None:
        """Trace this optimizer's update of `grads` (one node each) into `graph`."""
        self.bind_state(graph)
        tracer.trace_into(graph, self, [tuple(grads)])

    def bind_state(self, graph: Graph) -> None:
        """Add this optimizer's per-parameter state to `graph` before its update is traced
        there: each reads and writes the same slice as its parameter's node (a parallel
        graph's layout), a parameter the graph lacks being added whole."""
        bind_mirrors(graph, self._mirrors)

    def _compile_update(self, cell: Any, args: Sequence[Any]) -> tuple[Graph, Executor]:
        """The update as a graph of its own (GRAPH_MODE, gradients from outside a graph):
        one input per gradient; each parameter is read as the gradient's slice says."""
        grads = args[1:]
        graph = Graph(f"{self.cls_name}.update")
        inputs = []
        for p, g in zip(self.parameters, grads):
            layout = getattr(g, "layout", None)
            full = p._full_shape
            sliced = layout is not None and tuple(layout.tensor_shape) == tuple(full)
            want = tuple(layout.slice_shape) if sliced else tuple(full)
            if tuple(g.shape) != want:
                raise ValueError(f"For '{self.cls_name}', the gradient of '{p.name}' should "
                                 f"have its shape {list(want)}, but got {list(g.shape)}.")
            node = graph.add_parameter(p, want)
            grad = graph.add_input(g.shape, g.dtype, f"grad.{p.name}")
            if sliced:                   # the executor has the Parameter hold that slice
                node.layout = grad.layout = layout
            inputs.append(grad)
        start = len(graph.nodes)
        self.append_update(graph, inputs)
        # a reduction over a slice (Lamb's and LARS's norms) is combined over the ranks
        complete_local_tail(graph, start, self.cls_name)
        graph.outputs, graph.output_is_tuple = [], True
        return graph, Executor(graph)


def bind_mirrors(graph: Graph, mirrors: Sequence[tuple[Parameter, Parameter]]) -> None:
    """Add each state Parameter of `mirrors` ((state, its parameter) pairs) to `graph`,
    reading and writing the same slice as its parameter's node (a parallel graph's
    layout); a parameter the graph lacks is added whole."""
    nodes = {id(n.value): n for n in graph.parameters}
    for state, p in mirrors:
        if id(state) in nodes:
            continue
        like = nodes.get(id(p))
        if like is None:                                   # unused by the forward: whole
            like = nodes[id(p)] = graph.add_parameter(p)
        node = graph.add_parameter(state, like.shape)
        node.layout = like.layout
        if like.layout is not None:
            record_layout_like(state, p, like.layout)


class _GradientSignature:
    """The gradients' layouts as a compile-cache argument (the gradients themselves follow
    it: their shapes and dtypes key the cache too, their arrays are the graph's inputs)."""

    def __init__(self, gradients: tuple) -> None:
        self._key = tuple(getattr(g, "layout", None) for g in gradients)

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _GradientSignature) and self._key == other._key


class SGD(Optimizer):
    """Stochastic gradient descent with momentum (as `mindspore.nn.SGD`, torch's rule):
    v = g at the first step, then v = momentum * v + (1 - dampening) * g;
    p -= lr * (g + momentum * v) with nesterov, else p -= lr * v (v = g without momentum).
    State: `accum` (v) and `stat` (1 until the first step: v starts as g)."""

    def __init__(self, params: Sequence[Any], learning_rate: LearningRate = 0.1,
                 momentum: float = 0.0, dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False, loss_scale: float = 1.0) -> None:
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        validator.check_value_type("momentum", momentum, (int, float), self.cls_name)
        validator.check_value_type("dampening", dampening, (int, float), self.cls_name)
        validator.check_bool("nesterov", nesterov, self.cls_name)
        if momentum < 0 or (nesterov and (momentum <= 0 or dampening != 0)):
            raise ValueError(f"For '{self.cls_name}', the 'momentum' should be >= 0 (> 0 with "
                             f"zero dampening for nesterov), but got momentum={momentum}, "
                             f"dampening={dampening}, nesterov={nesterov}.")
        self.momentum, self.dampening, self.nesterov = float(momentum), float(dampening), nesterov
        if self.momentum:
            self.__dict__["accum"] = self._state_like("accum")
            self.__dict__["stat"] = self._scalar_state("stat", 1.0)

    def _shared_values(self) -> dict:
        if not self.momentum:
            return {}
        # the gradient's weight in v: 1 at the first step (v = 0 + g), else 1 - dampening
        return {"g_weight": 1.0 - (1.0 - self.stat) * self.dampening}

    def _update(self, k: int, p: Parameter, g: Any, step: dict) -> Any:
        if not self.momentum:
            return p - step["lr"] * g
        v = self._assign(self.accum[k], self.accum[k] * self.momentum + g * step["g_weight"])
        return p - step["lr"] * (g + v * self.momentum if self.nesterov else v)

    def _after_update(self) -> None:
        if self.momentum:
            self._assign(self.stat, self.stat * 0.0)


class Momentum(Optimizer):
    """Momentum (as `mindspore.nn.Momentum`, ApplyMomentum): v = momentum * v + g (v starts
    at 0); p -= lr * v, or lr * (g + momentum * v) with use_nesterov; g decayed,
    centralized and divided by `loss_scale` first (see Optimizer). State: `moments`."""

    def __init__(self, params: Sequence[Any], learning_rate: LearningRate, momentum: float,
                 weight_decay: float = 0.0, loss_scale: float = 1.0,
                 use_nesterov: bool = False) -> None:
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        validator.check_value_type("momentum", momentum, (int, float), self.cls_name)
        validator.check_bool("use_nesterov", use_nesterov, self.cls_name)
        if momentum < 0:
            raise ValueError(f"For '{self.cls_name}', the 'momentum' should be >= 0, but got "
                             f"{momentum}.")
        self.momentum, self.use_nesterov = float(momentum), use_nesterov
        self.__dict__["moments"] = self._state_like("moments")

    def _update(self, k: int, p: Parameter, g: Any, step: dict) -> Any:
        v = self._assign(self.moments[k], self.moments[k] * self.momentum + g)
        return p - step["lr"] * (g + v * self.momentum if self.use_nesterov else v)


def check_non_negative(name: str, arg: str, value: Any, positive: bool = False) -> float:
    """A number >= 0 (> 0 with `positive`) as a float, else MindSpore's TypeError or
    ValueError naming the optimizer and the argument."""
    validator.check_value_type(arg, value, (int, float), name)
    if not (value > 0 if positive else value >= 0):
        raise ValueError(f"For '{name}', the '{arg}' should be {'> 0' if positive else '>= 0'}"
                         f", but got {value}.")
    return float(value)


def check_float(name: str, arg: str, value: Any) -> float:
    """A float argument as a float (MindSpore's validators take float, not int, for ASGD's
    and Rprop's), else MindSpore's TypeError naming the optimizer and the argument."""
    validator.check_value_type(arg, value, (float,), name)
    return float(value)


def check_betas(name: str, beta1: float, beta2: float, eps: float,
                open_low: bool = False) -> None:
    """0 <= beta < 1 (0 < beta with `open_low`: Lamb's and AdaMax's range) and eps > 0, as
    MindSpore's validators."""
    for arg, value in (("beta1", beta1), ("beta2", beta2), ("eps", eps)):
        validator.check_value_type(arg, value, (int, float), name)
    low = (lambda b: 0 < b) if open_low else (lambda b: 0 <= b)
    if not (low(beta1) and beta1 < 1 and low(beta2) and beta2 < 1 and eps > 0):
        raise ValueError(f"For '{name}', the 'beta1' and 'beta2' should be in "
                         f"{'(' if open_low else '['}0, 1) and 'eps' > 0, but got "
                         f"beta1={beta1}, beta2={beta2}, eps={eps}.")


class Adam(Optimizer):
    """Adam (as `mindspore.nn.Adam`, ApplyAdam), with t = global_step + 1, g the gradient
    plus weight_decay * p (L2, as MindSpore's Optimizer):
    m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g**2 (both start at 0);
    lr_t = lr * sqrt(1 - beta2**t) / (1 - beta1**t);
    p -= lr_t * m / (sqrt(v) + eps), or lr_t * (beta1 * m + (1 - beta1) * g) / (sqrt(v) + eps)
    with use_nesterov; use_amsgrad divides by sqrt(vhat) + eps, vhat = max(vhat, v).
    (eps is added after the bias correction, as ApplyAdam.) `use_locking` and the
    kwargs `use_lazy` / `use_offload` pick MindSpore kernels: accepted, the same numbers.
    State: `moment1`, `moment2` (`vhat`), `beta1_power`, `beta2_power` (beta**t, float64)."""

    def __init__(self, params: Sequence[Any], learning_rate: LearningRate = 1e-3,
                 beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8,
                 use_locking: bool = False, use_nesterov: bool = False,
                 weight_decay: float = 0.0, loss_scale: float = 1.0,
                 use_amsgrad: bool = False, **kwargs: Any) -> None:
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        name = self.cls_name
        check_betas(name, beta1, beta2, eps)
        for arg, value in (("use_locking", use_locking), ("use_nesterov", use_nesterov),
                           ("use_amsgrad", use_amsgrad)):
            validator.check_bool(arg, value, name)
        # MindSpore's kwargs choose a kernel (lazy sparse rows, host offload): the same
        # numbers for dense gradients on the host, which is what msops runs
        for arg, value in kwargs.items():
            if arg not in ("use_lazy", "use_offload"):
                raise TypeError(f"For '{name}', the keyword arguments should be among "
                                f"['use_lazy', 'use_offload'], but got '{arg}'.")
            validator.check_bool(arg, value, name)
        if use_amsgrad and use_nesterov:
            raise ValueError(f"For '{name}', 'use_amsgrad' and 'use_nesterov' should not both "
                             f"be True.")
        self.beta1, self.beta2, self.eps = float(beta1), float(beta2), float(eps)
        self.use_locking, self.use_nesterov, self.use_amsgrad = use_locking, use_nesterov, \
            use_amsgrad
        self.__dict__["moment1"] = self._state_like("moment1")
        self.__dict__["moment2"] = self._state_like("moment2")
        if use_amsgrad:
            self.__dict__["vhat"] = self._state_like("vhat")
        self.beta1_power = self._scalar_state("beta1_power", 1.0)
        self.beta2_power = self._scalar_state("beta2_power", 1.0)
        self._sqrt = ops.Sqrt()
        self._maximum = ops.Maximum()

    def _shared_values(self) -> dict:
        b1p = self._assign(self.beta1_power, self.beta1_power * self.beta1)
        b2p = self._assign(self.beta2_power, self.beta2_power * self.beta2)
        return {"correction": self._sqrt(1.0 - b2p) / (1.0 - b1p)}

    def _step_values(self, lr: Any, shared: dict) -> dict:
        return {"lr": lr * shared["correction"]}

    def _update(self, k: int, p: Parameter, g: Any, step: dict) -> Any:
        b1, b2, lr = self.beta1, self.beta2, step["lr"]
        m = self._assign(self.moment1[k], self.moment1[k] * b1 + g * (1 - b1))
        v = self._assign(self.moment2[k], self.moment2[k] * b2 + g * g * (1 - b2))
        if self.use_amsgrad:
            v = self._assign(self.vhat[k], self._maximum(self.vhat[k], v))
        step = m * b1 + g * (1 - b1) if self.use_nesterov else m
        return p - lr * step / (self._sqrt(v) + self.eps)


class AdamWeightDecay(Optimizer):
    """Adam with decoupled weight decay (as `mindspore.nn.AdamWeightDecay`: no bias
    correction, unlike torch's AdamW; the decay is not added to the gradient):
    m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g**2 (both start at 0);
    p -= lr * (m / (sqrt(v) + eps) + weight_decay * p). State: `moments1`, `moments2`."""

    _decay_in_gradient = False

    def __init__(self, params: Sequence[Any], learning_rate: LearningRate = 1e-3,
                 beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-6,
                 weight_decay: float = 0.0) -> None:
        super().__init__(learning_rate, params, weight_decay)
        if any(self._groups.centralize):
            raise ValueError(f"For '{self.cls_name}', a group's 'grad_centralization' should "
                             f"be False: AdamWeightDecay does not centralize gradients (as "
                             f"MindSpore's).")
        check_betas(self.cls_name, beta1, beta2, eps)
        self.beta1, self.beta2, self.eps = float(beta1), float(beta2), float(eps)
        self.__dict__["moments1"] = self._state_like("moments1")
        self.__dict__["moments2"] = self._state_like("moments2")
        self._sqrt = ops.Sqrt()

    def _update(self, k: int, p: Parameter, g: Any, step: dict) -> Any:
        b1, b2, lr = self.beta1, self.beta2, step["lr"]
        m = self._assign(self.moments1[k], self.moments1[k] * b1 + g * (1 - b1))
        v = self._assign(self.moments2[k], self.moments2[k] * b2 + g * g * (1 - b2))
        update = m / (self._sqrt(v) + self.eps)
        decay = self._groups.weight_decay[k]
        if decay:
            update = update + p * decay
        return p - lr * update
