"""Debugging primitives: `Print`, `Assert`, and the gradient hooks `HookBackward` and
`InsertGradientOf`.

`Print` and `Assert` are nodes with an I/O side effect (`side_effect_io`): dead-node
elimination keeps them, and their kernels run each time the graph runs, not when it is
traced. Print's strings are one compile-time input (a template), its Tensors the others.

The hooks are identities forward. Backward, their rule hands the gradient to a Python
function through the builder's `inline`: on a tape (PYNATIVE_MODE) the function runs on
the gradient's values at once and its primitive calls are recorded; on a graph
(GRAPH_MODE, ms.jit) it is traced once into the backward, so it must be made of ops (as
MindSpore parses InsertGradientOf's callback into the graph) and runs every step.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.rules import bprop, sharding_rule
from msops.primitives.sharding import DimSpec, dims

__all__ = ["Print", "Assert", "HookBackward", "InsertGradientOf"]


def _check_function(api: str, arg: str, fn: Any) -> Callable:
    if not callable(fn):
        raise TypeError(f"For '{api}', the '{arg}' should be a Python function, but got "
                        f"{type(fn).__name__}.")
    return fn


# -- Print ---------------------------------------------------------------------------------
class _Template(tuple):
    """Print's first input: its strings, None where a Tensor input goes. A call given one
    (a tape or graph replaying the recorded call) passes its arguments on as they are."""


class Print(PrimitiveWithInfer):
    """`Print()(*input_x)`: print each string and Tensor on its own line when the op runs
    (every step of a compiled graph), a Tensor as `Tensor(shape=..., dtype=..., value=...)`
    (as `mindspore.ops.Print`). bool, int and float are printed as Tensors; tuples and lists
    item by item. Returns a 0-d int32 Tensor that carries no meaning; no gradient flows.
    In a parallel graph its inputs are gathered whole, so each rank prints the full values.
    """

    const_inputs = (0,)

    @prim_attr_register
    def __init__(self) -> None:
        self.add_prim_attr("side_effect_io", True)

    def __call__(self, *input_x: Any) -> Any:
        if input_x and isinstance(input_x[0], _Template):
            return super().__call__(*input_x)
        template, tensors = [], []
        for k, item in enumerate(input_x):
            self._flatten(k, item, template, tensors)
        return super().__call__(_Template(template), *tensors)

    def _flatten(self, k: int, item: Any, template: list, tensors: list) -> None:
        """The template entry of one input: a string as itself, None for a Tensor."""
        if isinstance(item, str):
            template.append(item)
        elif isinstance(item, Tensor):
            template.append(None)
            tensors.append(item)
        elif isinstance(item, (bool, int, float)):
            template.append(None)
            tensors.append(Tensor(item))
        elif isinstance(item, (tuple, list)):
            for t in item:
                self._flatten(k, t, template, tensors)
        else:
            raise TypeError(f"For 'Print', the input {k} should be a Tensor, str, bool, int, "
                            f"float, tuple or list, but got {type(item).__name__}.")

    def infer_shape(self, template: tuple, *shapes: Any) -> list:
        return []

    def infer_dtype(self, template: tuple, *dtypes: Any) -> mstype.Type:
        return mstype.int32

    def kernel(self, template: tuple, *values: np.ndarray) -> np.ndarray:
        arrays = iter(values)
        lines = [s if s is not None else repr(Tensor._wrap(next(arrays))) for s in template]
        print("\n".join(lines), flush=True)
        return np.zeros((), np.int32)


# -- Assert --------------------------------------------------------------------------------
class Assert(PrimitiveWithInfer):
    """`Assert(summarize=3)(condition, input_data)`: when it runs, if `condition` (a bool, or
    a bool Tensor: all of it) is false, print the first `summarize` entries of each Tensor
    of `input_data` (a tuple or list) and raise RuntimeError (as `mindspore.ops.Assert`).
    Returns a 0-d int32 Tensor that carries no meaning; no gradient flows."""

    @prim_attr_register
    def __init__(self, summarize: int = 3) -> None:
        if isinstance(summarize, bool) or not isinstance(summarize, int):
            raise TypeError(f"For 'Assert', the 'summarize' should be an int, but got "
                            f"{type(summarize).__name__}.")
        self.add_prim_attr("side_effect_io", True)

    def __call__(self, condition: Any, input_data: Any = ()) -> Any:
        if isinstance(condition, bool):
            condition = Tensor(condition)
        if not isinstance(condition, Tensor):
            raise TypeError(f"For 'Assert', the 'condition' should be a bool or a bool Tensor, "
                            f"but got {type(condition).__name__}.")
        if not isinstance(input_data, (tuple, list)) or \
                not all(isinstance(t, Tensor) for t in input_data):
            raise TypeError(f"For 'Assert', the 'input_data' should be a tuple or list of "
                            f"Tensors, but got {input_data!r}.")
        if not input_data:
            return super().__call__(condition)
        return super().__call__(condition, tuple(input_data))

    def infer_shape(self, condition: list, data: Any = ()) -> list:
        return []

    def infer_dtype(self, condition: mstype.Type, data: Any = ()) -> mstype.Type:
        if condition != mstype.bool_:
            raise TypeError(f"For 'Assert', the 'condition' should be a bool Tensor, but got "
                            f"{condition}.")
        return mstype.int32

    def kernel(self, condition: np.ndarray, data: Sequence[np.ndarray] = ()) -> np.ndarray:
        if not condition.all():
            lines = ["For 'Assert' condition is false."] + [
                f"input data: {np.ravel(d)[:self.summarize]}" for d in data]
            print("\n".join(lines), flush=True)
            raise RuntimeError("For 'Assert', the condition is false: assert failed.")
        return np.zeros((), np.int32)


@sharding_rule(Print, Assert)
def whole_inputs_spec(prim: Any, ins: list, outs: list, consts: dict) -> DimSpec:
    """Every dim whole: each rank sees the full values (serial and parallel print alike)."""
    letters = tuple(dims(len(s), prefix=f"p{k}_") for k, s in enumerate(ins))
    reason = f"{prim.name} reads whole values: its inputs are gathered"
    return DimSpec(letters, ((),), tuple((l, reason) for ls in letters for l in ls))


@bprop(Print, Assert)
def no_gradient_bprop(prim: Any, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    return tuple(None for _ in inputs)


# -- gradient hooks --------------------------------------------------------------------------
class _GradientHook(PrimitiveWithInfer):
    """An identity whose backward passes the gradients through `_hooked`. The hook function
    is held as a plain attribute, not an attr: attrs describe the program, which every
    rank compiles alike, while a function's identity differs from process to process."""

    def infer_shape(self, *shapes: Any) -> Any:
        return list(shapes[0]) if len(shapes) == 1 else tuple(list(s) for s in shapes)

    def infer_dtype(self, *dtypes: Any) -> Any:
        return dtypes[0] if len(dtypes) == 1 else tuple(dtypes)

    def kernel(self, *xs: np.ndarray) -> Any:
        return xs[0] if len(xs) == 1 else tuple(xs)

    def _hooked(self, grads: tuple) -> Any:
        raise NotImplementedError

    def _checked(self, got: Any, grads: Sequence[Tensor]) -> tuple:
        new = tuple(got) if isinstance(got, (tuple, list)) else (got,)
        if len(new) != len(grads) or any(not isinstance(n, Tensor) or
                                         tuple(n.shape) != tuple(o.shape)
                                         for n, o in zip(new, grads)):
            raise ValueError(f"For '{self.name}', the hook should return {len(grads)} "
                             f"Tensor(s) of shapes {[list(o.shape) for o in grads]} (the "
                             f"gradients it got), but got {got!r}.")
        return new


@sharding_rule(_GradientHook)
def gradient_hook_spec(prim: _GradientHook, ins: list, outs: list, consts: dict) -> DimSpec:
    """Each output laid out as its input."""
    letters = tuple(dims(len(s), prefix=f"h{k}_") for k, s in enumerate(ins))
    return DimSpec(letters, letters)


@bprop(_GradientHook)
def gradient_hook_bprop(prim: _GradientHook, inputs: list, out: Any, dout: Any,
                        g: Any) -> tuple:
    """The gradients after the hook: run on the tape's values, or traced into the graph."""
    douts = list(dout) if len(inputs) > 1 else [dout]
    return tuple(g.inline(lambda *grads: prim._hooked(grads), douts))


class HookBackward(_GradientHook):
    """`HookBackward(hook_fn, cell_id="")(*inputs)`: the inputs themselves; backward,
    `hook_fn(grads)` sees the tuple of their gradients and may return new ones (None keeps
    them), as `mindspore.ops.HookBackward`. In a compiled graph hook_fn is traced once into
    the backward (made of ops; print with ops.Print), where MindSpore supports PYNATIVE only.
    """

    def __init__(self, hook_fn: Callable, cell_id: str = "") -> None:
        super().__init__()
        self.hook_fn = _check_function("HookBackward", "hook_fn", hook_fn)
        if not isinstance(cell_id, str):
            raise TypeError(f"For 'HookBackward', the 'cell_id' should be a str, but got "
                            f"{type(cell_id).__name__}.")
        self.add_prim_attr("cell_id", cell_id)

    def __call__(self, *inputs: Any) -> Any:
        for k, x in enumerate(inputs):
            if not isinstance(x, Tensor):
                raise TypeError(f"For 'HookBackward', the input {k} should be a Tensor, but "
                                f"got {type(x).__name__}.")
        if not inputs:
            raise TypeError("For 'HookBackward', the inputs should be one or more Tensors, "
                            "but got none.")
        return super().__call__(*inputs)

    def _hooked(self, grads: tuple) -> Any:
        got = self.hook_fn(tuple(grads))
        return grads if got is None else self._checked(got, grads)


class InsertGradientOf(_GradientHook):
    """`InsertGradientOf(f)(x)`: x itself; backward, x's gradient is `f(gradient)` (as
    `mindspore.ops.InsertGradientOf`: f is made of ops, traced into a compiled backward;
    it clips, scales or prints gradients in the graph)."""

    def __init__(self, f: Callable) -> None:
        super().__init__()
        self.f = _check_function("InsertGradientOf", "f", f)

    def __call__(self, x: Any) -> Any:
        if not isinstance(x, Tensor):
            raise TypeError(f"For 'InsertGradientOf', the input should be a Tensor, but got "
                            f"{type(x).__name__}.")
        return super().__call__(x)

    def _hooked(self, grads: tuple) -> Any:
        return self._checked(self.f(grads[0]), grads)
