"""History: the network output and evaluation results of every epoch (as
`mindspore.train.History`)."""
from __future__ import annotations

import numpy as np

from msops.common.tensor import Tensor
from msops.train.callback._callback import Callback, RunContext

__all__ = ["History"]


class History(Callback):
    """After training, `epoch` is {"epoch": [1, 2, ...]} and `history` holds, per epoch,
    "net_output" (the last step's output: the loss; of a tuple its first element, of a
    Tensor its mean) and each key of the epoch's evaluation results (Model.fit)."""

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list] = {}
        self.epoch: dict[str, list] = {"epoch": []}

    def begin(self, run_context: RunContext) -> None:
        self.epoch = {"epoch": []}

    def epoch_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        self.epoch["epoch"].append(cb.cur_epoch_num)
        output = cb.get("net_outputs")
        if isinstance(output, (tuple, list)) and output:
            output = output[0]
        if isinstance(output, Tensor):
            output = output.asnumpy()
        if isinstance(output, np.ndarray):
            output = float(np.mean(output))
        if output is not None:
            self.history.setdefault("net_output", []).append(output)
        for name, value in (cb.get("eval_results") or {}).items():
            self.history.setdefault(name, []).append(value)
