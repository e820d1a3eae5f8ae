"""Stacked recurrent layers, as `mindspore.nn`: RNN, LSTM and GRU (multi-layer, bidirectional,
batch_first, inter-layer dropout, per-sequence lengths).

The time loop is unrolled while tracing (the sequence length is static per compiled
signature) over the step cells of rnn_cells.py, so the layers are primitives only. Inside, a
layer works batch-major: its input (batch, time, features) is projected for every step at
once (one MatMul over its batch * time rows), unstacked along time, stepped, and stacked
back, so every op has the batch on dim 0 and the semi-auto-parallel data-parallel default
splits it with no communication in the forward (a time-major x is transposed once on the
way in and out; when its time dim divides by the device count, the default splits that
Transpose by time, and an AlltoAll moves the split to the batch).

`seq_length` (batch,) masks with Select: a step past a sequence's length keeps its state and
outputs zeros, so its final state is the one at its last valid step; the reverse direction
walks the steps backwards from the end, which skips the padding first and equals
MindSpore's ReverseSequence of each sequence's valid part.
"""
from __future__ import annotations

import warnings
import numpy as np

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor, check_tensor
from msops.nn.attention import check_float_dtype
from msops.nn.cell import Cell
from msops.nn.layers import Dropout
from msops.nn.rnn_cells import check_input_dtype, check_state, check_state_pair, make_step, \
    uniform_parameter

__all__ = ["RNN", "LSTM", "GRU"]

_KINDS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


class _RNNBase(Cell):
    """The stacked layers' arguments, Parameters and unrolled loop (see the module doc).

    Parameters, MindSpore's names (a checkpoint loads by them): weight_ih_l{k}
    (gates * hidden, input_size for k = 0 else num_directions * hidden), weight_hh_l{k}
    (gates * hidden, hidden), bias_ih_l{k}, bias_hh_l{k} (gates * hidden,), suffixed
    `_reverse` for the backward direction; all U(-1/sqrt(hidden), 1/sqrt(hidden)).
    """

    mode = "RNN_TANH"          # the step: "RNN_TANH", "RNN_RELU", "LSTM" or "GRU"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 has_bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, dtype: mstype.Type = mstype.float32) -> None:
        super().__init__()
        name = self.cls_name
        self.input_size = validator.check_positive_int(input_size, "input_size", name)
        self.hidden_size = validator.check_positive_int(hidden_size, "hidden_size", name)
        self.num_layers = validator.check_positive_int(num_layers, "num_layers", name)
        self.has_bias = validator.check_bool("has_bias", has_bias, name)
        self.batch_first = validator.check_bool("batch_first", batch_first, name)
        validator.check_value_type("dropout", dropout, float, name)
        if not 0 <= dropout < 1:
            raise ValueError(f"For '{name}', the 'dropout' should be in [0, 1) (the "
                             f"probability of zeroing an element), but got {dropout}.")
        self.dropout = dropout
        self.bidirectional = validator.check_bool("bidirectional", bidirectional, name)
        self.dtype = check_float_dtype(dtype, name)
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"For '{name}', the 'dropout' applies between stacked layers, so "
                          f"with num_layers=1 it does nothing (dropout={dropout}).")
        self.is_lstm = self.mode == "LSTM"
        self.num_directions = 2 if bidirectional else 1
        self.step = make_step(self.mode)
        self.dropout_op = Dropout(p=dropout)
        self._make_parameters()

        self.to_batch_major, self.to_time_major = ops.Transpose(), ops.Transpose()
        self.to_rows, self.from_rows = ops.Reshape(), ops.Reshape()
        self.project = ops.MatMul(transpose_b=True)
        self.add_bias, self.cast = ops.Add(), ops.Cast()
        self.unstack_time, self.stack_time = ops.Unstack(axis=1), ops.Stack(axis=1)
        self.unstack_state, self.stack_state = ops.Unstack(axis=0), ops.Stack(axis=0)
        self.concat_directions = ops.Concat(-1)
        self.reshape_lengths, self.valid = ops.Reshape(), ops.Greater()
        self.keep, self.zero_out, self.zeros_like = ops.Select(), ops.Select(), ops.ZerosLike()

    def _make_parameters(self) -> None:
        """Every direction's weights, registered kind by kind (MindSpore's order)."""
        rows, h = self.step.gates * self.hidden_size, self.hidden_size
        kinds = _KINDS if self.has_bias else _KINDS[:2]
        for kind in kinds:
            for layer in range(self.num_layers):
                for direction in range(self.num_directions):
                    width = self.input_size if layer == 0 else self.num_directions * h
                    shape = {"weight_ih": (rows, width), "weight_hh": (rows, h)}.get(kind,
                                                                                   (rows,))
                    setattr(self, self._param_name(kind, layer, direction),
                            uniform_parameter(shape, h, self.dtype))

    @staticmethod
    def _param_name(kind: str, layer: int, direction: int) -> str:
        return f"{kind}_l{layer}{'_reverse' if direction else ''}"

    # -- construct ---------------------------------------------------------------------------
    def construct(self, x, hx=None, seq_length=None):
        batch, steps, dtype = self._check_x(x)
        states = self._initial_states(hx, batch, dtype)
        masks = self._masks(seq_length, batch, steps)
        layer_in = x if self.batch_first else self.to_batch_major(x, (1, 0, 2))
        finals = []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(self.num_directions):
                k = layer * self.num_directions + direction
                state = tuple(s[k] for s in states) if self.is_lstm else states[0][k]
                out, state = self._direction(layer_in, state, masks, layer, direction, dtype)
                outs.append(out)
                finals.append(state)
            layer_in = outs[0] if len(outs) == 1 else self.concat_directions(tuple(outs))
            if self.training and self.dropout > 0 and layer < self.num_layers - 1:
                layer_in = self.dropout_op(layer_in)
        output = layer_in if self.batch_first else self.to_time_major(layer_in, (1, 0, 2))
        if self.is_lstm:
            return output, (self.stack_state(tuple(s[0] for s in finals)),
                            self.stack_state(tuple(s[1] for s in finals)))
        return output, self.stack_state(tuple(finals))

    def _direction(self, x, state, masks, layer: int, direction: int, dtype: mstype.Type):
        """One direction of one layer over x (batch, time, features) -> (its outputs (batch,
        time, hidden), its final state); the reverse direction steps from the last time."""
        w_ih, w_hh, b_ih, b_hh = (self._weight(kind, layer, direction, dtype)
                                  for kind in _KINDS)
        batch, steps = x.shape[0], x.shape[1]
        gi = self.project(self.to_rows(x, (batch * steps, x.shape[2])), w_ih)
        if b_ih is not None:
            gi = self.add_bias(gi, b_ih)
        gi = self.unstack_time(self.from_rows(gi, (batch, steps, gi.shape[1])))
        zero = None if masks is None else self.zeros_like(self.step.hidden(state))
        outs = [None] * len(gi)
        order = range(len(gi) - 1, -1, -1) if direction else range(len(gi))
        for t in order:
            new = self.step(gi[t], state, w_hh, b_hh)
            if masks is None:
                state, outs[t] = new, self.step.hidden(new)
                continue
            if self.is_lstm:
                state = tuple(self.keep(masks[t], n, s) for n, s in zip(new, state))
            else:
                state = self.keep(masks[t], new, state)
            outs[t] = self.zero_out(masks[t], self.step.hidden(new), zero)
        return self.stack_time(tuple(outs)), state

    def _weight(self, kind: str, layer: int, direction: int, dtype: mstype.Type):
        """A Parameter in the dtype of x (cast when they differ, as MindSpore); None for an
        absent bias."""
        p = getattr(self, self._param_name(kind, layer, direction), None)
        return p if p is None or p.dtype == dtype else self.cast(p, dtype)

    def _masks(self, seq_length, batch: int, steps: int) -> list | None:
        """Per step, (batch, 1) bool: True where the step is inside its sequence."""
        if seq_length is None:
            return None
        name = self.cls_name
        check_tensor(name, "seq_length", seq_length)
        validator.check_tensor_dtype_valid("seq_length", seq_length.dtype,
                                           (mstype.int32, mstype.int64), name)
        if tuple(seq_length.shape) != (batch,):
            raise ValueError(f"For '{name}', the 'seq_length' should be (batch_size={batch},) "
                             f"like 'x', but got shape {list(seq_length.shape)}.")
        times = Tensor(np.arange(steps, dtype=seq_length.dtype.np_dtype).reshape(1, steps, 1))
        valid = self.valid(self.reshape_lengths(seq_length, (batch, 1, 1)), times)
        return self.unstack_time(valid)

    # -- checks -----------------------------------------------------------------------------
    def _check_x(self, x) -> tuple[int, int, mstype.Type]:
        """(batch, time steps, dtype) of x."""
        name = self.cls_name
        dtype = check_input_dtype(name, "x", x)
        layout = "(batch_size, seq_len" if self.batch_first else "(seq_len, batch_size"
        if x.ndim != 3 or x.shape[2] != self.input_size or 0 in x.shape:
            raise ValueError(f"For '{name}', the 'x' should be {layout}, input_size="
                             f"{self.input_size}) with no empty dim, but got shape "
                             f"{list(x.shape)}.")
        batch, steps = (x.shape[0], x.shape[1]) if self.batch_first else (x.shape[1],
                                                                          x.shape[0])
        return batch, steps, dtype

    def _initial_states(self, hx, batch: int, dtype: mstype.Type) -> tuple:
        """hx as a tuple of per-(layer, direction) lists of (batch, hidden): (h,) or (h, c);
        zeros when hx is None."""
        count = self.num_layers * self.num_directions
        if hx is None:
            zeros = Tensor(np.zeros((batch, self.hidden_size), dtype.np_dtype))
            return tuple([zeros] * count for _ in range(2 if self.is_lstm else 1))
        name = self.cls_name
        if self.is_lstm:
            check_state_pair(name, hx)
            given = (("hx[0]", hx[0]), ("hx[1]", hx[1]))
        else:
            given = (("hx", hx),)
        expected = (f"(num_directions * num_layers={count}, batch_size={batch}, "
                    f"hidden_size={self.hidden_size})")
        for arg, h in given:
            check_state(name, arg, h, dtype, (count, batch, self.hidden_size), expected)
        return tuple(list(self.unstack_state(h)) for _, h in given)

    def extend_repr(self) -> str:
        return (f"input_size={self.input_size}, hidden_size={self.hidden_size}, "
                f"num_layers={self.num_layers}, has_bias={self.has_bias}, batch_first="
                f"{self.batch_first}, dropout={self.dropout}, bidirectional="
                f"{self.bidirectional}")


class RNN(_RNNBase):
    """`RNN(input_size, hidden_size, num_layers=1, has_bias=True, batch_first=False,
    dropout=0.0, bidirectional=False, dtype=float32, *, nonlinearity="tanh")`: stacked Elman
    layers, h_t = nonlinearity(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh).

    `construct(x, hx=None, seq_length=None)`: x (seq_len, batch, input_size) ((batch,
    seq_len, input_size) with batch_first), hx (num_directions * num_layers, batch, hidden)
    (zeros when None), seq_length (batch,) int32/int64 -> (output (seq_len, batch,
    num_directions * hidden), h_n like hx).
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 has_bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, dtype: mstype.Type = mstype.float32, *,
                 nonlinearity: str = "tanh") -> None:
        validator.check_string("nonlinearity", nonlinearity, ("tanh", "relu"), "RNN")
        super().__init__(input_size, hidden_size, num_layers, has_bias, batch_first, dropout,
                         bidirectional, dtype)
        self.nonlinearity = nonlinearity
        if nonlinearity == "relu":
            self.step = make_step("RNN_RELU")


class LSTM(_RNNBase):
    """`LSTM(input_size, hidden_size, num_layers=1, has_bias=True, batch_first=False,
    dropout=0.0, bidirectional=False, dtype=float32)`: stacked LSTM layers, gate rows i, f,
    g, o. `construct(x, hx=None, seq_length=None)` as RNN's with hx a tuple (h_0, c_0) ->
    (output, (h_n, c_n))."""

    mode = "LSTM"


class GRU(_RNNBase):
    """`GRU(input_size, hidden_size, num_layers=1, has_bias=True, batch_first=False,
    dropout=0.0, bidirectional=False, dtype=float32)`: stacked GRU layers, gate rows r, z, n.
    `construct(x, hx=None, seq_length=None)` as RNN's -> (output, h_n)."""

    mode = "GRU"
