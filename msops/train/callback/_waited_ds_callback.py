"""`WaitedDSCallback`: a dataset callback that runs in step with training, as MindSpore's
`mindspore.dataset.WaitedDSCallback` (here in the train layer: it is a train `Callback`,
and the dataset layer may not import the train layer).

Give the same object to `Dataset.map(callbacks=...)` and to `Model.train(callbacks=...)`.
Before each of the map's due steps but the first (steps 1 + step_size, 1 + 2 * step_size,
...), `sync_step_begin(train_run_context, ds_run_context)` runs once the training step
before it has ended; before each epoch but the first, `sync_epoch_begin` runs once the
training epoch before it has ended. MindSpore's pipeline runs ahead in threads and waits
there; msops's pipeline is pulled by the training loop, so the step before has always
ended, and a dataset that runs ahead of training (read outside `Model.train`, or a
step_size other than the batch size) is a RuntimeError rather than a hang.
"""
from __future__ import annotations

from msops.dataset.callback import DSCallback, DSRunContext
from msops.train.callback._callback import Callback, RunContext

__all__ = ["WaitedDSCallback"]


class WaitedDSCallback(Callback, DSCallback):
    """Override `sync_step_begin` / `sync_epoch_begin` (module docstring); `step_size`
    should be the batch size when `batch` follows the map, so a due step is a train step."""

    def __init__(self, step_size: int = 1) -> None:
        DSCallback.__init__(self, step_size)
        self.train_run_context: RunContext | None = None
        self._train_steps = self._train_epochs = self._ds_steps = 0

    def sync_epoch_begin(self, train_run_context: RunContext,
                         ds_run_context: DSRunContext) -> None:
        """Called before dataset epoch 2, 3, ... once training finished the epoch before."""

    def sync_step_begin(self, train_run_context: RunContext,
                        ds_run_context: DSRunContext) -> None:
        """Called before each due dataset step but the first, once training finished the
        step before."""

    # -- the train side ---------------------------------------------------------------------
    def on_train_step_end(self, run_context: RunContext) -> None:
        self.train_run_context = run_context
        self._train_steps += 1

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        self.train_run_context = run_context
        self._train_epochs += 1

    # -- the dataset side -------------------------------------------------------------------
    def ds_epoch_begin(self, ds_run_context: DSRunContext) -> None:
        if ds_run_context.cur_epoch_num > 1:
            self._check("epoch", ds_run_context.cur_epoch_num, self._train_epochs)
            self.sync_epoch_begin(self.train_run_context, ds_run_context)

    def ds_step_begin(self, ds_run_context: DSRunContext) -> None:
        self._ds_steps += 1
        if self._ds_steps > 1:
            self._check("step", self._ds_steps, self._train_steps)
            self.sync_step_begin(self.train_run_context, ds_run_context)

    def _check(self, what: str, number: int, trained: int) -> None:
        if trained < number - 1:
            raise RuntimeError(f"For 'WaitedDSCallback', dataset {what} {number} began before "
                               f"training {what} {number - 1} ended ({trained} ended): give the "
                               f"callback to Model.train as well as to map, with step_size the "
                               f"batch size.")
