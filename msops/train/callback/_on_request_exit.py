"""OnRequestExit: on a signal (SIGTERM by default), save a checkpoint and stop training
cleanly after the current step (as `mindspore.train.OnRequestExit`)."""
from __future__ import annotations

import json
import os
import signal
from typing import Any

import numpy as np

from msops.common import validator
from msops.common.tensor import Tensor
from msops.communication import get_rank
from msops.primitives.comm_ops import AllReduce
from msops.train.callback._callback import Callback, RunContext
from msops.train.callback._checkpoint import _parallel
from msops.train.serialization import save_checkpoint

__all__ = ["OnRequestExit"]


class OnRequestExit(Callback):
    """While training, the signal `sig` (or "GracefulExit": 1 in the JSON `config_file`)
    asks for an exit: after the current step the training network is saved to
    `<directory>/rank_<id>/<file_name>.ckpt` (with `save_ckpt`) and training stops (the
    callbacks' `on_train_end` run). In a parallel run the request is combined over the
    world each step, so every rank saves its slices and stops at the same step. msops
    writes no MindIR: `save_mindir` is accepted and only announced when the exit comes."""

    def __init__(self, save_ckpt: bool = True, save_mindir: bool = True, file_name: str = "Net",
                 directory: str = "./", config_file: str | None = None,
                 sig: int = signal.SIGTERM) -> None:
        super().__init__()
        name = "OnRequestExit"
        self.save_ckpt = validator.check_bool("save_ckpt", save_ckpt, name)
        self.save_mindir = validator.check_bool("save_mindir", save_mindir, name)
        self.file_name = validator.check_value_type("file_name", file_name, str, name)
        self.directory = validator.check_value_type("directory", directory, str, name)
        if config_file is not None:
            validator.check_value_type("config_file", config_file, str, name)
        self.config_file = config_file
        validator.check_value_type("sig", sig, int, name)
        if sig not in set(signal.valid_signals()) or sig in (signal.SIGKILL, signal.SIGSTOP):
            raise ValueError(f"For '{name}', the 'sig' should be a signal a process can catch, "
                             f"but got {sig}.")
        self.sig = int(sig)
        self._requested = False
        self._previous: Any = None

    def _handler(self, signum: int, frame: Any) -> None:
        self._requested = True

    def on_train_begin(self, run_context: RunContext) -> None:
        self._requested = False
        self._previous = signal.signal(self.sig, self._handler)

    def on_train_end(self, run_context: RunContext) -> None:
        if self._previous is not None:
            signal.signal(self.sig, self._previous)
            self._previous = None

    def on_train_step_end(self, run_context: RunContext) -> None:
        if not self._exit_requested():
            return
        cb = run_context.original_args()
        if self.save_ckpt:
            folder = os.path.join(self.directory, f"rank_{get_rank() if _parallel() else 0}")
            os.makedirs(folder, exist_ok=True)
            save_checkpoint(cb.train_network, os.path.join(folder, self.file_name + ".ckpt"),
                            integrated_save=not _parallel())
        if self.save_mindir:
            print("OnRequestExit: msops writes no MindIR; 'save_mindir' is ignored.",
                  flush=True)
        run_context.request_stop()

    def _exit_requested(self) -> bool:
        """The signal came or the config file asks (on any rank, in a parallel run)."""
        asked = self._requested or self._config_asks()
        if _parallel():
            total = AllReduce()(Tensor(np.array(int(asked), np.int32)))
            asked = int(total.asnumpy()) > 0
        return asked

    def _config_asks(self) -> bool:
        if self.config_file is None or not os.path.exists(self.config_file):
            return False
        try:
            with open(self.config_file) as f:
                return json.load(f).get("GracefulExit") == 1
        except (OSError, ValueError, AttributeError):
            return False
