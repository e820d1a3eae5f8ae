"""`vmap`: a function mapped over an axis of its inputs (as `mindspore.vmap` / `ops.vmap`).

`vmap(fn, in_axes, out_axes)(*args)` traces fn on one batch element (the mapped inputs
without their mapped axis, the others whole: `tracer.trace_nested`, so it also works
inside a graph being traced) and runs that graph over the batch through the ops' batch
rules (`graph/batching.py`). The rules call ordinary primitives, so the batched
computation runs eagerly, or is traced into the enclosing `ms.jit` / Cell graph, or is
recorded by a gradient's tape: `grad(vmap(f))` differentiates it, and `vmap(grad(f))`
(per-example gradients) batches the traced forward and backward alike. fn is traced on
every call; Python in fn sees shapes, never values.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common.tensor import Tensor
from msops.graph.batching import run_batched
from msops.graph.ir import nest_outputs
from msops.graph.tracer import InputSpec, trace_nested
from msops.primitives.batching import broadcast_front, move_dim

__all__ = ["vmap"]


def _check_axes(arg: str, axes: Any) -> None:
    """in_axes / out_axes: an int, None, or a (nested) tuple or list of them."""
    if axes is None or (isinstance(axes, int) and not isinstance(axes, bool)):
        return
    if isinstance(axes, (tuple, list)):
        for a in axes:
            _check_axes(arg, a)
        return
    raise TypeError(f"For 'vmap', the '{arg}' should be an int, None, or a tuple or list of "
                    f"them (nested like the {'arguments' if arg == 'in_axes' else 'outputs'}), "
                    f"but got {type(axes).__name__}: {axes!r}.")


def _axis_in(arg: str, axis: int, ndim: int, where: str) -> int:
    """`axis` normalised for a value of `ndim` dims, or MindSpore's range error."""
    if not -ndim <= axis < ndim:
        raise ValueError(f"For 'vmap', the '{arg}' of {where} should be in range "
                         f"[{-ndim}, {ndim}) (the rank {ndim}), but got {axis}.")
    return axis % ndim


def _leaves(args: Any, axes: Any, where: str, out: list) -> Any:
    """`args` with each Tensor replaced by an InputSpec of one element; `out` gets (Tensor,
    axis) per Tensor, in order. `axes` (an int or None applies to everything below it)
    must follow the nesting of `args`."""
    if isinstance(args, (tuple, list)):
        if isinstance(axes, (tuple, list)):
            if len(axes) != len(args):
                raise ValueError(f"For 'vmap', the 'in_axes' of {where} should match its "
                                 f"structure: {len(args)} items, but got {len(axes)}: "
                                 f"{axes!r}.")
            return type(args)(_leaves(a, x, f"{where}[{k}]", out)
                              for k, (a, x) in enumerate(zip(args, axes)))
        return type(args)(_leaves(a, axes, f"{where}[{k}]", out) for k, a in enumerate(args))
    if isinstance(axes, (tuple, list)):
        raise ValueError(f"For 'vmap', the 'in_axes' of {where} should be an int or None for a "
                         f"single value, but got {axes!r} for a {type(args).__name__}.")
    if isinstance(args, np.ndarray):
        args = Tensor(args)
    if not isinstance(args, Tensor):
        if axes is not None:
            raise ValueError(f"For 'vmap', the 'in_axes' of {where} should be None: only a "
                             f"Tensor can be mapped, but got {axes} for a "
                             f"{type(args).__name__}.")
        return args
    shape = tuple(args.shape)
    if axes is None:
        out.append((args, None))
        return InputSpec(shape, args.dtype, f"in.{len(out) - 1}")
    axis = _axis_in("in_axes", axes, len(shape), where) if shape else \
        _axis_in("in_axes", axes, 0, where)
    out.append((args, axis))
    return InputSpec(shape[:axis] + shape[axis + 1:], args.dtype, f"in.{len(out) - 1}")


def _batch_size(inputs: Sequence[tuple[Tensor, int | None]], cells: int | None = None) -> int:
    """The mapped axes' one size (`cells`: a CellList's cell count, which it must equal)."""
    sizes = {}
    for k, (t, axis) in enumerate(inputs):
        if axis is not None:
            sizes.setdefault(t.shape[axis], k)
    if cells is not None:
        if sizes and set(sizes) != {cells}:
            got = ", ".join(f"{t.shape[a]} (input {k}, axis {a})" for k, (t, a) in
                            enumerate(inputs) if a is not None)
            raise ValueError(f"For 'vmap', the mapped axes of the inputs should have the size "
                             f"of the CellList: {cells} cells, but got {got}.")
        return cells
    if not sizes:
        raise ValueError("For 'vmap', at least one input should be mapped (an in_axes that "
                         "is not None for a Tensor), but got every in_axes None.")
    if len(sizes) > 1:
        got = ", ".join(f"{t.shape[a]} (input {k}, axis {a})" for k, (t, a) in
                        enumerate(inputs) if a is not None)
        raise ValueError(f"For 'vmap', the mapped axes of the inputs should all have one size, "
                         f"but got {got}.")
    return next(iter(sizes))


def _out_axes(out_axes: Any, n: int, tree: Any, is_tuple: bool) -> list:
    """One out axis per flat output: `out_axes` follows the outputs' nesting (an int or
    None applies to everything below it)."""
    flat: list = []

    def walk(axes: Any, t: Any, where: str) -> None:
        if isinstance(t, int):
            if isinstance(axes, (tuple, list)):
                raise ValueError(f"For 'vmap', the 'out_axes' of {where} should be an int or "
                                 f"None for a single output, but got {axes!r}.")
            flat.append(axes)
            return
        if isinstance(axes, (tuple, list)):
            if len(axes) != len(t):
                raise ValueError(f"For 'vmap', the 'out_axes' of {where} should match its "
                                 f"structure: {len(t)} items, but got {len(axes)}: {axes!r}.")
            for k, (a, s) in enumerate(zip(axes, t)):
                walk(a, s, f"{where}[{k}]")
        else:
            for k, s in enumerate(t):
                walk(axes, s, f"{where}[{k}]")
    if tree is None:
        tree = tuple(range(n)) if is_tuple else 0
    walk(out_axes, tree, "the output")
    return flat


def _place(value: Any, dim: int | None, axis: int | None, size: int, k: int) -> Any:
    """An output with its batch axis at `axis` (an unmapped output repeated `size` times
    there); with axis None the output should not be mapped."""
    if axis is None:
        if dim is not None:
            raise ValueError(f"For 'vmap', the 'out_axes' of output {k} is None (not mapped), "
                             f"so the output should not depend on a mapped input, but it "
                             f"does (shape {list(value.shape)} batched on axis {dim}).")
        return value
    if dim is None:
        value, dim = broadcast_front(value, None, size), 0
    ndim = len(value.shape)
    return move_dim(value, dim, _axis_in("out_axes", axis, ndim, f"output {k}"))


def _ensemble(cells: list) -> tuple[list, Callable]:
    """The first cell's Parameters, and `parameter(p)` for run_batched: each one stacked
    with the same Parameter of every other cell (batch axis 0). The cells should hold
    Parameters of one structure (count, shapes, dtypes)."""
    from msops.primitives.stack_ops import Stack
    if not cells:
        raise ValueError("For 'vmap', the CellList should hold at least one cell, but got an "
                         "empty one.")
    params = [list(c.get_parameters()) for c in cells]
    first = [(tuple(p.shape), p.dtype) for p in params[0]]
    for k, ps in enumerate(params[1:], 1):
        got = [(tuple(p.shape), p.dtype) for p in ps]
        if got != first:
            raise ValueError(f"For 'vmap', the cells of the CellList should have the same "
                             f"structure (Parameters of the same shapes and dtypes), but cell "
                             f"0 has {[list(s) for s, _ in first]} and cell {k} has "
                             f"{[list(s) for s, _ in got]}.")
    index = {id(p): j for j, p in enumerate(params[0])}

    def parameter(p: Any) -> tuple[Any, Any]:
        j = index.get(id(p))
        if j is None:                 # a Parameter the cells share, or another one
            return p, None
        return Stack(0)(tuple(ps[j] for ps in params)), 0
    return params[0], parameter


class _Vmapped:
    """`fn` mapped over `in_axes` of its arguments, its outputs' mapped axes at `out_axes`;
    for a CellList, each cell on its batch element (the Parameters stacked)."""

    def __init__(self, fn: Callable, in_axes: Any, out_axes: Any) -> None:
        self.fn, self.in_axes, self.out_axes = fn, in_axes, out_axes
        members = getattr(fn, "_vmap_members", None)
        self.cells = members() if members is not None else None

    def __call__(self, *args: Any) -> Any:
        in_axes = self.in_axes
        if isinstance(in_axes, (tuple, list)) and len(in_axes) != len(args):
            raise ValueError(f"For 'vmap', the 'in_axes' should have one entry per positional "
                             f"argument: {len(args)}, but got {len(in_axes)}: {in_axes!r}.")
        inputs: list = []
        specs = _leaves(tuple(args), in_axes if isinstance(in_axes, (tuple, list)) else in_axes,
                        "the arguments", inputs)
        fn, parameter = self.fn, None
        if self.cells is not None:
            _, parameter = _ensemble(self.cells)
            fn = self.cells[0]
            size = _batch_size(inputs, len(self.cells))
        else:
            size = _batch_size(inputs)
        name = getattr(fn, "__name__", type(fn).__name__)
        graph, free = trace_nested(fn, list(specs), f"vmap({name})")
        outs = run_batched(graph, inputs, free, size, parameter=parameter)
        axes = _out_axes(self.out_axes, len(outs), graph.output_tree, graph.output_is_tuple)
        values = [_place(v, d, a, size, k) for k, ((v, d), a) in enumerate(zip(outs, axes))]
        if graph.output_tree is not None:
            return nest_outputs(values, graph.output_tree)
        return tuple(values) if graph.output_is_tuple else values[0]


def vmap(fn: Callable, in_axes: Any = 0, out_axes: Any = 0) -> Callable:
    """`fn` mapped over an axis of its inputs (as `mindspore.vmap`).

    in_axes: the mapped axis of each positional argument: an int (every Tensor mapped on
    it), None (not mapped), or a tuple/list with one entry per argument, nested like the
    arguments; negative axes count from the end. out_axes: where each output's mapped axis
    goes, likewise over the outputs (None: the output must not be mapped; an unmapped
    output with an int out axis is repeated along it). fn is a function or a Cell (its
    Parameters are not mapped), or a CellList of cells of one structure (model
    ensembling: cell k runs on batch element k, the mapped size is the cell count). vmap
    nests and composes with grad / value_and_grad both ways, eagerly and inside ms.jit.
    Random ops draw anew for every batch element.
    """
    if not callable(fn):
        raise TypeError(f"For 'vmap', the 'fn' should be a function, a Cell or a CellList, "
                        f"but got {type(fn).__name__}.")
    _check_axes("in_axes", in_axes)
    _check_axes("out_axes", out_axes)
    return _Vmapped(fn, in_axes, out_axes)
