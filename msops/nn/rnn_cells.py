"""Recurrent cells, as `mindspore.nn`: RNNCell, LSTMCell and GRUCell (one time step), and the
gate math they share with nn.RNN / nn.LSTM / nn.GRU (rnns.py), which unroll it over time.

A step is written with primitives only (MatMul, Add, Split, Sigmoid, Tanh/ReLU, Mul, Sub), so
it traces, differentiates and shards with no rule of its own. Gate orders are MindSpore's
(and PyTorch's): LSTM rows i, f, g, o; GRU rows r, z, n with
n = tanh(W_in x + b_in + r * (W_hn h + b_hn)) and h' = (1 - z) * n + z * h.
"""
from __future__ import annotations

import math
from typing import Any

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.initializer import Uniform
from msops.common.tensor import Parameter, check_tensor
from msops.nn.attention import check_float_dtype
from msops.nn.cell import Cell
from msops.nn.initializer import initializer

__all__ = ["RNNCell", "LSTMCell", "GRUCell"]

#: x and hx dtypes the recurrent layers accept (MindSpore's float16 and float32, and float64).
INPUT_DTYPES = (mstype.float16, mstype.float32, mstype.float64)


def check_input_dtype(name: str, arg: str, t: Any) -> mstype.Type:
    """`t` a Tensor of a float dtype the recurrent layers compute in (TypeError otherwise)."""
    check_tensor(name, arg, t)
    return validator.check_tensor_dtype_valid(arg, t.dtype, INPUT_DTYPES, name)


def check_state(name: str, arg: str, h: Any, dtype: mstype.Type, shape: tuple,
                expected: str) -> None:
    """A given state `h`: a Tensor of x's `dtype` (TypeError) and of `shape` (ValueError;
    `expected` spells it with the argument names)."""
    check_input_dtype(name, arg, h)
    if h.dtype != dtype:
        raise TypeError(f"For '{name}', the dtype of '{arg}' should be the dtype of 'x' "
                        f"{dtype}, but got {h.dtype}.")
    if tuple(h.shape) != tuple(shape):
        raise ValueError(f"For '{name}', the '{arg}' should be {expected}, but got shape "
                         f"{list(h.shape)}.")


def uniform_parameter(shape: tuple, hidden_size: int, dtype: mstype.Type) -> Parameter:
    """A Parameter of U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) values, MindSpore's
    initialisation of every recurrent weight and bias (drawn from the `set_seed` stream)."""
    return Parameter(initializer(Uniform(1 / math.sqrt(hidden_size)), shape, dtype))


# -- the gate math of one step: (gi, state, w_hh, b_hh) -> new state -------------------------
class _Step(Cell):
    """One time step given the input projection gi = x W_ih^T + b_ih (batch, gates * hidden):
    `construct(gi, state, w_hh, b_hh)` -> the new state; `hidden(state)` is its h."""

    gates = 1

    def __init__(self) -> None:
        super().__init__()
        self.project = ops.MatMul(transpose_b=True)
        self.add_bias, self.add = ops.Add(), ops.Add()

    def recurrent(self, h, w_hh, b_hh):
        """h W_hh^T + b_hh (batch, gates * hidden)."""
        gh = self.project(h, w_hh)
        return gh if b_hh is None else self.add_bias(gh, b_hh)

    @staticmethod
    def hidden(state):
        return state


class _ElmanStep(_Step):
    """h' = activation(gi + h W_hh^T + b_hh), activation tanh or relu."""

    def __init__(self, nonlinearity: str) -> None:
        super().__init__()
        self.activation = ops.Tanh() if nonlinearity == "tanh" else ops.ReLU()

    def construct(self, gi, h, w_hh, b_hh):
        return self.activation(self.add(gi, self.recurrent(h, w_hh, b_hh)))


class _LSTMStep(_Step):
    """(h, c) -> (o * tanh(c'), c') with c' = f * c + i * g; gate rows i, f, g, o."""

    gates = 4

    def __init__(self) -> None:
        super().__init__()
        self.split = ops.Split(1, 4)
        self.sigmoid, self.tanh, self.tanh_c = ops.Sigmoid(), ops.Tanh(), ops.Tanh()
        self.mul, self.add_c = ops.Mul(), ops.Add()

    def construct(self, gi, state, w_hh, b_hh):
        h, c = state
        i, f, g, o = self.split(self.add(gi, self.recurrent(h, w_hh, b_hh)))
        i, f, o, g = self.sigmoid(i), self.sigmoid(f), self.sigmoid(o), self.tanh(g)
        c = self.add_c(self.mul(f, c), self.mul(i, g))
        return self.mul(o, self.tanh_c(c)), c

    @staticmethod
    def hidden(state):
        return state[0]


class _GRUStep(_Step):
    """h' = n + z * (h - n), r and z sigmoids of the summed r and z rows, n = tanh(gi_n +
    r * gh_n) (the reset gate scales the recurrent projection, bias included)."""

    gates = 3

    def __init__(self) -> None:
        super().__init__()
        self.split_i, self.split_h = ops.Split(1, 3), ops.Split(1, 3)
        self.sigmoid, self.tanh = ops.Sigmoid(), ops.Tanh()
        self.mul, self.sub = ops.Mul(), ops.Sub()

    def construct(self, gi, h, w_hh, b_hh):
        i_r, i_z, i_n = self.split_i(gi)
        h_r, h_z, h_n = self.split_h(self.recurrent(h, w_hh, b_hh))
        r = self.sigmoid(self.add(i_r, h_r))
        z = self.sigmoid(self.add(i_z, h_z))
        n = self.tanh(self.add(i_n, self.mul(r, h_n)))
        return self.add(n, self.mul(z, self.sub(h, n)))


def make_step(mode: str) -> _Step:
    """The step cell of `mode`: "RNN_TANH", "RNN_RELU", "LSTM" or "GRU"."""
    if mode == "LSTM":
        return _LSTMStep()
    if mode == "GRU":
        return _GRUStep()
    return _ElmanStep("tanh" if mode == "RNN_TANH" else "relu")


# -- the cells ----------------------------------------------------------------------------------
class _RNNCellBase(Cell):
    """What the three cells share: arguments, the Parameters weight_ih (gates * hidden,
    input_size), weight_hh (gates * hidden, hidden), bias_ih and bias_hh (gates * hidden,),
    and the input projection; the subclass checks `hx`."""

    def __init__(self, input_size: int, hidden_size: int, has_bias: bool, mode: str,
                 dtype: mstype.Type) -> None:
        super().__init__()
        name = self.cls_name
        self.input_size = validator.check_positive_int(input_size, "input_size", name)
        self.hidden_size = validator.check_positive_int(hidden_size, "hidden_size", name)
        self.has_bias = validator.check_bool("has_bias", has_bias, name)
        self.dtype = check_float_dtype(dtype, name)
        self.step = make_step(mode)
        rows = self.step.gates * hidden_size
        self.weight_ih = uniform_parameter((rows, input_size), hidden_size, dtype)
        self.weight_hh = uniform_parameter((rows, hidden_size), hidden_size, dtype)
        if has_bias:
            self.bias_ih = uniform_parameter((rows,), hidden_size, dtype)
            self.bias_hh = uniform_parameter((rows,), hidden_size, dtype)
        else:
            self.bias_ih = self.bias_hh = None
        self.project = ops.MatMul(transpose_b=True)
        self.add_bias, self.cast = ops.Add(), ops.Cast()

    def _check_x(self, x) -> tuple[int, mstype.Type]:
        """(batch, dtype) of x (batch, input_size)."""
        dtype = check_input_dtype(self.cls_name, "x", x)
        if x.ndim != 2 or x.shape[1] != self.input_size:
            raise ValueError(f"For '{self.cls_name}', the 'x' should be (batch_size, "
                             f"input_size={self.input_size}), but got shape {list(x.shape)}.")
        return x.shape[0], dtype

    def _check_h(self, arg: str, h, batch: int, dtype: mstype.Type) -> None:
        check_state(self.cls_name, arg, h, dtype, (batch, self.hidden_size),
                    f"(batch_size={batch}, hidden_size={self.hidden_size})")

    def _weights(self, dtype: mstype.Type) -> tuple:
        """The Parameters in the dtype of x (cast when they differ, as MindSpore's layers)."""
        params = (self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return tuple(p if p is None or p.dtype == dtype else self.cast(p, dtype)
                     for p in params)

    def _run(self, x, state, dtype: mstype.Type):
        w_ih, w_hh, b_ih, b_hh = self._weights(dtype)
        gi = self.project(x, w_ih)
        if b_ih is not None:
            gi = self.add_bias(gi, b_ih)
        return self.step(gi, state, w_hh, b_hh)

    def extend_repr(self) -> str:
        return (f"input_size={self.input_size}, hidden_size={self.hidden_size}, "
                f"has_bias={self.has_bias}")


class RNNCell(_RNNCellBase):
    """`RNNCell(input_size, hidden_size, has_bias=True, nonlinearity="tanh", dtype=float32)`:
    `construct(x, hx)`, x (batch, input_size), hx (batch, hidden_size) ->
    h' = nonlinearity(x W_ih^T + b_ih + hx W_hh^T + b_hh) (batch, hidden_size)."""

    def __init__(self, input_size: int, hidden_size: int, has_bias: bool = True,
                 nonlinearity: str = "tanh", dtype: mstype.Type = mstype.float32) -> None:
        validator.check_string("nonlinearity", nonlinearity, ("tanh", "relu"),
                               type(self).__name__)
        super().__init__(input_size, hidden_size, has_bias,
                         "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", dtype)
        self.nonlinearity = nonlinearity

    def construct(self, x, hx):
        batch, dtype = self._check_x(x)
        self._check_h("hx", hx, batch, dtype)
        return self._run(x, hx, dtype)


class LSTMCell(_RNNCellBase):
    """`LSTMCell(input_size, hidden_size, has_bias=True, dtype=float32)`: `construct(x, hx)`,
    x (batch, input_size), hx a tuple (h, c) of (batch, hidden_size) -> (h', c')."""

    def __init__(self, input_size: int, hidden_size: int, has_bias: bool = True,
                 dtype: mstype.Type = mstype.float32) -> None:
        super().__init__(input_size, hidden_size, has_bias, "LSTM", dtype)

    def construct(self, x, hx):
        batch, dtype = self._check_x(x)
        check_state_pair(self.cls_name, hx)
        self._check_h("hx[0]", hx[0], batch, dtype)
        self._check_h("hx[1]", hx[1], batch, dtype)
        return self._run(x, tuple(hx), dtype)


class GRUCell(_RNNCellBase):
    """`GRUCell(input_size, hidden_size, has_bias=True, dtype=float32)`: `construct(x, hx)`,
    x (batch, input_size), hx (batch, hidden_size) -> h' (batch, hidden_size)."""

    def __init__(self, input_size: int, hidden_size: int, has_bias: bool = True,
                 dtype: mstype.Type = mstype.float32) -> None:
        super().__init__(input_size, hidden_size, has_bias, "GRU", dtype)

    def construct(self, x, hx):
        batch, dtype = self._check_x(x)
        self._check_h("hx", hx, batch, dtype)
        return self._run(x, hx, dtype)


def check_state_pair(name: str, hx: Any) -> None:
    """An LSTM state: a tuple (h, c) (TypeError otherwise, as MindSpore)."""
    if not isinstance(hx, (tuple, list)):
        raise TypeError(f"For '{name}', the 'hx' should be a tuple (h, c), but got "
                        f"{type(hx).__name__}.")
    if len(hx) != 2:
        raise TypeError(f"For '{name}', the length of 'hx' should be 2, but got {len(hx)}.")
