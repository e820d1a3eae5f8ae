"""Parameter initial values, as `mindspore.common.initializer`: `initializer(init, shape,
dtype)` from a Tensor/ndarray, a number, an Initializer (`Normal(sigma=0.01, mean=0.0)`,
`Uniform(scale=0.07)`, `Constant(value)`, `One()`, `Zero()`, the fan-scaled
`XavierUniform`, `XavierNormal`, `HeUniform`, `HeNormal`, `VarianceScaling`, and
`TruncatedNormal`, `Identity`, `Orthogonal`, `Dirac`) or its name, any case ('normal',
'xavier_uniform', 'he_normal', 'truncatedNormal', ...).

Random values come from one seeded numpy Generator, so every rank of an SPMD program that
builds the same network in the same order gets the same weights; `set_seed` restarts it.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor

__all__ = ["initializer", "set_seed", "get_seed", "next_draw", "Initializer", "Normal", "Uniform",
           "Constant", "One", "Zero", "XavierUniform", "XavierNormal", "HeUniform", "HeNormal",
           "TruncatedNormal", "VarianceScaling", "Identity", "Orthogonal", "Dirac",
           "calculate_gain"]

_rng = [np.random.default_rng(0)]
_seed = [0]
_draws = [0]      # random ops drawn since the last set_seed (the counter of counter-based draws)


def set_seed(seed: int) -> None:
    """Restart the generator behind 'normal' initial values and the counter of random ops."""
    _rng[0] = np.random.default_rng(seed)
    _seed[0], _draws[0] = int(seed), 0


def get_seed() -> int:
    """The global seed (0 until `set_seed`)."""
    return _seed[0]


def next_draw() -> int:
    """The counter of the next random op's draw (0, 1, ... after each `set_seed`)."""
    _draws[0] += 1
    return _draws[0] - 1


class Initializer:
    """The base: `init_data(shape, np_dtype)` gives the values (a numpy array)."""

    def init_data(self, shape: tuple, np_dtype: Any) -> np.ndarray:
        raise NotImplementedError

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


class Normal(Initializer):
    """N(mean, sigma**2) values."""

    def __init__(self, sigma: float = 0.01, mean: float = 0.0) -> None:
        self.sigma, self.mean = sigma, mean

    def init_data(self, shape: tuple, np_dtype: Any) -> np.ndarray:
        return _rng[0].normal(self.mean, self.sigma, shape).astype(np_dtype)


class Uniform(Initializer):
    """U(-scale, scale) values."""

    def __init__(self, scale: float = 0.07) -> None:
        self.scale = scale

    def init_data(self, shape: tuple, np_dtype: Any) -> np.ndarray:
        return _rng[0].uniform(-self.scale, self.scale, shape).astype(np_dtype)


class Constant(Initializer):
    """Every value `value`."""

    def __init__(self, value: float) -> None:
        self.value = value

    def init_data(self, shape: tuple, np_dtype: Any) -> np.ndarray:
        return np.full(shape, self.value, np_dtype)


class One(Constant):
    """Ones."""

    def __init__(self) -> None:
        super().__init__(1)


class Zero(Constant):
    """Zeros."""

    def __init__(self) -> None:
        super().__init__(0)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain of a nonlinearity (as MindSpore's / torch's): 1 for linear,
    conv and sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope**2)) for
    leaky_relu (slope `param`, default 0.01), 3/4 for selu."""
    ones = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
            "conv_transpose3d", "sigmoid")
    if nonlinearity in ones:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"For 'calculate_gain', the 'param' of leaky_relu should be a "
                             f"number, but got {param!r}.")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"For 'calculate_gain', the 'nonlinearity' should be one of "
                     f"{list(ones) + ['tanh', 'relu', 'leaky_relu', 'selu']}, but got "
                     f"{nonlinearity!r}.")


def _fans(shape: tuple, name: str) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight: dims 1 and 0 times the receptive field (dims 2:)."""
    if len(shape) < 2:
        raise ValueError(f"For '{name}', 'fan_in' and 'fan_out' can not be computed for a "
                         f"tensor with fewer than 2 dimensions, but got shape {list(shape)}.")
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _fan(shape: tuple, mode: str, name: str) -> int:
    fan_in, fan_out = _fans(shape, name)
    fans = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}
    if mode not in fans:
        raise ValueError(f"For '{name}', the 'mode' should be one of {list(fans)}, but got "
                         f"{mode!r}.")
    return fans[mode]


def _positive_fan(fan: float, shape: tuple, name: str) -> float:
    if fan <= 0:
        raise ValueError(f"For '{name}', the fan of shape {list(shape)} should be > 0 (no "
                         f"scale comes from an empty dim), but got {fan}.")
    return fan


class XavierUniform(Initializer):
    """U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)) (Glorot)."""

    def __init__(self, gain: float = 1) -> None:
        self.gain = gain

    def init_data(self, shape: tuple, np_dtype: Any) -> np.ndarray:
        fan_in, fan_out = _fans(shape, "XavierUniform")
        bound = self.gain * math.sqrt(6.0 / _positive_fan(fan_in + fan_out, shape,
                                                          "XavierUniform"))
        return _rng[0].uniform(-bound, bound, shape).astype(np_dtype)


class XavierNormal(Initializer):
    """N(0, std**2), std = gain * sqrt(2 / (fan_in + fan_out)) (Glorot)."""

    def __init__(self, gain: float = 1) -> None:
        self.gain = gain

    def init_data(self, shape: tuple, np_dtype: Any) -> np.ndarray:
        fan_in, fan_out = _fans(shape, "XavierNormal")
        std = self.gain * math.sqrt(2.0 / _positive_fan(fan_in + fan_out, shape, "XavierNormal"))
        return _rng[0].normal(0.0, std, shape).astype(np_dtype)


class HeUniform(Initializer):
    """U(-b, b), b = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity,
    negative_slope), fan by `mode` ("fan_in" or "fan_out") (He / Kaiming)."""

    def __init__(self, negative_slope: float = 0, mode: str = "fan_in",
                 nonlinearity: str = "leaky_relu") -> None:
        self.negative_slope, self.mode, self.nonlinearity = negative_slope, mode, nonlinearity

    def init_data(self, shape: tuple, np_dtype: Any) -> np.ndarray:
        fan = _positive_fan(_fan(shape, self.mode, "HeUniform"), shape, "HeUniform")
        bound = calculate_gain(self.nonlinearity, self.negative_slope) * math.sqrt(3.0 / fan)
        return _rng[0].uniform(-bound, bound, shape).astype(np_dtype)


class HeNormal(Initializer):
    """N(0, std**2), std = gain / sqrt(fan) (He / Kaiming; arguments as HeUniform)."""

    def __init__(self, negative_slope: float = 0, mode: str = "fan_in",
                 nonlinearity: str = "leaky_relu") -> None:
        self.negative_slope, self.mode, self.nonlinearity = negative_slope, mode, nonlinearity

    def init_data(self, shape: tuple, np_dtype: Any) -> np.ndarray:
        fan = _positive_fan(_fan(shape, self.mode, "HeNormal"), shape, "HeNormal")
        std = calculate_gain(self.nonlinearity, self.negative_slope) / math.sqrt(fan)
        return _rng[0].normal(0.0, std, shape).astype(np_dtype)


def _truncated_normal(name: str, shape: tuple, mean: float, sigma: float, a: float,
                      b: float) -> np.ndarray:
    """N(mean, sigma**2) draws, those outside [a, b] drawn again until none is."""
    if not (sigma > 0 and a < b):
        raise ValueError(f"For '{name}', the 'sigma' should be > 0 and 'a' < 'b', but got "
                         f"sigma={sigma}, a={a}, b={b}.")
    phi = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    if phi((b - mean) / sigma) - phi((a - mean) / sigma) < 1e-4:
        raise ValueError(f"For '{name}', [a, b] = [{a}, {b}] should hold a fair share of "
                         f"N({mean}, {sigma}**2), but it holds less than 1e-4 of it.")
    out = _rng[0].normal(mean, sigma, shape)
    bad = (out < a) | (out > b)
    while bad.any():
        out[bad] = _rng[0].normal(mean, sigma, int(bad.sum()))
        bad = (out < a) | (out > b)
    return out


class TruncatedNormal(Initializer):
    """N(mean, sigma**2) restricted to [a, b] (absolute bounds, as MindSpore 2.x)."""

    def __init__(self, sigma: float = 0.01, mean: float = 0.0, a: float = -2.0,
                 b: float = 2.0) -> None:
        self.sigma, self.mean, self.a, self.b = sigma, mean, a, b

    def init_data(self, shape: tuple, np_dtype: Any) -> np.ndarray:
        return _truncated_normal("TruncatedNormal", shape, self.mean, self.sigma, self.a,
                                 self.b).astype(np_dtype)


class VarianceScaling(Initializer):
    """Values of variance scale / fan (fan by `mode`: "fan_in", "fan_out", "fan_avg"):
    `distribution` "truncated_normal" (N(0, s**2) cut at 2s, s = sqrt(scale / fan) /
    0.87962566103423978 so the cut values keep that variance), "untruncated_normal" or
    "uniform" (U(-sqrt(3 * scale / fan), ...))."""

    def __init__(self, scale: float = 1.0, mode: str = "fan_in",
                 distribution: str = "truncated_normal") -> None:
        if not scale > 0:
            raise ValueError(f"For 'VarianceScaling', the 'scale' should be > 0, but got "
                             f"{scale}.")
        kinds = ("truncated_normal", "untruncated_normal", "uniform")
        if distribution not in kinds:
            raise ValueError(f"For 'VarianceScaling', the 'distribution' should be one of "
                             f"{list(kinds)}, but got {distribution!r}.")
        self.scale, self.mode, self.distribution = scale, mode, distribution

    def init_data(self, shape: tuple, np_dtype: Any) -> np.ndarray:
        fan = _positive_fan(_fan(shape, self.mode, "VarianceScaling"), shape, "VarianceScaling")
        variance = self.scale / fan
        if self.distribution == "uniform":
            bound = math.sqrt(3.0 * variance)
            return _rng[0].uniform(-bound, bound, shape).astype(np_dtype)
        if self.distribution == "untruncated_normal":
            return _rng[0].normal(0.0, math.sqrt(variance), shape).astype(np_dtype)
        s = math.sqrt(variance) / 0.87962566103423978
        return _truncated_normal("VarianceScaling", shape, 0.0, s, -2 * s, 2 * s).astype(np_dtype)


class Identity(Initializer):
    """The identity matrix (2-D shapes only; ones on the main diagonal of a rectangle)."""

    def init_data(self, shape: tuple, np_dtype: Any) -> np.ndarray:
        if len(shape) != 2:
            raise ValueError(f"For 'Identity', the shape should be 2-D, but got "
                             f"{list(shape)}.")
        return np.eye(*shape, dtype=np_dtype)


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix times `gain`, of shape (dim 0, the other dims' product):
    its rows (or columns, when there are fewer) are orthonormal."""

    def __init__(self, gain: float = 1.0) -> None:
        self.gain = gain

    def init_data(self, shape: tuple, np_dtype: Any) -> np.ndarray:
        if len(shape) < 2:
            raise ValueError(f"For 'Orthogonal', the shape should have at least 2 dims, but "
                             f"got {list(shape)}.")
        rows, cols = shape[0], math.prod(shape[1:])
        flat = _rng[0].normal(0.0, 1.0, (max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(flat)
        q = q * np.sign(np.diag(r))               # the unique Q with a positive R diagonal
        q = q.T if rows < cols else q
        return (self.gain * q).reshape(shape).astype(np_dtype)


class Dirac(Initializer):
    """A convolution weight (3-5 dims: out, in, *kernel) that passes input channel i to
    output channel i of each of its `groups`: one 1 at the kernel's centre."""

    def __init__(self, groups: int = 1) -> None:
        self.groups = groups

    def init_data(self, shape: tuple, np_dtype: Any) -> np.ndarray:
        if len(shape) not in (3, 4, 5) or self.groups < 1 or shape[0] % self.groups:
            raise ValueError(f"For 'Dirac', the shape should have 3 to 5 dims and dim 0 a "
                             f"multiple of groups {self.groups}, but got {list(shape)}.")
        out = np.zeros(shape, np_dtype)
        per_group = shape[0] // self.groups
        centre = tuple(k // 2 for k in shape[2:])
        for g in range(self.groups):
            for i in range(min(per_group, shape[1])):
                out[(g * per_group + i, i) + centre] = 1
        return out


_NAMED = {"normal": Normal, "uniform": Uniform, "ones": One, "zeros": Zero,
          "xavier_uniform": XavierUniform, "xavieruniform": XavierUniform,
          "xavier_normal": XavierNormal, "xaviernormal": XavierNormal,
          "he_uniform": HeUniform, "heuniform": HeUniform, "he_normal": HeNormal,
          "henormal": HeNormal, "truncatednormal": TruncatedNormal,
          "variancescaling": VarianceScaling, "identity": Identity, "orthogonal": Orthogonal,
          "dirac": Dirac}


def initializer(init: Any, shape: Sequence[int], dtype: mstype.Type = mstype.float32,
                arg: str = "init", prim_name: str | None = None) -> Tensor:
    """A Tensor of `shape` and `dtype` from `init` (ValueError if a given value's shape differs)."""
    np_dtype = mstype.dtype_to_nptype(dtype)
    shape = tuple(shape)
    if isinstance(init, (Tensor, np.ndarray)):
        value = np.asarray(init.asnumpy() if isinstance(init, Tensor) else init)
        if value.shape != shape:
            raise ValueError(f"For '{prim_name}', the shape of '{arg}' should be {list(shape)}, "
                             f"but got {list(value.shape)}.")
        return Tensor(value.astype(np_dtype))
    if isinstance(init, (int, float)) and not isinstance(init, bool):
        init = Constant(init)
    elif isinstance(init, str) and init.lower() in _NAMED:
        init = _NAMED[init.lower()]()
    if isinstance(init, Initializer):
        return Tensor(init.init_data(shape, np_dtype))
    raise ValueError(f"For '{prim_name}', the '{arg}' should be a Tensor, a numpy array, a "
                     f"number, an Initializer or one of {sorted(_NAMED)}, but got {init!r}.")
