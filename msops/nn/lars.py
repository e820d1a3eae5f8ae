"""LARS (as `mindspore.nn.LARS`): a wrapper that rescales each gradient by a layer-wise
trust ratio before the optimizer it wraps updates with it. See msops/nn/layer_norms.py for
how the norms stay whole in a parallel step."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from msops import ops
from msops.common import validator
from msops.common.tensor import Parameter
from msops.nn.cell import Cell
from msops.nn.layer_norms import both_positive, norm, ratio_where
from msops.nn.optim import Optimizer, check_non_negative
from msops.ops._dispatch import _prim
from msops.pipeline import CompileCache
from msops.primitives.elementwise_ops import Greater

__all__ = ["LARS"]


def _default_filter(param: Parameter) -> bool:
    return "LayerNorm" not in param.name and "bias" not in param.name


class LARS(Optimizer):
    """LARS around `optimizer` (its parameters, learning rate, global step and state are
    the wrapped optimizer's). For a parameter p that `lars_filter(p)` accepts, with
    g = gradient / loss_scale and wd = the optimizer's weight decay of p / loss_scale:
    ratio = coefficient * ||p|| / (||g|| + wd * ||p|| + epsilon)  (1 when a norm is 0);
    with `use_clip`, ratio = min(ratio / lr, 1), lr this step's rate of p;
    the optimizer then updates p from ratio * (g + wd * p). Other parameters pass
    g unchanged. As MindSpore's, the wrapper takes the optimizer's weight decay and
    loss scale over: the wrapped optimizer applies neither afterwards (so parameters the
    filter refuses are not decayed); it still centralizes gradients of groups that say so."""

    _layerwise = True

    def __init__(self, optimizer: Optimizer, epsilon: float = 1e-05, coefficient: float = 0.001,
                 use_clip: bool = False,
                 lars_filter: Callable[[Parameter], bool] = _default_filter) -> None:
        Cell.__init__(self, auto_prefix=False)
        name = self.cls_name
        if not isinstance(optimizer, Optimizer) or isinstance(optimizer, LARS):
            raise TypeError(f"For '{name}', the 'optimizer' should be an Optimizer (not a LARS), "
                            f"but got {type(optimizer).__name__}.")
        epsilon = check_non_negative(name, "epsilon", epsilon, positive=True)
        coefficient = check_non_negative(name, "coefficient", coefficient, positive=True)
        validator.check_bool("use_clip", use_clip, name)
        if not callable(lars_filter):
            raise TypeError(f"For '{name}', the 'lars_filter' should be a callable of a "
                            f"Parameter, but got {type(lars_filter).__name__}.")
        self.opt = optimizer
        self._cast = ops.Cast()
        self.epsilon, self.coefficient, self.use_clip = epsilon, coefficient, use_clip
        groups = optimizer._groups
        # the wrapped optimizer's own state and learning rate drive the update
        for shared in ("parameters", "_groups", "_mirrors", "_rates", "_dynamic_lr",
                       "global_step", "learning_rate"):
            self.__dict__[shared] = getattr(optimizer, shared)
        self.__dict__["_compiled"] = CompileCache(self._compile_update)
        self.lars_flag = tuple(bool(lars_filter(p)) for p in self.parameters)
        self.loss_scale = optimizer.loss_scale
        self.__dict__["_decay"] = [d / optimizer.loss_scale for d in groups.weight_decay]
        self.weight_decay = optimizer.weight_decay
        groups.weight_decay = [0.0] * len(groups.weight_decay)
        optimizer.weight_decay, optimizer.loss_scale = 0.0, 1.0

    def construct(self, gradients: Sequence[Any]) -> bool:
        """Each gradient rescaled (ops only), then the wrapped optimizer's update."""
        grads = []
        for k, (p, g) in enumerate(zip(self.parameters, self._check_gradients(gradients))):
            if self.loss_scale != 1.0:
                g = g * (1.0 / self.loss_scale)
            if self.lars_flag[k]:
                g = self._lars(k, p, g)
            grads.append(g)
        return self.opt.construct(tuple(grads))

    def _lars(self, k: int, p: Parameter, g: Any) -> Any:
        decay = self._decay[k]
        w_norm, g_norm = norm(p), norm(g)
        ratio = ratio_where(both_positive(w_norm, g_norm), w_norm * self.coefficient,
                            g_norm + w_norm * decay + self.epsilon)
        if self.use_clip:                 # min(ratio / lr, 1); 1 at lr = 0 (no 0-division)
            lr = self._as(self._rates[self._groups.lr_index[k]], p.dtype)
            ratio = ratio_where(_prim(Greater)(lr, ratio), ratio, lr)
        return ratio * (g + p * decay if decay else g)
