"""MindSpore's functional derivatives beyond `grad`: `vjp`, `jvp`, `jacrev`, `jacfwd`.

All are built on the reverse-mode gradient functions of msops/autodiff.py, so they run
wherever a gradient does: PYNATIVE_MODE (on a tape), GRAPH_MODE (compiled), and inside a
traced construct or `ms.jit` (inlined into the caller's graph).

* `vjp`: a gradient function with the cotangent as its sens (`sens_param`).
* `jvp`: the transpose trick. `u -> vjp(u) = J^T u` is linear in u, so the vjp of that
  function with cotangent v is `(J^T)^T v = J v`: a second-order reverse pass, which
  msops's higher-order gradients differentiate like any other graph.
* `jacrev` / `jacfwd`: the vjp of every output element (rows of J) / the jvp of every
  input element (columns) as one vjp / jvp mapped by `vmap` over the one-hot basis, then
  reshaped, so the Jacobian is built by ops in every mode.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.autodiff import _check_positions, _check_weights, _GradFunction
from msops.common.tensor import Tensor
from msops.primitives.array_ops import Reshape
from msops.primitives.elementwise_ops import OnesLike
from msops.vmap import vmap

__all__ = ["vjp", "jvp", "jacrev", "jacfwd"]


def _check_has_aux(api: str, has_aux: Any) -> bool:
    if not isinstance(has_aux, bool):
        raise TypeError(f"For '{api}', the 'has_aux' should be a bool, but got "
                        f"{type(has_aux).__name__}.")
    return has_aux


def _check_tensors(api: str, arg: str, values: Any) -> tuple:
    """`values` (a Tensor, or a tuple/list of them) as a tuple of Tensors."""
    items = tuple(values) if isinstance(values, (tuple, list)) else (values,)
    if not items or not all(isinstance(t, Tensor) for t in items):
        got = type(values).__name__ if not isinstance(values, (tuple, list)) else \
            "(" + ", ".join(type(t).__name__ for t in values) + ")"
        raise TypeError(f"For '{api}', the '{arg}' should be a Tensor, or a tuple or list of "
                        f"Tensors, but got {got}.")
    return items


def _first_output(api: str, fn: Callable) -> Callable:
    """fn's first output only (has_aux: the others are not differentiated)."""
    def first(*args: Any) -> Any:
        out = fn(*args)
        if not isinstance(out, (tuple, list)) or len(out) < 2:
            raise ValueError(f"For '{api}', with has_aux=True the 'fn' should return more than "
                             f"one output, but got {_count(out)}.")
        return out[0]
    first.__name__ = getattr(fn, "__name__", type(fn).__name__)
    return first


def _count(out: Any) -> str:
    return f"{len(out)} outputs" if isinstance(out, (tuple, list)) else "one Tensor"


def _split_aux(api: str, out: Any) -> tuple[Any, Any]:
    """(the differentiated output, aux) as MindSpore returns them: aux is the second output
    itself when fn has two, else the tuple of all but the first."""
    if not isinstance(out, (tuple, list)) or len(out) < 2:
        raise ValueError(f"For '{api}', with has_aux=True the 'fn' should return more than one "
                         f"output, but got {_count(out)}.")
    return out[0], (out[1] if len(out) == 2 else tuple(out[1:]))


def _check_like(api: str, arg: str, got: Sequence[Tensor], like: Sequence[Tensor],
                what: str) -> None:
    """Each of `got` has the shape of the matching `like` (a cotangent, a tangent)."""
    if len(got) != len(like) or any(tuple(g.shape) != tuple(t.shape)
                                    for g, t in zip(got, like)):
        raise ValueError(f"For '{api}', the '{arg}' should match the {what}: "
                         f"{[list(t.shape) for t in like]}, but got "
                         f"{[list(g.shape) for g in got]}.")


# -- vjp --------------------------------------------------------------------------------
def vjp(fn: Callable, *inputs: Any, weights: Any = None, has_aux: bool = False) -> tuple:
    """(fn(*inputs), vjp_fn) (as `mindspore.vjp`); with has_aux (fn's first output,
    vjp_fn, aux).

    `vjp_fn(*v)` takes one cotangent per output of fn (shaped like it) and returns the
    tuple of the inputs' gradients `J^T v`; with weights, (inputs' tuple, weights' tuple).
    """
    _check_tensors("vjp", "inputs", inputs)
    weights = _check_weights("vjp", weights)
    has_aux = _check_has_aux("vjp", has_aux)
    out = fn(*inputs)
    value, aux = _split_aux("vjp", out) if has_aux else (out, None)
    outputs = _check_tensors("vjp", "fn's outputs", value)
    grad_fn = _GradFunction("vjp", _first_output("vjp", fn) if has_aux else fn,
                            tuple(range(len(inputs))), weights, sens_param=True)

    def vjp_fn(*v: Any) -> Any:
        vs = _check_tensors("vjp", "v", v[0] if len(v) == 1 else v)
        _check_like("vjp", "v", vs, outputs, "outputs of 'fn'")
        return grad_fn(*inputs, vs if isinstance(value, (tuple, list)) else vs[0])
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


# -- jvp --------------------------------------------------------------------------------
class _Transposed:
    """`J v` of fn at some inputs, by the transpose trick: the gradient, with respect to the
    cotangent u, of `u -> J^T u` (a gradient function of fn), seeded with v."""

    def __init__(self, api: str, fn: Callable, n_inputs: int, n_outputs: int,
                 out_is_tuple: bool) -> None:
        self.n, self.k, self.out_is_tuple = n_inputs, n_outputs, out_is_tuple
        inner = _GradFunction(api, fn, tuple(range(n_inputs)), None, sens_param=True)

        def transposed(*args: Any) -> tuple:          # (*inputs, *u) -> J^T u
            u = args[n_inputs:]
            return inner(*args[:n_inputs], tuple(u) if out_is_tuple else u[0])
        transposed.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self.outer = _GradFunction(api, transposed,
                                   tuple(range(n_inputs, n_inputs + n_outputs)), None,
                                   sens_param=True)

    def __call__(self, inputs: Sequence[Tensor], u: Sequence[Tensor],
                 v: Sequence[Tensor]) -> tuple:
        """J v, one Tensor per output of fn (u: any cotangent, J^T u is linear in it)."""
        return self.outer(*inputs, *u, tuple(v))


def _ones(outputs: Sequence[Tensor]) -> list:
    return [OnesLike()(o) for o in outputs]


def jvp(fn: Callable, inputs: Any, v: Any, has_aux: bool = False) -> tuple:
    """(fn(*inputs), J v) (as `mindspore.jvp`); with has_aux (fn's first output, J v of it,
    aux). `inputs` and `v` are a Tensor or a tuple/list of Tensors, v shaped like inputs; the
    product has the structure of fn's (differentiated) output."""
    has_aux = _check_has_aux("jvp", has_aux)
    xs = _check_tensors("jvp", "inputs", inputs)
    vs = _check_tensors("jvp", "v", v)
    _check_like("jvp", "v", vs, xs, "inputs")
    out = fn(*xs)
    value, aux = _split_aux("jvp", out) if has_aux else (out, None)
    outputs = _check_tensors("jvp", "fn's outputs", value)
    out_is_tuple = isinstance(value, (tuple, list))
    target = _first_output("jvp", fn) if has_aux else fn
    product = _Transposed("jvp", target, len(xs), len(outputs), out_is_tuple)(
        xs, _ones(outputs), vs)
    product = tuple(product) if out_is_tuple else product[0]
    return (value, product, aux) if has_aux else (value, product)


# -- Jacobians ----------------------------------------------------------------------------
def _basis(t: Tensor) -> Tensor:
    """The one-hot Tensors shaped like t, one per element in row-major order, stacked:
    (t.size,) + t.shape."""
    return Tensor(np.eye(t.size, dtype=t.dtype.np_dtype).reshape((t.size,) + tuple(t.shape)))


def _zeros_like(t: Tensor) -> Tensor:
    return Tensor(np.zeros(t.shape, t.dtype.np_dtype))


def _arranged(blocks: list[list[Tensor]]) -> Any:
    """MindSpore's Jacobian structure from blocks[output][input]: one Tensor when there is
    one block, a flat tuple when there is one output or one input, else a tuple (per
    output) of tuples (per input)."""
    if len(blocks) == 1 and len(blocks[0]) == 1:
        return blocks[0][0]
    if len(blocks) == 1:
        return tuple(blocks[0])
    if len(blocks[0]) == 1:
        return tuple(b[0] for b in blocks)
    return tuple(tuple(b) for b in blocks)


def _positions(api: str, grad_position: Any, args: Sequence[Any]) -> tuple[int, ...]:
    positions = _check_positions(api, grad_position)
    if positions is None:
        raise TypeError(f"For '{api}', the 'grad_position' should be an int or a tuple of "
                        f"ints, but got None.")
    for p in positions:
        if p >= len(args) or not isinstance(args[p], Tensor):
            got = type(args[p]).__name__ if p < len(args) else f"only {len(args)} arguments"
            raise ValueError(f"For '{api}', the 'grad_position' {p} should name a Tensor "
                             f"argument, but got {got}.")
    return positions


class _Jacobian:
    """`jacrev` / `jacfwd`'s function: call it like fn."""

    def __init__(self, api: str, fn: Callable, grad_position: Any, has_aux: bool) -> None:
        if not callable(fn):
            raise TypeError(f"For '{api}', the 'fn' should be a Cell or a function, but got "
                            f"{type(fn).__name__}.")
        _check_positions(api, grad_position)
        self.api, self.fn, self.grad_position = api, fn, grad_position
        self.has_aux = _check_has_aux(api, has_aux)
        self.target = _first_output(api, fn) if self.has_aux else fn
        # the gradient functions by call structure: a compiled one is reused across calls
        self._made: dict[tuple, Any] = {}

    def _made_once(self, key: tuple, make: Callable[[], Any]) -> Any:
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = make()
        return made

    def __call__(self, *args: Any) -> Any:
        positions = _positions(self.api, self.grad_position, args)
        out = self.fn(*args)
        value, aux = _split_aux(self.api, out) if self.has_aux else (out, None)
        outputs = _check_tensors(self.api, "fn's outputs", value)
        blocks = self._blocks(args, positions, outputs, isinstance(value, (tuple, list)))
        jac = _arranged(blocks)
        return (jac, aux) if self.has_aux else jac

    def _blocks(self, args: Sequence[Any], positions: tuple, outputs: Sequence[Tensor],
                out_is_tuple: bool) -> list[list[Tensor]]:
        raise NotImplementedError


class _JacRev(_Jacobian):
    """Rows of J: the gradient of each output element (a one-hot cotangent)."""

    def _blocks(self, args, positions, outputs, out_is_tuple):
        grad_fn = self._made_once(positions, lambda: _GradFunction(
            self.api, self.target, positions, None, sens_param=True))
        zeros = [_zeros_like(o) for o in outputs]
        blocks = []
        for i, o in enumerate(outputs):
            def vjp_of(e: Tensor, i: int = i) -> tuple:
                sens = zeros[:i] + [e] + zeros[i + 1:]
                return grad_fn(*args, tuple(sens) if out_is_tuple else sens[0])
            rows = vmap(vjp_of)(_basis(o))            # per input: (o.size,) + input shape
            blocks.append([Reshape()(r, tuple(o.shape) + tuple(args[p].shape))
                           for r, p in zip(rows, positions)])
        return blocks


class _JacFwd(_Jacobian):
    """Columns of J: the jvp of each input element (a one-hot tangent)."""

    def _blocks(self, args, positions, outputs, out_is_tuple):
        tensors = [k for k, a in enumerate(args) if isinstance(a, Tensor)]
        if len(tensors) != len(args):
            raise TypeError(f"For '{self.api}', the arguments should be Tensors, but got "
                            f"{[type(a).__name__ for a in args]}.")
        key = (len(args), len(outputs), out_is_tuple)
        product = self._made_once(key, lambda: _Transposed(self.api, self.target, *key))
        u, zeros = _ones(outputs), [_zeros_like(a) for a in args]
        columns = []                   # per position, per output: o.shape + (input size,)
        for p in positions:
            def jvp_of(e: Tensor, p: int = p) -> tuple:
                return tuple(product(args, u, zeros[:p] + [e] + zeros[p + 1:]))
            columns.append(vmap(jvp_of, out_axes=-1)(_basis(args[p])))
        return [[Reshape()(columns[j][i], tuple(o.shape) + tuple(args[p].shape))
                 for j, p in enumerate(positions)] for i, o in enumerate(outputs)]


def jacrev(fn: Callable, grad_position: int | tuple = 0, has_aux: bool = False) -> Callable:
    """The Jacobian function of fn by reverse mode (as `mindspore.jacrev`): the vjp of
    every output element, one vjp mapped over the basis (vmap). Each block is shaped
    `output.shape + input.shape`; with has_aux the function returns (Jacobian of the first
    output, aux)."""
    return _JacRev("jacrev", fn, grad_position, has_aux)


def jacfwd(fn: Callable, grad_position: int | tuple = 0, has_aux: bool = False) -> Callable:
    """The Jacobian function of fn by forward products (as `mindspore.jacfwd`): the jvp of
    every input element, one jvp mapped over the basis (vmap); the same structure as
    `jacrev`."""
    return _JacFwd("jacfwd", fn, grad_position, has_aux)
