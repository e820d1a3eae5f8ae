"""AdaFactor (as `mindspore.nn.AdaFactor`): Adam-like steps whose second moment of a matrix
is factored into running row and column means (sublinear memory), with a relative step
size and update clipping. See msops/nn/optim.py for what every optimizer takes and how it
runs."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops import ops
from msops.common import validator
from msops.common.tensor import Parameter, Tensor
from msops.graph.ir import Graph
from msops.nn.optim import LearningRate, Optimizer
from msops.parallel.layout import TensorLayout
from msops.parallel.param_layout import record_layout
from msops.parallel.slices import is_split

__all__ = ["AdaFactor"]


class AdaFactor(Optimizer):
    """AdaFactor, with t the step being taken (1 first) and g the gradient, centralized
    when its group says so and divided by `loss_scale` (weight decay is decoupled, below):
    lr_t = min(1e-6 * t if warmup_init else 1e-2, 1 / sqrt(t)) with relative_step, else
    the learning rate;  times max(eps[1], RMS(p)) with scale_parameter (both need a
    number `learning_rate`, as MindSpore: a list or schedule keeps its own rates);
    b = 1 - t**(-decay_rate);  u = g**2 + eps[0];
    a parameter of >= 2 dims: R = b * R + (1 - b) * mean(u, -1), C = b * C + (1 - b) *
    mean(u, -2), U = g / sqrt(R / mean(R, -1) (x) C);  else V = b * V + (1 - b) * u,
    U = g / sqrt(V);  U = lr_t * U / max(1, RMS(U) / clip_threshold);
    with beta1 > 0: M = beta1 * M + (1 - beta1) * U, U = M;
    p = p - weight_decay * lr_t * p - U   (the group's weight decay).
    State (all from 0): `exp_avg.<p>` (M, beta1 > 0), `exp_avg_sq_row.<p>` /
    `exp_avg_sq_col.<p>` (R, C) or `exp_avg_sq.<p>` (V, float16 with `compression`).

    For a parameter held in slices (model-parallel, the parallel optimizer's shards) R and
    C are held as the slices of its layout without the averaged dim, and the means and RMS
    norms over a split dim are completed over the ranks in a compiled step (the step's
    tail), so the update is the serial one."""

    _decay_in_gradient = False
    _layerwise = True

    def __init__(self, params: Sequence[Any], learning_rate: LearningRate | None = None,
                 eps: tuple = (1e-30, 1e-3), clip_threshold: float = 1.0,
                 decay_rate: float = 0.8, beta1: float | None = 0.9, weight_decay: float = 0.0,
                 scale_parameter: bool = True, relative_step: bool = True,
                 warmup_init: bool = False, compression: bool = False,
                 loss_scale: float = 1.0) -> None:
        name = type(self).__name__
        if learning_rate is not None and relative_step:
            raise ValueError(f"For '{name}', the 'learning_rate' should be None with "
                             f"'relative_step' True (the step sets the rate), but got "
                             f"{learning_rate!r:.100}.")
        if learning_rate is None and not relative_step:
            raise ValueError(f"For '{name}', the 'learning_rate' should be given with "
                             f"'relative_step' False, but got None.")
        if warmup_init and not relative_step:
            raise ValueError(f"For '{name}', 'warmup_init' True requires 'relative_step' "
                             f"True, but got relative_step=False.")
        # a number (or the relative step) may be scaled by RMS(p); a list or schedule not
        scale_lr = learning_rate is None or (isinstance(learning_rate, (int, float)) and
                                             not isinstance(learning_rate, bool))
        super().__init__(0.0 if learning_rate is None else learning_rate, params,
                         weight_decay, loss_scale)
        validator.check_value_type("eps", eps, (list, tuple), name)
        if len(eps) != 2:
            raise ValueError(f"For '{name}', the 'eps' should be 2 floats (eps1, eps2), but "
                             f"got {eps!r}.")
        for i, value in enumerate(eps):
            validator.check_value_type(f"eps{i}", value, (float,), name)
        validator.check_value_type("clip_threshold", clip_threshold, (float,), name)
        validator.check_value_type("decay_rate", decay_rate, (float,), name)
        beta1 = 0.0 if beta1 is None else beta1
        validator.check_value_type("beta1", beta1, (int, float), name)
        for arg, value in (("scale_parameter", scale_parameter), ("relative_step", relative_step),
                           ("warmup_init", warmup_init), ("compression", compression)):
            validator.check_bool(arg, value, name)
        if min(eps) < 0 or clip_threshold < 0 or beta1 < 0:
            raise ValueError(f"For '{name}', the 'eps', 'clip_threshold' and 'beta1' should "
                             f"be >= 0, but got eps={eps}, clip_threshold={clip_threshold}, "
                             f"beta1={beta1}.")
        if not 0.0 < decay_rate < 1.0:
            raise ValueError(f"For '{name}', the 'decay_rate' should be in (0, 1), but got "
                             f"{decay_rate}.")
        for decay in self._groups.weight_decay:
            if not 0.0 <= decay < 1.0:
                raise ValueError(f"For '{name}', the 'weight_decay' should be in [0, 1), but "
                                 f"got {decay}.")
        self.eps = (float(eps[0]), float(eps[1]))
        self.clip_threshold, self.decay_rate = float(clip_threshold), float(decay_rate)
        self.beta1 = float(beta1)
        self.scale_parameter = scale_parameter and scale_lr
        self.relative_step = relative_step and scale_lr
        self.warmup_init, self.compression = warmup_init, compression
        self.use_first_moment = self.beta1 > 0
        factored = [len(p.shape) >= 2 for p in self.parameters]
        self.__dict__["_factored"] = factored
        if self.use_first_moment:
            self.__dict__["exp_avg"] = self._state_like("exp_avg")
        whole = [p for p, f in zip(self.parameters, factored) if not f]
        squares = iter(self._state_like("exp_avg_sq", params=whole,
                                        dtype=np.float16 if compression else None))
        rows, cols, sq = [], [], []
        for p, f in zip(self.parameters, factored):
            dtype = p.asnumpy().dtype
            if f:      # whole; bind_state lays them out like a split parameter
                shape = tuple(p.shape)
                rows.append(self._whole_state(f"exp_avg_sq_row.{p.name}", shape[:-1], dtype))
                cols.append(self._whole_state(f"exp_avg_sq_col.{p.name}",
                                              shape[:-2] + shape[-1:], dtype))
                sq.append(None)
            else:
                rows.append(None)
                cols.append(None)
                sq.append(next(squares))
        self.__dict__["exp_avg_sq_row"] = tuple(rows)
        self.__dict__["exp_avg_sq_col"] = tuple(cols)
        self.__dict__["exp_avg_sq"] = tuple(sq)
        self._sqrt, self._pow = ops.Sqrt(), ops.Pow()
        self._maximum, self._minimum = ops.Maximum(), ops.Minimum()
        self._mean = ops.ReduceMean()
        self._mean_keep = ops.ReduceMean(keep_dims=True)
        self._expand = ops.ExpandDims()

    def _whole_state(self, name: str, shape: tuple, dtype: Any) -> Parameter:
        s = Parameter(Tensor(np.zeros(shape, dtype)), name, requires_grad=False)
        self._params[name] = s
        return s

    def bind_state(self, graph: Graph) -> None:
        """As Optimizer's; a factored parameter's row and column means are laid out as its
        layout without the dim each averages over (a parameter held split: its slices)."""
        super().bind_state(graph)
        nodes = {id(n.value): n for n in graph.parameters}
        for p, row, col in zip(self.parameters, self.exp_avg_sq_row, self.exp_avg_sq_col):
            like = nodes.get(id(p))
            if row is None or like is None or like.layout is None or not is_split(like.layout):
                continue                          # whole: read as any Parameter is
            rank = len(like.layout.tensor_shape)
            split = [d for d in range(rank) if like.layout.dim_parts(d) > 1]
            if len(split) > 1 and set(split) & {rank - 1, rank - 2}:
                raise NotImplementedError(
                    f"For '{self.cls_name}', the parameter '{p.name}' is held split along dims "
                    f"{split} ({like.layout}): its row and column means would reduce a split "
                    f"dim while keeping another split, which a step cannot combine. Split it "
                    f"along one dim, or only along dims before its last two.")
            for state, dropped in ((row, rank - 1), (col, rank - 2)):
                if id(state) in nodes:
                    continue
                lay = like.layout
                keep = [d for d in range(rank) if d != dropped]
                derived = TensorLayout(lay.device_matrix, tuple(lay.tensor_map[d] for d in keep),
                                       tuple(lay.tensor_shape[d] for d in keep))
                node = graph.add_parameter(state, derived.slice_shape)
                node.layout = derived
                record_layout(state, derived)

    def _step_values(self, lr: Any, shared: dict) -> dict:
        t = self._step_number()["t"]
        if self.relative_step:
            low = t * 1e-6 if self.warmup_init else 1e-2
            lr = self._minimum(low, 1.0 / self._sqrt(t))
        return {"lr": lr, "beta2t": 1.0 - self._pow(t, -self.decay_rate)}

    def _rms(self, x: Any) -> Any:
        return self._sqrt(self._mean(x * x))

    def _update(self, k: int, p: Parameter, g: Any, step: dict) -> Any:
        lr, b = step["lr"], step["beta2t"]
        if self.scale_parameter:
            lr = lr * self._maximum(self._rms(p), self.eps[1])
        u = g * g + self.eps[0]
        if self._factored[k]:
            row, col = self.exp_avg_sq_row[k], self.exp_avg_sq_col[k]
            row = self._assign(row, row * b + self._mean(u, -1) * (1.0 - b))
            col = self._assign(col, col * b + self._mean(u, -2) * (1.0 - b))
            r = self._expand(1.0 / self._sqrt(row / self._mean_keep(row, -1)), -1)
            update = r * self._expand(1.0 / self._sqrt(col), -2) * g
        else:
            sq = self.exp_avg_sq[k]
            if self.compression:       # float16 state: the update reads the rounded value
                v = self._assign(sq, self._cast(self._cast(sq, p.dtype) * b + u * (1.0 - b),
                                                sq.dtype))
                v = self._cast(v, p.dtype)
            else:
                v = self._assign(sq, sq * b + u * (1.0 - b))
            update = g / self._sqrt(v)
        update = update / self._maximum(self._rms(update) / self.clip_threshold, 1.0) * lr
        if self.use_first_moment:
            m = self.exp_avg[k]
            update = self._assign(m, m * self.beta1 + update * (1.0 - self.beta1))
        decay = self._groups.weight_decay[k]
        new = p - p * (lr * decay) if decay else p
        return new - update
