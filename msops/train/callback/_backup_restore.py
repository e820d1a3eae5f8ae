"""BackupAndRestore: back the training up every epoch and resume from the backup after a
failure (as `mindspore.train.BackupAndRestore`)."""
from __future__ import annotations

import os
import sys

from msops.common import validator
from msops.communication import get_rank
from msops.train.callback._callback import Callback, RunContext
from msops.train.callback._checkpoint import _parallel
from msops.train.serialization import load_checkpoint, load_param_into_net, save_checkpoint

__all__ = ["BackupAndRestore"]


class BackupAndRestore(Callback):
    """Every `save_freq` epochs ("epoch": each) the training network (weights, optimizer
    state, global_step) and the epoch number are written to `backup_dir`/backup.ckpt
    (atomically: a crash while writing leaves the previous backup). At the start of
    training an existing backup is loaded and training resumes after its epoch, so a run
    that failed and is started again ends as the uninterrupted run would (each epoch
    reads the dataset from its start). When training ends without an exception the
    backup is deleted (`delete_checkpoint`). In a parallel run every rank takes part;
    rank 0 writes the whole network."""

    def __init__(self, backup_dir: str, save_freq: str | int = "epoch",
                 delete_checkpoint: bool = True) -> None:
        super().__init__()
        name = "BackupAndRestore"
        self.backup_dir = validator.check_value_type("backup_dir", backup_dir, str, name)
        if save_freq != "epoch":
            validator.check_value_type("save_freq", save_freq, (int, str), name)
            if isinstance(save_freq, str) or save_freq <= 0:
                raise ValueError(f"For '{name}', the 'save_freq' should be 'epoch' or a "
                                 f"positive int, but got {save_freq!r}.")
        self.save_freq = 1 if save_freq == "epoch" else save_freq
        self.delete_checkpoint = validator.check_bool("delete_checkpoint", delete_checkpoint,
                                                      name)
        self.backup_file = os.path.join(backup_dir, "backup.ckpt")

    def on_train_begin(self, run_context: RunContext) -> None:
        if not os.path.exists(self.backup_file):
            return
        cb = run_context.original_args()
        params = load_checkpoint(self.backup_file)
        epoch = int(params.pop("epoch_num").asnumpy())
        load_param_into_net(cb.train_network, params)
        cb.initial_epoch = cb.cur_epoch_num = epoch
        cb.cur_step_num = epoch * cb.batch_num

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        if cb.cur_epoch_num % self.save_freq:
            return
        if not _parallel() or get_rank() == 0:
            os.makedirs(self.backup_dir, exist_ok=True)
        save_checkpoint(cb.train_network, self.backup_file,
                        append_dict={"epoch_num": cb.cur_epoch_num})

    def on_train_end(self, run_context: RunContext) -> None:
        # Model calls this from a `finally`: an exception on its way out is a failure,
        # and the backup is what the next run resumes from
        failed = sys.exc_info()[0] is not None
        if self.delete_checkpoint and not failed and (not _parallel() or get_rank() == 0) \
                and os.path.exists(self.backup_file):
            os.remove(self.backup_file)
