"""Mixed-precision training networks, as `mindspore.amp.build_train_network` and
`Model(amp_level=...)`.

A level picks three settings, each of which a keyword overrides: the type the network
computes in (`cast_model_type`, through `Cell.to_float`: the Parameters stay float32 and
get their gradients through the Casts), whether the normalization layers stay float32
(`keep_batchnorm_fp32`: BatchNorm and LayerNorm cells `to_float(float32)`), and the
loss-scale manager. O0: float32, nothing kept, no manager; O2: float16, norms kept,
DynamicLossScaleManager(); O3: float16, nothing kept, no manager; "auto" is MindSpore's
choice for the CPU, O0. A network computing in float16 has its output cast to float32
before the loss. O1 (a per-operator float16 list) is not implemented.
"""
from __future__ import annotations

from typing import Any

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.nn.cell import Cell
from msops.nn.loss_scale import TrainOneStepWithLossScaleCell
from msops.nn.mixed_precision import check_dst_type
from msops.nn.normalization import LayerNorm, _BatchNorm
from msops.nn.optim import Optimizer
from msops.nn.wrap import TrainOneStepCell, WithLossCell
from msops.train.loss_scale_manager import DynamicLossScaleManager, LossScaleManager

__all__ = ["build_train_network", "amp_config", "train_network_of", "LEVELS"]

#: the levels msops implements ("auto" is O0 on the CPU)
LEVELS = ("O0", "O2", "O3", "auto")
_KEYS = ("cast_model_type", "keep_batchnorm_fp32", "loss_scale_manager")


def amp_config(api: str, level: str, kwargs: dict) -> dict:
    """The settings of `level`, overridden by `kwargs` (checked; errors name `api`)."""
    if level not in LEVELS:
        raise ValueError(f"For '{api}', the 'amp_level' should be one of {list(LEVELS)} (O1's "
                         f"per-operator float16 list is not implemented), but got {level!r}.")
    half = level in ("O2", "O3")
    config = {"cast_model_type": mstype.float16 if half else mstype.float32,
              "keep_batchnorm_fp32": level == "O2",
              "loss_scale_manager": DynamicLossScaleManager() if level == "O2" else None}
    for key, value in kwargs.items():
        if key not in _KEYS:
            raise TypeError(f"For '{api}', got an unexpected argument '{key}'.")
        if key == "cast_model_type":
            check_dst_type(value, api)
        elif key == "keep_batchnorm_fp32":
            validator.check_bool(key, value, api)
        elif value is not None:
            validator.check_value_type(key, value, LossScaleManager, api)
        config[key] = value
    return config


def cast_network(network: Cell, config: dict) -> Cell:
    """`network` computing in the config's type (in place, as MindSpore), its normalization
    layers in float32 when kept."""
    dst = config["cast_model_type"]
    if dst == mstype.float32:
        return network
    network.to_float(dst)
    if config["keep_batchnorm_fp32"]:
        for _, cell in network.cells_and_names():
            if isinstance(cell, (_BatchNorm, LayerNorm)):
                cell.to_float(mstype.float32)
    return network


class _LossOfFloat32(WithLossCell):
    """loss_fn(float32(network(data)), label): the loss of a float16 network in float32."""

    def construct(self, data: Any, label: Any) -> Any:
        return self._loss_fn(ops.cast(self._backbone(data), mstype.float32), label)


def train_cell(network: Cell, optimizer: Optimizer,
               manager: LossScaleManager | None) -> Cell:
    """The training step: TrainOneStepCell, or with a loss-scale manager whose update cell
    checks overflow, TrainOneStepWithLossScaleCell (a manager without one: the fixed scale
    as TrainOneStepCell's sens, which the optimizer's `loss_scale` divides out)."""
    if manager is None:
        return TrainOneStepCell(network, optimizer)
    update_cell = manager.get_update_cell()
    if update_cell is None:
        return TrainOneStepCell(network, optimizer, manager.get_loss_scale())
    return TrainOneStepWithLossScaleCell(network, optimizer, update_cell)


def build_train_network(network: Cell, optimizer: Optimizer, loss_fn: Cell | None = None,
                        level: str = "O0", boost_level: str = "O0", **kwargs: Any) -> Cell:
    """The training step of `network` (with `loss_fn`, or returning the loss) at the mixed
    precision `level` ("O0", "O2", "O3", "auto"); `kwargs` `cast_model_type`,
    `keep_batchnorm_fp32` and `loss_scale_manager` override the level's settings. The
    network is cast in place. Returns the training cell, in training mode."""
    api = "build_train_network"
    validator.check_value_type("network", network, Cell, api)
    validator.check_value_type("optimizer", optimizer, Optimizer, api)
    if boost_level != "O0":
        raise ValueError(f"For '{api}', the 'boost_level' should be 'O0' (boost is not "
                         f"implemented in msops), but got {boost_level!r}.")
    step = train_network_of(network, optimizer, loss_fn, amp_config(api, level, kwargs))
    step.set_train(True)
    return step


def train_network_of(network: Cell, optimizer: Optimizer, loss_fn: Cell | None,
                     config: dict) -> Cell:
    """The training step for `amp_config`'s settings: the network cast (in place), the loss
    in float32 after a float16 network, the loss scale's step."""
    cast_network(network, config)
    if loss_fn is not None:
        network = (WithLossCell if config["cast_model_type"] == mstype.float32
                   else _LossOfFloat32)(network, loss_fn)
    return train_cell(network, optimizer, config["loss_scale_manager"])
