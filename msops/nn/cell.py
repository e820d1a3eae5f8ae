"""Cell: the base of every network, as `mindspore.nn.Cell`.

Assigning a Cell, a Parameter or a Primitive to an attribute registers it, so
`parameters_and_names()` yields prefixed names (`bn.gamma`) and a Parameter created
with `name=None` takes its attribute name. Calling a Cell runs `construct` eagerly in
PYNATIVE_MODE; in GRAPH_MODE it is traced once per call signature and the compiled
schedule runs (a Cell called inside a traced construct is inlined).
"""
from __future__ import annotations

import inspect
import warnings
from collections import OrderedDict
from typing import Any, Callable, Iterator

from msops import context
from msops.common import dtype as mstype
from msops.common.codegen import MISS
from msops.common.shard_layout import Layout
from msops.common.state_epoch import EPOCH, bump
from msops.common.tensor import Parameter
from msops.graph import tracer
from msops.graph.ir import Graph
from msops.parallel.context import is_parallel
from msops.parallel.param_layout import ParameterLayout, layouts_of
from msops.parallel.param_plan import check_plan, plan_of, set_plan
from msops.nn.cell_hooks import HOOK_KINDS, HookHandle, add_hook, has_hooks, run_hooked, \
    warn_not_run
from msops.nn.cell_inputs import check_call, check_declared
from msops.nn.mixed_precision import cast_inputs, check_dst_type
from msops.nn.mixed_precision import current as mixed_current
from msops.nn.mixed_precision import scope as mixed_scope
from msops.pipeline import CompileCache
from msops.primitives.array_ops import Identity
from msops.primitives.primitive import Primitive, _check_strategy

__all__ = ["Cell"]

class Cell:
    """Base class of networks: define `construct(*inputs)`; call the cell to run it.

    `training` (False until `set_train()`) selects training behaviour; `in_strategy` /
    `out_strategy` hold the strategy given to `shard` for the parallel layer.
    """

    def __init__(self, auto_prefix: bool = True) -> None:
        d = self.__dict__
        d["_params"] = {}
        d["_cells"] = {}
        d["_primitives"] = {}
        d["_auto_prefix"] = auto_prefix
        d["training"] = False
        d["in_strategy"] = None
        d["out_strategy"] = None
        d["_compile_cache"] = CompileCache()
        d["_tree"] = (-1, ())
        d["_flags"] = {}
        d["_mixed_type"] = None          # to_float's dtype (None: the enclosing cell's)
        d["_recompute"] = None           # recompute()'s options (None: not recomputed)
        d["_declared_inputs"] = None     # set_inputs()'s placeholders
        d["_pipeline_stage"] = -1        # pipeline_stage (-1: unset, the caller's)
        d["_pipeline_segment"] = -1      # pipeline_segment (-1: unset, the caller's)
        for kind in HOOK_KINDS:
            d[kind] = {}

    @property
    def cls_name(self) -> str:
        return type(self).__name__

    @property
    def pipeline_stage(self) -> int:
        """The pipeline stage this cell's ops run on (`pipeline_stages` > 1): -1 (the
        default) leaves them to the enclosing cell's stage, or to the stage their inputs
        come from (parallel/stage_split.py)."""
        return self._pipeline_stage

    @pipeline_stage.setter
    def pipeline_stage(self, value: int) -> None:
        self._set_place("pipeline_stage", value)

    def _set_place(self, prop: str, value: int) -> None:
        """Set `pipeline_stage` or `pipeline_segment` (an int >= 0): a new compile."""
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"For 'Cell', the property '{prop}' should be an int, but got "
                            f"{type(value).__name__}.")
        if value < 0:
            raise ValueError(f"For 'Cell', the property '{prop}' should be >= 0, but got "
                             f"{value}.")
        self.__dict__[f"_{prop}"] = value
        bump()

    @property
    def pipeline_segment(self) -> int:
        """The virtual pipeline segment (chunk) of this cell's ops with
        `pipeline_config={"pipeline_interleave": True}`: the ops of segment v on stage s are
        virtual stage v * pipeline_stages + s, data flowing through the virtual stages in
        order (stage s holds one chunk of the layers in each segment). -1 (the default)
        leaves them to the enclosing cell's segment, else 0."""
        return self._pipeline_segment

    @pipeline_segment.setter
    def pipeline_segment(self, value: int) -> None:
        self._set_place("pipeline_segment", value)

    # -- attribute registration ------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        if "_params" not in d:
            if isinstance(value, (Cell, Parameter, Primitive)):
                raise AttributeError(f"For '{self.cls_name}', call super().__init__() before "
                                     f"assigning the attribute '{name}'.")
            return object.__setattr__(self, name, value)
        if isinstance(value, Cell) and d["_cells"].get(name) is value:
            return                       # `self.blocks += [...]` assigns it again: no rename
        self._unregister(name)
        if isinstance(value, Parameter):
            if value.name is None:
                value.name = name
            d["_params"][name] = value
            bump()
        elif isinstance(value, Cell):
            if self._auto_prefix:
                value.update_parameters_name(name + ".")
            d["_cells"][name] = value
            bump()
        elif isinstance(value, Primitive):
            d["_primitives"][name] = value
            bump()
        elif name == "training":
            bump()
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self._unregister(name)
        object.__delattr__(self, name)

    def _unregister(self, name: str) -> None:
        d = self.__dict__
        gone = [d[table].pop(name, None) for table in ("_params", "_primitives", "_cells")]
        if any(v is not None for v in gone):
            bump()

    def insert_child_to_cell(self, child_name: str, child_cell: "Cell") -> None:
        """Register `child_cell` under `child_name` (names that are not identifiers: "0")."""
        setattr(self, child_name, child_cell)

    def update_parameters_name(self, prefix: str = "", recurse: bool = True) -> None:
        """Prepend `prefix` to the name of every Parameter of this cell (and of its sub-cells
        when `recurse`)."""
        if not isinstance(prefix, str):
            raise TypeError(f"For 'update_parameters_name', the 'prefix' should be a str, but "
                            f"got {type(prefix).__name__}.")
        for p in self.get_parameters(expand=recurse):
            p.name = prefix + p.name

    def insert_param_to_cell(self, param_name: str, param: Parameter | None,
                             check_name_contain_dot: bool = True) -> None:
        """Register `param` as this cell's Parameter `param_name` (as assigning the attribute
        does; a name with dots only when `check_name_contain_dot` is False). A Parameter
        without a name takes `param_name`."""
        api = "insert_param_to_cell"
        if not isinstance(param_name, str) or not param_name:
            raise KeyError(f"For '{api}', the 'param_name' should be a non-empty str, but got "
                           f"{param_name!r}.")
        if check_name_contain_dot and "." in param_name:
            raise KeyError(f"For '{api}', the 'param_name' should not contain '.', but got "
                           f"'{param_name}'.")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"For '{api}', the 'param' should be a Parameter or None, but got "
                            f"{type(param).__name__}.")
        if hasattr(self, param_name) and param_name not in self._params:
            raise KeyError(f"For '{api}', the 'param_name' '{param_name}' is already an "
                           f"attribute of '{self.cls_name}' that is not a Parameter.")
        if param is None:
            self._unregister(param_name)
            object.__setattr__(self, param_name, None)
            return
        setattr(self, param_name, param)

    def parameters_dict(self, recurse: bool = True) -> "OrderedDict[str, Parameter]":
        """Parameter name -> Parameter, for this cell's (and its sub-cells' when `recurse`)."""
        return OrderedDict((p.name, p) for p in self.get_parameters(expand=recurse))

    def init_parameters_data(self, auto_parallel_mode: bool = False) -> dict:
        """{Parameter: its initialised Parameter}: msops draws every initializer when the
        Parameter is made, so each maps to itself (MindSpore replaces lazily initialised
        ones). `auto_parallel_mode` is accepted: a parallel compile slices Parameters."""
        return {p: p for p in self.get_parameters()}

    def apply(self, fn: Callable[["Cell"], Any]) -> "Cell":
        """Call `fn` on every sub-cell (depth first), then on this cell; returns the cell."""
        for cell in self.cells():
            cell.apply(fn)
        fn(self)
        return self

    # -- flags and mixed precision ------------------------------------------------------
    def add_flags(self, **flags: Any) -> "Cell":
        """Set flags on this cell (read back by `get_flags`, and as attributes). As MindSpore,
        `fp16=True` / `bf16=True` / `fp32=True` set the cell's mixed-precision type
        (`to_float`, this cell only)."""
        self._flags.update(flags)
        for name, value in flags.items():
            object.__setattr__(self, name, value)
        mixed = [t for flag, t in _MIXED_FLAGS.items() if flags.get(flag)]
        if mixed:
            self.__dict__["_mixed_type"] = mixed[-1]
            bump()                        # the tree key holds the mixed type
        return self

    def add_flags_recursive(self, **flags: Any) -> "Cell":
        """`add_flags` on this cell and every sub-cell."""
        for _, cell in self.cells_and_names():
            cell.add_flags(**flags)
        return self

    def get_flags(self) -> dict:
        """The flags `add_flags` set."""
        return self._flags

    def to_float(self, dst_type: Any) -> "Cell":
        """Run this cell and its sub-cells in `dst_type` (float16, bfloat16 or float32): in
        each construct the floating inputs, and the Parameters and constant Tensors read, are
        cast to it (gradients reach the Parameters through the Cast, in their own dtype).
        A sub-cell's own later `to_float` wins (`bn.to_float(ms.float32)`). Returns the cell."""
        dst = check_dst_type(dst_type, self.cls_name)
        self.add_flags_recursive(**{flag: t == dst for flag, t in _MIXED_FLAGS.items()})
        return self

    def recompute(self, **kwargs: Any) -> None:
        """Recompute this cell's forward in the backward instead of keeping its activations
        (MindSpore's options `mp_comm_recompute` (default True),
        `parallel_optimizer_comm_recompute` and `recompute_slice_activation` (default False),
        recorded in `_recompute`).

        In a compiled gradient (GRAPH_MODE, ms.jit, TrainOneStepCell; stand-alone or
        partitioned) each call of the cell is re-emitted before its backward
        (graph/recompute.py): the same numbers, its inner activations freed after the
        forward. Collectives, in-place writes and random draws are not run twice (kept from
        the forward), so the comm options have no effect. PYNATIVE_MODE gradients keep the
        activations (the tape holds every value): the same numbers, no memory saved."""
        options = dict(_RECOMPUTE_DEFAULTS)
        for key, value in kwargs.items():
            if key not in _RECOMPUTE_DEFAULTS:
                raise ValueError(f"For 'recompute', the keyword '{key}' is not recognized: it "
                                 f"should be one of {list(_RECOMPUTE_DEFAULTS)}.")
            if not isinstance(value, bool):
                raise TypeError(f"For 'recompute', the '{key}' should be a bool, but got "
                                f"{type(value).__name__}.")
            options[key] = value
        for _, cell in self.cells_and_names():
            cell.__dict__["_recompute"] = dict(options)
        bump()                          # compiled gradients re-emit the cell's forward

    def set_comm_fusion(self, fusion_type: int, recurse: bool = True) -> "Cell":
        """Set the communication fusion id of this cell's Parameters (and its sub-cells' when
        `recurse`): a parallel backward fuses the AllReduces of gradients into one bucket only
        when their Parameters share the id (`Parameter.comm_fusion`, default 1). Returns the
        cell."""
        if not isinstance(fusion_type, int) or isinstance(fusion_type, bool) or fusion_type < 0:
            raise TypeError(f"For 'set_comm_fusion', the 'fusion_type' should be a "
                            f"non-negative int, but got {fusion_type!r}.")
        for p in self.get_parameters(expand=recurse):
            p.comm_fusion = fusion_type
        bump()                          # compiled backwards bucket by the ids
        return self

    # -- dynamic-shape declaration ------------------------------------------------------
    def set_inputs(self, *inputs: Any) -> None:
        """Declare the inputs of later calls (MindSpore's dynamic shape): Tensors whose
        `None` dims are free (`Tensor(shape=[None, 3], dtype=ms.float32)`). msops compiles
        per call signature, so a call is only checked against the declaration: the same
        number of inputs, each of the declared dtype, rank and fixed dims."""
        check_declared(self.cls_name, inputs)
        self.__dict__["_declared_inputs"] = tuple(inputs)
        bump()                          # the next call checks its inputs again

    def get_inputs(self) -> tuple | None:
        """The inputs `set_inputs` declared (None: none)."""
        return self._declared_inputs

    # -- hooks (PYNATIVE_MODE) --------------------------------------------------------------
    def register_forward_pre_hook(self, hook_fn: Callable, with_kwargs: bool = False
                                  ) -> HookHandle:
        """`hook_fn(cell, args)` (with_kwargs: `hook_fn(cell, args, kwargs)`) before each
        PYNATIVE_MODE call; it may return new args (or (args, kwargs)). Not run in GRAPH_MODE
        or under ms.jit (as MindSpore). Returns a handle whose `remove()` removes it."""
        return add_hook(self, "_forward_pre_hooks", hook_fn, with_kwargs)

    def register_forward_hook(self, hook_fn: Callable, with_kwargs: bool = False) -> HookHandle:
        """`hook_fn(cell, args, output)` (with_kwargs: `hook_fn(cell, args, kwargs, output)`)
        after each PYNATIVE_MODE call; it may return a new output."""
        return add_hook(self, "_forward_hooks", hook_fn, with_kwargs)

    def register_backward_pre_hook(self, hook_fn: Callable) -> HookHandle:
        """`hook_fn(cell, grad_output)` when the gradients of the cell's outputs are known in
        a PYNATIVE_MODE gradient; it may return new ones (a tuple, one per output)."""
        return add_hook(self, "_backward_pre_hooks", hook_fn)

    def register_backward_hook(self, hook_fn: Callable) -> HookHandle:
        """`hook_fn(cell, grad_input, grad_output)` when the gradients of the cell's Tensor
        inputs are known in a PYNATIVE_MODE gradient (grad_output: its outputs'); it may
        return new gradients of the inputs (a tuple, one per Tensor input)."""
        return add_hook(self, "_backward_hooks", hook_fn)

    # -- traversal --------------------------------------------------------------------
    def cells_and_names(self, cells: set | None = None,
                        name_prefix: str = "") -> Iterator[tuple[str, "Cell"]]:
        """(prefixed name, cell) for this cell ("") and every sub-cell, each once."""
        seen = set() if cells is None else cells
        if id(self) in seen:
            return
        seen.add(id(self))
        yield name_prefix, self
        for name, cell in self._cells.items():
            yield from cell.cells_and_names(seen, f"{name_prefix}.{name}" if name_prefix else name)

    def cells(self) -> list["Cell"]:
        """The direct sub-cells."""
        return list(self._cells.values())

    def name_cells(self) -> dict[str, "Cell"]:
        return dict(self._cells)

    def parameters_and_names(self, name_prefix: str = "",
                             expand: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(prefixed attribute path, Parameter) for this cell's Parameters (and sub-cells')."""
        seen: set[int] = set()
        cells = self.cells_and_names(name_prefix=name_prefix) if expand else [(name_prefix, self)]
        for prefix, cell in cells:
            for name, p in cell._params.items():
                if id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{prefix}.{name}" if prefix else name), p

    def get_parameters(self, expand: bool = True) -> Iterator[Parameter]:
        for _, p in self.parameters_and_names(expand=expand):
            yield p

    def trainable_params(self, recurse: bool = True) -> list[Parameter]:
        """The Parameters with requires_grad=True."""
        return [p for p in self.get_parameters(expand=recurse) if p.requires_grad]

    def untrainable_params(self, recurse: bool = True) -> list[Parameter]:
        return [p for p in self.get_parameters(expand=recurse) if not p.requires_grad]

    # -- modes ------------------------------------------------------------------------
    def set_train(self, mode: bool = True) -> "Cell":
        """Set `training` on this cell and every sub-cell (BatchNorm: batch statistics)."""
        for _, cell in self.cells_and_names():
            cell.training = bool(mode)
        return self

    def set_grad(self, requires_grad: bool = True) -> "Cell":
        """Accepted for MindSpore scripts: gradient functions differentiate any Cell, so
        there is nothing to mark. Returns the cell."""
        self.__dict__["requires_grad"] = bool(requires_grad)
        return self

    def _tree_key(self) -> tuple:
        """What a compiled graph of this cell depends on besides its arguments: each
        sub-cell's type, train flag, strategies, to_float type and recompute mark, its
        Parameters (by identity, with their plans and comm fusion ids) and Primitives (by
        identity, with their strategies), so a layer, Parameter, Primitive, strategy or type
        put in after a call compiles anew. Recomputed only when the state epoch moved
        (assigning any of them, `shard`, `to_float`, `recompute` or `set_comm_fusion` bumps
        it)."""
        epoch, key = self._tree
        if epoch != EPOCH[0]:
            key = tuple((type(c), c.training, c.in_strategy, c.out_strategy, c._mixed_type,
                         c._recompute is not None, c._pipeline_stage, c._pipeline_segment,
                         tuple((id(p), plan_of(p), getattr(p, "comm_fusion", 1))
                               for p in c._params.values()),
                         tuple((id(p), p.in_strategy, p.out_strategy)
                               for p in c._primitives.values()))
                        for _, c in self.cells_and_names())
            self.__dict__["_tree"] = (EPOCH[0], key)
        return key

    def shard(self, in_strategy: tuple, out_strategy: tuple | None = None,
              parameter_plan: dict | None = None, device: str = "Ascend",
              level: int = 0) -> "Cell":
        """Store the strategy of this cell's inputs (and outputs) for the parallel layer,
        and the layouts `parameter_plan` gives its Parameters by name (`{"dense.weight":
        (4, 1)}`: stored so, and moved to what each consumer needs).

        Layer cells that wrap one primitive forward it to that primitive (`_shard_primitives`).
        `device` and `level` are MindSpore's, accepted and checked: msops runs on the CPU
        and searches with one cost model.
        """
        in_s = _check_strategy(in_strategy, "in_strategy", self.cls_name)
        out_s = _check_strategy(out_strategy, "out_strategy", self.cls_name)
        _check_device_level(device, level, self.cls_name)
        plans = self._parameter_plans(parameter_plan)
        self.__dict__["in_strategy"], self.__dict__["out_strategy"] = in_s, out_s
        self._shard_primitives(in_s, out_s)
        for param, strategy in plans:
            set_plan(param, strategy)
        bump()                                   # the tree key holds the strategies
        return self

    def _parameter_plans(self, parameter_plan: dict | None) -> list[tuple[Parameter, tuple]]:
        """(Parameter, strategy) for each entry of `parameter_plan`, checked. A key names a
        Parameter by its name or its path in this cell; as in MindSpore, an unknown name
        or a Parameter already planned is skipped with a warning."""
        if parameter_plan is None:
            return []
        if not isinstance(parameter_plan, dict):
            raise TypeError(f"For '{self.cls_name}', the 'parameter_plan' should be a dict or "
                            f"None, but got {type(parameter_plan).__name__}.")
        by_name: dict[str, Parameter] = {}
        for path, param in self.parameters_and_names():
            by_name.setdefault(path, param)
            by_name.setdefault(param.name, param)
        out = []
        for name, value in parameter_plan.items():
            if not isinstance(name, str):
                raise TypeError(f"For '{self.cls_name}', the keys of 'parameter_plan' should "
                                f"be str, but got {type(name).__name__}: {name!r}.")
            strategy = check_plan(name, value, self.cls_name)
            param = by_name.get(name)
            if param is None:
                warnings.warn(f"For '{self.cls_name}', 'parameter_plan' names '{name}', which "
                              f"is not a Parameter of this cell: skipped.", stacklevel=3)
                continue
            if plan_of(param) is not None:
                warnings.warn(f"For '{self.cls_name}', the Parameter '{name}' already has the "
                              f"plan {plan_of(param)[0]}: {strategy[0]} skipped.", stacklevel=3)
                continue
            tmap = strategy[0].tensor_map if isinstance(strategy[0], Layout) else strategy[0]
            if len(tmap) != len(param._full_shape):
                raise ValueError(f"For '{self.cls_name}', the 'parameter_plan['{name}']' should "
                                 f"have one entry per dim of the Parameter (shape "
                                 f"{list(param._full_shape)}), but got {strategy[0]}.")
            out.append((param, strategy))
        return out

    def _shard_primitives(self, in_strategy: tuple | None, out_strategy: tuple | None) -> None:
        """Forward a `shard` to the wrapped primitive(s); a plain Cell only stores it."""

    # -- running ----------------------------------------------------------------------
    def construct(self, *inputs: Any) -> Any:
        raise NotImplementedError(f"For '{self.cls_name}', construct() is not defined.")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        cache = self._compile_cache
        if cache.epoch == EPOCH[0] and not kwargs:    # like the last call, nothing changed
            out = cache.fast(args)
            if out is not MISS:
                return out
        graph = context.get_context("mode") == context.GRAPH_MODE and not tracer.is_tracing()
        if has_hooks(self):
            if not graph and not tracer.is_tracing():
                return run_hooked(self, args, kwargs, self._checked_call)
            warn_not_run(self)
        if kwargs:
            args = self._positional(args, kwargs)
        if graph:
            self._check_declared(args)
            return cache.run(self, args, self._tree_key())
        return self._checked_call(args)

    def _checked_call(self, args: tuple, recompute: bool = False) -> Any:
        """A call inlined in a trace, or run eagerly: the declared inputs checked, the
        construct run (under its to_float type); recomputed in the backward when the cell
        or this call (`ms.recompute(cell, ...)`) asks for it."""
        self._check_declared(args)
        if tracer.is_tracing():
            tracer.note_cell(self)           # the compile cache watches its tree
            hit = tracer.substituted(self, args)
            if hit is not MISS:              # already in the graph (a parallel step's forward)
                return hit
        if (self._pipeline_stage >= 0 or self._pipeline_segment >= 0) and tracer.is_tracing():
            return self._staged(args, recompute)
        return self._construct_call(args, recompute)

    def _construct_call(self, args: tuple, recompute: bool) -> Any:
        if (recompute or self._recompute is not None) and tracer.is_tracing() and \
                not _recomputing:
            return self._recomputed(args)
        return self._laid_out_construct(args)

    def _staged(self, args: tuple, recompute: bool) -> Any:
        """A traced call of a cell with a `pipeline_stage` or `pipeline_segment`: the op nodes
        it made get this cell's (stage, segment), but where a sub-cell set its own (tagged
        first; -1: unset)."""
        graph = tracer.active_graph()
        start = len(graph.nodes)
        out = self._construct_call(args, recompute)
        mine = (self._pipeline_stage, self._pipeline_segment)
        for n in graph.nodes[start:]:
            inner = graph.stage_of.get(n.id, (-1, -1))
            graph.stage_of[n.id] = tuple(i if i >= 0 else m for i, m in zip(inner, mine))
        return out

    def _laid_out_construct(self, args: tuple) -> Any:
        if self._pins_layouts():
            return self._laid_out(self._run_construct(*self._laid_out(args, self.in_strategy)),
                                  self.out_strategy)
        return self._run_construct(*args)

    def _recomputed(self, args: tuple) -> Any:
        """A traced call of a recompute() cell: its op nodes form one span of the graph, re-
        emitted in the backward (graph/recompute.py); a marked sub-cell is in its span."""
        graph = tracer.active_graph()
        start = len(graph.nodes)
        _recomputing.append(self)
        try:
            out = self._laid_out_construct(args)
        finally:
            _recomputing.pop()
        graph.recompute.append(frozenset(n.id for n in graph.nodes[start:]))
        return out

    def _check_declared(self, args: tuple) -> None:
        if self._declared_inputs is not None:
            check_call(self.cls_name, self._declared_inputs, args)

    def _run_construct(self, *args: Any) -> Any:
        """`construct(*args)`, in this cell's to_float type (its own, else the enclosing
        cell's): inputs cast, and its reads cast by the scope."""
        dst = self._mixed_type or mixed_current()
        if dst is None:
            return self.construct(*args)
        with mixed_scope(self, dst):
            return self.construct(*cast_inputs(args, dst))

    def _pins_layouts(self) -> bool:
        """A plain Cell's shard() lays its inputs/outputs out while traced (a layer cell
        forwards its strategy to its primitive instead)."""
        return self.in_strategy is not None and tracer.is_tracing() and \
            type(self)._shard_primitives is Cell._shard_primitives

    def _laid_out(self, values: Any, strategy: tuple | None) -> Any:
        """`values` (a tensor or tuple) through Identity primitives carrying `strategy`."""
        if strategy is None:
            return values
        single = not isinstance(values, tuple)
        items = (values,) if single else values
        if len(strategy) != len(items):
            raise ValueError(f"For '{self.cls_name}', the strategy should have one entry per "
                             f"tensor ({len(items)}), but got {len(strategy)}: {strategy}.")
        out = tuple(Identity().shard((s,))(v) for v, s in zip(items, strategy))
        return out[0] if single else out

    def _positional(self, args: tuple, kwargs: dict) -> tuple:
        bound = inspect.signature(self.construct).bind(*args, **kwargs)
        bound.apply_defaults()
        return tuple(bound.args) + tuple(bound.kwargs.values())

    def compile(self, *args: Any) -> Graph:
        """The compiled graph (this rank's, after the parallel pass) for these arguments."""
        return self._compile_cache.get(self, args, self._tree_key())[0]

    @property
    def parameter_layout_dict(self) -> dict[str, ParameterLayout]:
        """Parameter name -> layout (device matrix, tensor map, slice shape, ...) of each
        of this cell's parameters in the latest partitioned graph that used it (a call, a
        gradient or a training step); empty before compile or when running stand-alone."""
        return layouts_of(self.get_parameters()) if is_parallel() else {}

    def extend_repr(self) -> str:
        """Extra text of this cell in `repr` (layers show their arguments)."""
        return ""

    def __repr__(self) -> str:
        head = f"{self.cls_name}<{self.extend_repr()}>"
        if not self._cells:
            return head
        body = "\n".join(f"  ({n}): " + repr(c).replace("\n", "\n  ")
                         for n, c in self._cells.items())
        return f"{head}\n{body}"


#: the flags that set a cell's mixed-precision type (`add_flags`, `to_float`)
_MIXED_FLAGS = {"fp16": mstype.float16, "bf16": mstype.bfloat16, "fp32": mstype.float32}
#: the recompute() cells being traced (a sub-cell inside one is part of its span)
_recomputing: list["Cell"] = []
#: `recompute`'s options and MindSpore's defaults
_RECOMPUTE_DEFAULTS = {"mp_comm_recompute": True, "parallel_optimizer_comm_recompute": False,
                       "recompute_slice_activation": False}

#: MindSpore's `shard` devices and search levels (msops runs on the CPU with one cost model)
SHARD_DEVICES = ("CPU", "GPU", "Ascend")
SHARD_LEVELS = (0, 1, 2)


def _check_device_level(device: Any, level: Any, name: str) -> None:
    if device not in SHARD_DEVICES:
        raise ValueError(f"For '{name}', the 'device' should be one of {SHARD_DEVICES}, but "
                         f"got {device!r}.")
    if isinstance(level, bool) or level not in SHARD_LEVELS:
        raise ValueError(f"For '{name}', the 'level' should be one of {SHARD_LEVELS}, but got "
                         f"{level!r}.")
