"""A Cell's PYNATIVE_MODE hooks, as MindSpore's `register_forward_pre_hook`,
`register_forward_hook`, `register_backward_pre_hook` and `register_backward_hook`.

Forward hooks run around an eager call of the cell. Backward hooks need the gradients at
the cell's boundary: while a gradient function records the call on its tape
(msops/graph/tape.py), the cell's Tensor inputs and its outputs pass through a
`CellBackwardHook` node each side (the identity forward). Autodiff reaches the output side
first, with the gradients of the outputs (the backward pre-hooks may replace them), then
the input side, with the gradients of the inputs (the backward hooks see both and may
replace the inputs'). The rule runs the hooks on the gradients' values, which exist only
on a tape: as in MindSpore, hooks do not run in GRAPH_MODE or under `ms.jit` (a warning
says so when a cell holding hooks is compiled).
"""
from __future__ import annotations

import itertools
import warnings
from typing import Any, Callable

import numpy as np

from msops.common.tensor import Parameter, Tensor
from msops.graph.tape import Tape
from msops.nn.mixed_precision import inner_hook
from msops.primitives import primitive as _primitive
from msops.primitives.primitive import Primitive
from msops.primitives.rules import bprop, declare_without

__all__ = ["HookHandle", "CellBackwardHook", "HOOK_KINDS", "add_hook", "has_hooks",
           "run_hooked", "warn_not_run"]

#: the hook tables of a Cell: the attribute holding each and the method registering it
HOOK_KINDS = {"_forward_pre_hooks": "register_forward_pre_hook",
              "_forward_hooks": "register_forward_hook",
              "_backward_pre_hooks": "register_backward_pre_hook",
              "_backward_hooks": "register_backward_hook"}

_ids = itertools.count()


class HookHandle:
    """What a `register_*_hook` returns: `remove()` takes the hook off its cell (again: a
    no-op). A handle of a hook registered in GRAPH_MODE holds nothing."""

    def __init__(self, table: dict | None = None, key: int | None = None) -> None:
        self._table, self._key = table, key

    def remove(self) -> None:
        if self._table is not None:
            self._table.pop(self._key, None)
            self._table = None


def add_hook(cell: Any, kind: str, hook_fn: Any, with_kwargs: bool = False) -> HookHandle:
    """Register `hook_fn` in `cell`'s table `kind` (checked as MindSpore: a callable; in
    GRAPH_MODE nothing is registered, with a warning)."""
    from msops import context
    api = HOOK_KINDS[kind]
    if not callable(hook_fn):
        raise TypeError(f"For '{api}', the 'hook_fn' should be a function, but got "
                        f"{type(hook_fn).__name__}.")
    if not isinstance(with_kwargs, bool):
        raise TypeError(f"For '{api}', the 'with_kwargs' should be a bool, but got "
                        f"{type(with_kwargs).__name__}.")
    if context.get_context("mode") == context.GRAPH_MODE:
        warnings.warn(f"For '{api}', hooks run in PYNATIVE_MODE only (as MindSpore): in "
                      f"GRAPH_MODE nothing is registered on '{cell.cls_name}'.", stacklevel=3)
        return HookHandle()
    table = cell.__dict__[kind]
    key = next(_ids)
    table[key] = (hook_fn, with_kwargs)
    return HookHandle(table, key)


def has_hooks(cell: Any) -> bool:
    d = cell.__dict__
    return any(d[k] for k in HOOK_KINDS)


def warn_not_run(cell: Any) -> None:
    """A cell holding hooks compiled (GRAPH_MODE, ms.jit): MindSpore does not run them there."""
    warnings.warn(f"For '{cell.cls_name}', the hooks registered on it run in PYNATIVE_MODE "
                  f"only, not in GRAPH_MODE or under ms.jit (as MindSpore): they are not run "
                  f"in this compiled call.", stacklevel=4)


def run_hooked(cell: Any, args: tuple, kwargs: dict, forward: Callable[[tuple], Any]) -> Any:
    """One eager call of `cell` with its hooks: the forward pre-hooks (which may replace the
    arguments), `forward(positional args)`, the forward hooks (which may replace the output),
    and, while a gradient is recorded, the backward hooks at the cell's boundary."""
    d = cell.__dict__
    for fn, with_kwargs in list(d["_forward_pre_hooks"].values()):
        if with_kwargs:
            got = fn(cell, args, kwargs)
            if got is not None:
                if not (isinstance(got, tuple) and len(got) == 2 and
                        isinstance(got[1], dict)):
                    raise TypeError(f"For 'register_forward_pre_hook', a hook with "
                                    f"with_kwargs=True should return None or (args, kwargs), "
                                    f"but got {type(got).__name__}.")
                new_args, kwargs = got
                args = tuple(new_args) if isinstance(new_args, (tuple, list)) else (new_args,)
        else:
            got = fn(cell, args)
            if got is not None:
                args = tuple(got) if isinstance(got, tuple) else (got,)
    inputs = cell._positional(args, kwargs) if kwargs else args
    state = None
    if (d["_backward_hooks"] or d["_backward_pre_hooks"]) and _recording():
        state = _Boundary(cell)
        inputs = state.enter(inputs)
    output = forward(inputs)
    for fn, with_kwargs in list(d["_forward_hooks"].values()):
        got = fn(cell, args, kwargs, output) if with_kwargs else fn(cell, args, output)
        if got is not None:
            output = got
    return output if state is None else state.leave(output)


def _recording() -> bool:
    """Whether a gradient function records this eager call on its tape."""
    hook = inner_hook(_primitive._trace_hook)
    return hook is not None and isinstance(getattr(hook, "__self__", None), Tape)


class _Boundary:
    """One hooked call's two sides: the gradients of its outputs, kept for the backward
    hooks, which run when the gradients of its inputs arrive."""

    def __init__(self, cell: Any) -> None:
        self.cell = cell
        self.grad_output: tuple = ()
        self.slots: list[int] = []

    def enter(self, inputs: tuple) -> tuple:
        # a Parameter passed in stays itself (the cell may write it in place)
        self.slots = [k for k, a in enumerate(inputs)
                      if isinstance(a, Tensor) and not isinstance(a, Parameter)]
        if not self.slots:
            return inputs
        passed = CellBackwardHook(self, "input")(*[inputs[k] for k in self.slots])
        out = list(inputs)
        for k, t in zip(self.slots, passed):
            out[k] = t
        return tuple(out)

    def leave(self, output: Any) -> Any:
        items = output if isinstance(output, tuple) else (output,)
        if not items or not all(isinstance(t, Tensor) for t in items):
            return output
        passed = CellBackwardHook(self, "output")(*items)
        return tuple(passed) if isinstance(output, tuple) else passed[0]

    def _checked(self, api: str, got: Any, like: tuple) -> tuple:
        new = tuple(got) if isinstance(got, (tuple, list)) else (got,)
        if len(new) != len(like) or any(
                not isinstance(n, Tensor) or tuple(n.shape) != tuple(o.shape)
                for n, o in zip(new, like)):
            want = [list(o.shape) for o in like]
            raise ValueError(f"For '{api}', the hook of '{self.cell.cls_name}' should return "
                             f"None or {len(like)} Tensor(s) of shapes {want}, but got "
                             f"{got!r}.")
        return tuple(Tensor(n.asnumpy().astype(o.asnumpy().dtype, copy=False))
                     for n, o in zip(new, like))

    def output_grads(self, grads: tuple) -> tuple:
        for fn, _ in list(self.cell.__dict__["_backward_pre_hooks"].values()):
            got = fn(self.cell, grads)
            if got is not None:
                grads = self._checked("register_backward_pre_hook", got, grads)
        self.grad_output = grads
        return grads

    def input_grads(self, grads: tuple) -> tuple:
        for fn, _ in list(self.cell.__dict__["_backward_hooks"].values()):
            got = fn(self.cell, grads, self.grad_output)
            if got is not None:
                grads = self._checked("register_backward_hook", got, grads)
        return grads


class CellBackwardHook(Primitive):
    """`CellBackwardHook(boundary, side)(*tensors)`: the tensors themselves; its backward
    runs the cell's backward hooks (`side` "output": the pre-hooks on the outputs'
    gradients; "input": the hooks on the inputs'). Made only by a hooked eager call."""

    def __init__(self, boundary: _Boundary, side: str) -> None:
        super().__init__("CellBackwardHook")
        self.boundary, self.side = boundary, side

    def infer_shape(self, *shapes: Any) -> tuple:
        return tuple(list(s) for s in shapes)

    def infer_dtype(self, *dtypes: Any) -> tuple:
        return tuple(dtypes)

    def kernel(self, *xs: np.ndarray) -> tuple:
        return tuple(xs)


declare_without("sharding", CellBackwardHook,
                reason="it is made only by an eager (PYNATIVE_MODE) call of a hooked Cell, "
                       "never in a compiled graph")


@bprop(CellBackwardHook)
def cell_backward_hook_bprop(prim: CellBackwardHook, inputs: list, out: Any, dout: Any,
                             g: Any) -> tuple:
    """The gradients through, after the cell's hooks (on the tape, where values exist)."""
    builder = getattr(g, "builder", g)
    if not isinstance(builder, Tape):
        raise NotImplementedError("For 'register_backward_hook', the hooks run in "
                                  "PYNATIVE_MODE only, but got a compiled backward.")
    grads = tuple(Tensor(np.array(d.value)) for d in dout)
    boundary = prim.boundary
    new = boundary.output_grads(grads) if prim.side == "output" else boundary.input_grads(grads)
    return tuple(g.add_const(t.asnumpy()) for t in new)
