"""Callbacks of `Model.train` / `Model.eval`, as `mindspore.train.callback`."""
from msops.train.callback._callback import Callback, CallbackParam, RunContext
from msops.train.callback._checkpoint import CheckpointConfig, ModelCheckpoint
from msops.train.callback._early_stop import EarlyStopping
from msops.train.callback._loss_monitor import LossMonitor
from msops.train.callback._time_monitor import TimeMonitor
from msops.train.callback._history import History
from msops.train.callback._lambda_callback import LambdaCallback
from msops.train.callback._lr_scheduler import LearningRateScheduler
from msops.train.callback._reduce_lr_on_plateau import ReduceLROnPlateau
from msops.train.callback._on_request_exit import OnRequestExit
from msops.train.callback._backup_restore import BackupAndRestore
from msops.train.callback._waited_ds_callback import WaitedDSCallback

__all__ = ["Callback", "RunContext", "CallbackParam", "LossMonitor", "TimeMonitor",
           "ModelCheckpoint", "CheckpointConfig", "EarlyStopping", "WaitedDSCallback"]
__all__ += ["History", "LambdaCallback", "LearningRateScheduler", "ReduceLROnPlateau",
            "OnRequestExit", "BackupAndRestore"]
