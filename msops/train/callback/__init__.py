"""Callbacks of `Model.train` / `Model.eval`, as `mindspore.train.callback`."""
from msops.train.callback._callback import Callback, CallbackParam, RunContext
from msops.train.callback._checkpoint import CheckpointConfig, ModelCheckpoint
from msops.train.callback._early_stop import EarlyStopping
from msops.train.callback._loss_monitor import LossMonitor
from msops.train.callback._time_monitor import TimeMonitor
from msops.train.callback._waited_ds_callback import WaitedDSCallback

__all__ = ["Callback", "RunContext", "CallbackParam", "LossMonitor", "TimeMonitor",
           "ModelCheckpoint", "CheckpointConfig", "EarlyStopping", "WaitedDSCallback"]
