"""DatasetHelper and connect_network_with_dataset (MindSpore's train.dataset_helper).

msops has no device queue: the dataset is always read on the host. The helper keeps
MindSpore's two ways of use all the same:

* `dataset_sink_mode=False`: iterating the helper gives the dataset's batches, one pass
  (epoch) per `for`, `epoch_num` passes in all.
* `dataset_sink_mode=True`: iterating the helper gives `sink_size` steps per `for` (the
  whole dataset with -1), each an empty tuple, as MindSpore's sink iterators do; the
  network returned by `connect_network_with_dataset` takes no input and draws the next
  batch itself (MindSpore's GetNext), from one stream of `epoch_num` passes read on
  without restarting at a `for`'s end (so a sink may span two passes).

    helper = DatasetHelper(ds, dataset_sink_mode=True, sink_size=4, epoch_num=2)
    step = connect_network_with_dataset(train_net, helper)
    for inputs in helper:          # 4 steps
        loss = step(*inputs)       # inputs == (): the batch comes from the dataset
"""
from __future__ import annotations

from typing import Any, Iterator

from msops.common import validator
from msops.dataset.engine import Dataset
from msops.nn.cell import Cell
from msops.train.model import _first_batch

__all__ = ["DatasetHelper", "connect_network_with_dataset"]


def _passes(iterator: Any) -> Iterator[list]:
    """The batches of a dataset iterator, pass after pass, until it gives no more."""
    while True:
        empty = True
        for data in iterator:
            empty = False
            yield data
        if empty:
            return


class DatasetHelper:
    """`DatasetHelper(dataset, dataset_sink_mode=True, sink_size=-1, epoch_num=1)`: the
    dataset read on the host, in MindSpore's loop shape (the module doc says how)."""

    def __init__(self, dataset: Dataset, dataset_sink_mode: bool = True, sink_size: int = -1,
                 epoch_num: int = 1) -> None:
        api = "DatasetHelper"
        if not isinstance(dataset, Dataset):
            raise TypeError(f"For '{api}', the 'dataset' should be a msops.dataset Dataset, "
                            f"but got {type(dataset).__name__}.")
        validator.check_bool("dataset_sink_mode", dataset_sink_mode, api)
        validator.check_value_type("sink_size", sink_size, int, api)
        if sink_size == 0 or sink_size < -1:
            raise ValueError(f"For '{api}', the 'sink_size' should be -1 or a positive int, "
                             f"but got {sink_size}.")
        validator.check_positive_int(epoch_num, "epoch_num", api)
        self.dataset = dataset
        self.dataset_sink_mode = dataset_sink_mode
        self.epoch_num = epoch_num
        self._steps = sink_size if sink_size > 0 else dataset.get_dataset_size()
        self._iterator = dataset.create_tuple_iterator(num_epochs=epoch_num)
        self._stream: Iterator[list] | None = _passes(self._iterator) \
            if dataset_sink_mode else None
        self._network: Cell | None = None
        self._wrapper: Cell | None = None

    def __iter__(self) -> Iterator:
        if not self.dataset_sink_mode:
            return iter(self._iterator)
        return iter([()] * self._steps)

    def sink_size(self) -> int:
        """The steps one `for` over the helper gives: sink_size (the dataset's size with
        -1) in sink mode, the dataset's size (a pass) otherwise."""
        return self._steps if self.dataset_sink_mode else self.dataset.get_dataset_size()

    def types_shapes(self) -> tuple[list, list]:
        """([dtype of each column], [shape of each column]) of the dataset's batches."""
        batch = _first_batch(self.dataset, "DatasetHelper.types_shapes")
        return [t.dtype for t in batch], [list(t.shape) for t in batch]

    def release(self) -> None:
        """End the sink stream: a connected network draws no more batches."""
        self._stream = iter(())

    def next_batch(self, api: str) -> list:
        """The next batch of the sink stream (what a connected network is fed)."""
        batch = next(self._stream, None) if self._stream is not None else None
        if batch is None:
            raise RuntimeError(f"For '{api}', the dataset should give another batch, but its "
                               f"{self.epoch_num} pass(es) are used up (or the helper was "
                               f"released).")
        return batch


class _DataWrapper(Cell):
    """`network` fed from a sink-mode DatasetHelper: called with no input, it draws the
    next batch on the host (outside any graph) and calls the network with it."""

    def __init__(self, network: Cell, helper: DatasetHelper) -> None:
        super().__init__(auto_prefix=False)
        self.network = network
        self._helper = helper

    def __call__(self, *inputs: Any) -> Any:
        if inputs:
            raise TypeError(f"For 'connect_network_with_dataset', the connected network "
                            f"takes its inputs from the dataset, so it should be called "
                            f"with none, but got {len(inputs)}.")
        return self.network(*self._helper.next_batch("connect_network_with_dataset"))

    def construct(self, *inputs: Any) -> Any:
        return self.network(*inputs)


def connect_network_with_dataset(network: Cell, dataset_helper: DatasetHelper) -> Cell:
    """A Cell that runs `network` on the next batch of `dataset_helper` (sink mode) at each
    call, as MindSpore's GetNext-wrapped network; one network per helper (the same
    network again gives the same Cell)."""
    api = "connect_network_with_dataset"
    if not isinstance(network, Cell):
        raise TypeError(f"For '{api}', the 'network' should be a Cell, but got "
                        f"{type(network).__name__}.")
    if not isinstance(dataset_helper, DatasetHelper):
        raise TypeError(f"For '{api}', the 'dataset_helper' should be a DatasetHelper, but "
                        f"got {type(dataset_helper).__name__}.")
    if not dataset_helper.dataset_sink_mode:
        raise RuntimeError(f"For '{api}', the 'dataset_helper' should be in dataset sink mode "
                           f"(dataset_sink_mode=True), but it is not.")
    if dataset_helper._network is None:
        dataset_helper._network = network
        dataset_helper._wrapper = _DataWrapper(network, dataset_helper)
    elif dataset_helper._network is not network:
        raise ValueError(f"For '{api}', the 'dataset_helper' has been connected to another "
                         f"network; it should be connected to one network only.")
    return dataset_helper._wrapper
