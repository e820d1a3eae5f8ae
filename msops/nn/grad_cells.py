"""Gradient wrapper Cells, as `mindspore.nn`: `Vjp`, `Jvp`, `ForwardValueAndGrad`.

Each wraps a network and calls the functional API (msops/autodiff.py,
msops/derivatives.py) in its construct, so it runs eagerly in PYNATIVE_MODE and is traced
into one graph in GRAPH_MODE like any Cell.
"""
from __future__ import annotations

from typing import Any, Callable

from msops.autodiff import _check_weights, _GradFunction
from msops.common.tensor import Tensor
from msops.derivatives import jvp
from msops.nn.cell import Cell

__all__ = ["Vjp", "Jvp", "ForwardValueAndGrad"]


def _check_fn(api: str, fn: Any) -> Callable:
    if not callable(fn):
        raise TypeError(f"For '{api}', the 'fn' should be a Cell or a function, but got "
                        f"{type(fn).__name__}.")
    return fn


class Vjp(Cell):
    """`Vjp(fn)(*inputs, v)`: (fn(*inputs), the tuple of the inputs' gradients J^T v); v is
    a Tensor, or a tuple of them for a tuple output (as `mindspore.nn.Vjp`)."""

    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = _check_fn("Vjp", fn)
        self._grads: dict[int, _GradFunction] = {}

    def construct(self, *args: Any) -> tuple:
        inputs, v = args[:-1], args[-1]
        grad_fn = self._grads.get(len(inputs))
        if grad_fn is None:
            grad_fn = self._grads[len(inputs)] = _GradFunction(
                "Vjp", self.fn, tuple(range(len(inputs))), None, sens_param=True,
                with_value=True)
        return grad_fn(*inputs, v)


class Jvp(Cell):
    """`Jvp(fn)(*inputs, v)`: (fn(*inputs), J v); v is a Tensor for one input, else a tuple
    shaped like the inputs (as `mindspore.nn.Jvp`)."""

    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = _check_fn("Jvp", fn)

    def construct(self, *args: Any) -> tuple:
        return jvp(self.fn, tuple(args[:-1]), args[-1])


class ForwardValueAndGrad(Cell):
    """`ForwardValueAndGrad(network, weights, get_all, get_by_list, sens_param)(*inputs)`:
    (the network's output, its gradients) from one forward (as
    `mindspore.nn.ForwardValueAndGrad`). The gradients are GradOperation's: the first
    input's by default; get_all: every Tensor input's; get_by_list: the weights'; both:
    (inputs', weights'). With sens_param the last input is the output's gradient."""

    def __init__(self, network: Callable, weights: Any = None, get_all: bool = False,
                 get_by_list: bool = False, sens_param: bool = False) -> None:
        super().__init__()
        for name, value in (("get_all", get_all), ("get_by_list", get_by_list),
                            ("sens_param", sens_param)):
            if not isinstance(value, bool):
                raise TypeError(f"For 'ForwardValueAndGrad', the '{name}' should be a bool, "
                                f"but got {type(value).__name__}.")
        if get_by_list and weights is None:
            raise TypeError("For 'ForwardValueAndGrad', the 'weights' should be given when "
                            "'get_by_list' is True, but got None.")
        self.network = _check_fn("ForwardValueAndGrad", network)
        self.weights = _check_weights("ForwardValueAndGrad", weights) if get_by_list else None
        self.get_all, self.get_by_list, self.sens_param = get_all, get_by_list, sens_param
        self._grads: dict[tuple, _GradFunction] = {}

    def construct(self, *inputs: Any) -> tuple:
        args = inputs[:-1] if self.sens_param else inputs
        if self.get_all:
            positions = tuple(k for k, a in enumerate(args) if isinstance(a, Tensor))
        else:
            positions = None if self.get_by_list else (0,)
        grad_fn = self._grads.get(positions)
        if grad_fn is None:
            grad_fn = self._grads[positions] = _GradFunction(
                "ForwardValueAndGrad", self.network, positions, self.weights,
                sens_param=self.sens_param, with_value=True,
                single_position=not self.get_all)
        return grad_fn(*inputs)
