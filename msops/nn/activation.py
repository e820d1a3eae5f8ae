"""Activation layers: GELU, FastGelu, Sigmoid, Tanh, Softmax, LogSoftmax, the ELU family and
the shrinkages (MindSpore's names and arguments); each wraps its primitive(s), and
`shard(((a, b, ...),))` shards them alike.
`ACTIVATIONS` maps the names `nn.Dense(activation=...)` accepts to these classes."""
from __future__ import annotations

import math
from typing import Any

from msops import ops
from msops.common import validator
from msops.nn.cell import Cell
from msops.ops.elementwise_func import check_hardtanh_range

__all__ = ["GELU", "FastGelu", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "ReLU6", "HSwish",
           "HSigmoid", "SiLU", "LeakyReLU", "ELU", "SeLU", "Softsign", "Mish", "SoftShrink",
           "HShrink", "LogSigmoid", "Hardtanh", "Tanhshrink"]


class _Wrapper(Cell):
    """A layer running one primitive `self.op` on its input: `primitive()` when the class
    names one (else its `__init__` sets `op`)."""

    primitive: type | None = None

    def __init__(self) -> None:
        super().__init__()
        if self.primitive is not None:
            self.op = self.primitive()

    def construct(self, x):
        return self.op(x)

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        self.op.shard(in_strategy, out_strategy)


class GELU(_Wrapper):
    """Gaussian error linear unit: `approximate=True` (default) is the tanh form
    (`ops.GeLU`); `approximate=False` the exact x * (1 + erf(x / sqrt(2))) / 2 (`ops.Erf`)."""

    def __init__(self, approximate: bool = True) -> None:
        super().__init__()
        self.approximate = validator.check_bool("approximate", approximate, self.cls_name)
        if approximate:
            self.op = ops.GeLU()
        else:
            self.erf, self.add = ops.Erf(), ops.Add()
            self.scale, self.half, self.mul = ops.Mul(), ops.Mul(), ops.Mul()

    def construct(self, x):
        if self.approximate:
            return self.op(x)
        # Python scalars take x's dtype
        erf = self.erf(self.scale(x, 1 / math.sqrt(2)))
        return self.mul(self.half(x, 0.5), self.add(erf, 1.0))

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        if self.approximate:
            self.op.shard(in_strategy, out_strategy)
            return
        if in_strategy is None:
            return
        s = in_strategy[0]
        self.erf.shard((s,))
        for scalar_op in (self.scale, self.half, self.add):
            scalar_op.shard((s, ()))
        self.mul.shard((s, s))

    def extend_repr(self) -> str:
        return f"approximate={self.approximate}"


class FastGelu(_Wrapper):
    """x * sigmoid(1.702 x) (`ops.FastGeLU`)."""

    primitive = ops.FastGeLU


class Sigmoid(_Wrapper):
    """1 / (1 + exp(-x)) (`ops.Sigmoid`)."""

    primitive = ops.Sigmoid


class Tanh(_Wrapper):
    """tanh(x) (`ops.Tanh`)."""

    primitive = ops.Tanh


class Softmax(_Wrapper):
    """softmax along `axis` (`ops.Softmax`)."""

    def __init__(self, axis: Any = -1) -> None:
        super().__init__()
        self.op = ops.Softmax(axis)


class LogSoftmax(_Wrapper):
    """log(softmax) along `axis` (`ops.LogSoftmax`)."""

    def __init__(self, axis: int = -1) -> None:
        super().__init__()
        self.op = ops.LogSoftmax(axis)


class ReLU6(_Wrapper):
    """min(max(x, 0), 6) (`ops.ReLU6`)."""

    primitive = ops.ReLU6


class HSwish(_Wrapper):
    """Hard swish x * relu6(x + 3) / 6 (`ops.HSwish`)."""

    primitive = ops.HSwish


class HSigmoid(_Wrapper):
    """Hard sigmoid relu6(x + 3) / 6 (`ops.HSigmoid`)."""

    primitive = ops.HSigmoid


class SiLU(Cell):
    """x * sigmoid(x) (`ops.Sigmoid`, `ops.Mul`); `shard(((a, b, ...),))` shards both alike."""

    def __init__(self) -> None:
        super().__init__()
        self.sigmoid, self.mul = ops.Sigmoid(), ops.Mul()

    def construct(self, x):
        return self.mul(x, self.sigmoid(x))

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        if in_strategy is None:
            return
        s = in_strategy[0]
        self.sigmoid.shard((s,))
        self.mul.shard((s, s))


class LeakyReLU(Cell):
    """x where x > 0, else alpha * x: max(alpha * x, x) for alpha <= 1, min otherwise (as
    MindSpore's); `shard(((a, b, ...),))` shards its Mul and Maximum / Minimum alike."""

    def __init__(self, alpha: float = 0.2) -> None:
        super().__init__()
        self.alpha = validator.check_value_type("alpha", alpha, (int, float), self.cls_name)
        if not math.isfinite(alpha):
            raise ValueError(f"For '{self.cls_name}', the 'alpha' should be a finite number, "
                             f"but got {alpha}.")
        self.scale = ops.Mul()
        self.pick = ops.Maximum() if alpha <= 1 else ops.Minimum()

    def construct(self, x):
        return self.pick(self.scale(x, self.alpha), x)

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        if in_strategy is None:
            return
        s = in_strategy[0]
        self.scale.shard((s, ()))
        self.pick.shard((s, s))

    def extend_repr(self) -> str:
        return f"alpha={self.alpha}"


class ELU(_Wrapper):
    """x where x > 0, else alpha * (exp(x) - 1) (`ops.Elu(alpha)`)."""

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self.op = ops.Elu(alpha)

    def extend_repr(self) -> str:
        return f"alpha={self.op.alpha}"


class SeLU(_Wrapper):
    """Scaled ELU with the self-normalising constants (`ops.SeLU`)."""

    primitive = ops.SeLU


class Softsign(_Wrapper):
    """x / (1 + |x|) (`ops.Softsign`)."""

    primitive = ops.Softsign


class Mish(_Wrapper):
    """x * tanh(softplus(x)) (`ops.Mish`)."""

    primitive = ops.Mish


class SoftShrink(_Wrapper):
    """x -+ lambd outside [-lambd, lambd], else 0 (`ops.SoftShrink(lambd)`)."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.op = ops.SoftShrink(lambd)

    def extend_repr(self) -> str:
        return f"lambd={self.op.lambd}"


class HShrink(_Wrapper):
    """x outside [-lambd, lambd], else 0 (`ops.HShrink(lambd)`)."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.op = ops.HShrink(lambd)

    def extend_repr(self) -> str:
        return f"lambd={self.op.lambd}"


class _Chain(Cell):
    """A layer of unary primitives and binary ones whose second input is x's own shape or a
    scalar: `shard(((a, b, ...),))` shards each alike (`_unary`, `_binary`, `_scalar`:
    the attribute names of each kind)."""

    _unary: tuple = ()
    _binary: tuple = ()
    _scalar: tuple = ()

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        if in_strategy is None:
            return
        s = in_strategy[0]
        for name in self._unary:
            getattr(self, name).shard((s,))
        for name in self._binary:
            getattr(self, name).shard((s, s))
        for name in self._scalar:
            getattr(self, name).shard((s, ()))


class LogSigmoid(_Chain):
    """log(sigmoid(x)) = -softplus(-x), without overflow (`ops.Neg`, `ops.Softplus`)."""

    _unary = ("neg_in", "softplus", "neg_out")

    def __init__(self) -> None:
        super().__init__()
        self.neg_in, self.softplus, self.neg_out = ops.Neg(), ops.Softplus(), ops.Neg()

    def construct(self, x):
        return self.neg_out(self.softplus(self.neg_in(x)))


class Hardtanh(_Chain):
    """x clipped to [min_val, max_val] (`ops.Maximum`, `ops.Minimum`)."""

    _scalar = ("lower", "upper")

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0) -> None:
        super().__init__()
        check_hardtanh_range(self.cls_name, min_val, max_val)
        self.min_val, self.max_val = min_val, max_val
        self.lower, self.upper = ops.Maximum(), ops.Minimum()

    def construct(self, x):
        return self.upper(self.lower(x, self.min_val), self.max_val)

    def extend_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class Tanhshrink(_Chain):
    """x - tanh(x) (`ops.Tanh`, `ops.Sub`)."""

    _unary = ("tanh",)
    _binary = ("sub",)

    def __init__(self) -> None:
        super().__init__()
        self.tanh, self.sub = ops.Tanh(), ops.Sub()

    def construct(self, x):
        return self.sub(x, self.tanh(x))


#: names accepted by `get_activation` (as MindSpore's), beside nn.layers' "relu"
ACTIVATIONS = {"gelu": GELU, "fast_gelu": FastGelu, "sigmoid": Sigmoid, "tanh": Tanh,
               "softmax": Softmax, "logsoftmax": LogSoftmax, "relu6": ReLU6,
               "hswish": HSwish, "hsigmoid": HSigmoid, "silu": SiLU, "leakyrelu": LeakyReLU,
               "elu": ELU, "softsign": Softsign, "mish": Mish, "logsigmoid": LogSigmoid,
               "softshrink": SoftShrink, "hshrink": HShrink, "hardtanh": Hardtanh,
               "tanhshrink": Tanhshrink}

