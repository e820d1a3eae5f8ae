"""`Model`: MindSpore's high-level train / eval / predict loop over a dataset.

    model = ms.Model(net, loss_fn=nn.CrossEntropyLoss(), optimizer=opt, metrics={"acc"})
    model.train(3, train_ds, callbacks=[LossMonitor(10)])
    model.eval(valid_ds)        # {"acc": 0.93}

Training runs `nn.TrainOneStepCell(nn.WithLossCell(network, loss_fn), optimizer)` on each
batch (the dataset's columns are its arguments, in order); evaluation runs
`nn.WithEvalCell(network, loss_fn)` (or `eval_network`) and feeds the metrics. In a
parallel context the dataset's shards must match `dataset_strategy` (checked), and the
loss of each step is the global batch's loss, so N data-parallel ranks train exactly as
one process on the whole batches.
"""
from __future__ import annotations

from typing import Any, Iterator

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor
from msops.communication import get_group_size, get_rank
from msops.dataset.engine import Dataset
from msops.dataset.shard import dataset_shards, parallel_shard
from msops.nn.cell import Cell
from msops.nn.metrics import Loss, get_metrics
from msops.nn.optim import Optimizer
from msops.nn.wrap import WithEvalCell
from msops.context import GRAPH_MODE, get_context
from msops.parallel.context import ParallelMode, get_auto_parallel_context, is_parallel
from msops.train.callback._callback import (Callback, CallbackParam, RunContext,
                                            callback_list)
from msops.train.amp import amp_config, train_network_of

__all__ = ["Model"]


class Model:
    """Train, evaluate and predict with `network`.

    `loss_fn` + `optimizer`: the trained cell is TrainOneStepCell(WithLossCell(network,
    loss_fn), optimizer); `optimizer` alone: `network` already returns the loss.
    `metrics`: a set/list of names ('accuracy', 'loss', 'mae', 'mse') or a dict
    {name: Metric}. `eval_network` / `eval_indexes` ([loss, prediction, label] positions in
    its outputs) replace the default WithEvalCell. `amp_level` ("O0", "O2", "O3", "auto")
    with `keep_batchnorm_fp32` and `loss_scale_manager` (a LossScaleManager) make the
    training step as `msops.amp.build_train_network` does (msops/train/amp.py; with loss
    scaling each step's outputs are (loss, overflow, scale)). `boost_level`: only "O0".
    """

    def __init__(self, network: Cell, loss_fn: Cell | None = None,
                 optimizer: Optimizer | None = None, metrics: Any = None,
                 eval_network: Cell | None = None, eval_indexes: list | None = None,
                 amp_level: str = "O0", boost_level: str = "O0", **kwargs: Any) -> None:
        api = "Model"
        validator.check_value_type("network", network, Cell, api)
        if boost_level != "O0":
            raise ValueError(f"For '{api}', the 'boost_level' should be 'O0' (boost is not "
                             f"implemented in msops), but got {boost_level!r}.")
        amp = {k: kwargs.pop(k) for k in ("loss_scale_manager", "keep_batchnorm_fp32")
               if kwargs.get(k) is not None}
        config = amp_config(api, amp_level, amp)
        for key, value in kwargs.items():
            if key != "boost_config_dict":
                raise TypeError(f"For '{api}', got an unexpected argument '{key}'.")
            if value is not None:
                raise ValueError(f"For '{api}', the '{key}' is not supported by msops (leave "
                                 f"it None), but got {value!r}.")
        if optimizer is not None:
            validator.check_value_type("optimizer", optimizer, Optimizer, api)
        if eval_indexes is not None and (not isinstance(eval_indexes, (list, tuple)) or
                                         len(eval_indexes) != 3):
            raise ValueError(f"For '{api}', the 'eval_indexes' should be a list of 3 ints "
                             f"(loss, prediction, label), but got {eval_indexes!r}.")
        self._network = network
        self._loss_fn = loss_fn
        self._optimizer = optimizer
        self._metric_fns = get_metrics(metrics) or {}
        self.eval_results: dict[str, Any] = {}      # the last eval's (as MindSpore)
        self._train_network: Cell | None = None
        if optimizer is not None:
            self._train_network = train_network_of(network, optimizer, loss_fn, config)
        if eval_network is not None:
            self._eval_network: Cell | None = eval_network
            self._eval_indexes = list(eval_indexes) if eval_indexes is not None else None
        elif loss_fn is not None:        # a float16 network's outputs reach the loss in float32
            self._eval_network = WithEvalCell(
                network, loss_fn, add_cast_fp32=config["cast_model_type"] != mstype.float32)
            self._eval_indexes = [0, 1, 2]
        else:
            self._eval_network, self._eval_indexes = None, None

    @property
    def train_network(self) -> Cell | None:
        return self._train_network

    @property
    def eval_network(self) -> Cell | None:
        return self._eval_network

    @property
    def predict_network(self) -> Cell:
        return self._network

    # -- train ---------------------------------------------------------------------------
    def train(self, epoch: int, train_dataset: Dataset, callbacks: Any = None,
              dataset_sink_mode: bool = False, sink_size: int = -1,
              initial_epoch: int = 0) -> None:
        """Train epochs `initial_epoch + 1` .. `epoch` over `train_dataset`, calling the
        callbacks' hooks. `dataset_sink_mode=True` calls the step-end hooks once per epoch
        (none at step begin), and `sink_size > 0` makes each epoch `sink_size` steps (the
        dataset read on without restarting), as MindSpore's sink mode; the computation is
        the same."""
        api = "Model.train"
        self._trained(api)
        validator.check_positive_int(epoch, "epoch", api)
        validator.check_int_range(initial_epoch, 0, epoch, validator.Rel.INC_LEFT,
                                  "initial_epoch", api)
        validator.check_bool("dataset_sink_mode", dataset_sink_mode, api)
        _check_sink_size(sink_size, api)
        _check_dataset(train_dataset, api)
        _check_sharding(train_dataset, api)
        size = train_dataset.get_dataset_size()
        if size == 0:
            raise ValueError(f"For '{api}', the 'train_dataset' should have at least one "
                             f"batch, but it has none.")
        sink = dataset_sink_mode
        steps = sink_size if sink and sink_size > 0 else size
        net = self._train_network
        net.set_train(True)
        cb = _params(train_network=net, network=self._network, loss_fn=self._loss_fn,
                     optimizer=self._optimizer, train_dataset=train_dataset, epoch_num=epoch,
                     batch_num=steps, cur_epoch_num=initial_epoch,
                     cur_step_num=initial_epoch * steps, dataset_sink_mode=dataset_sink_mode,
                     initial_epoch=initial_epoch, mode="train", net_outputs=None)
        cbs = callback_list(callbacks)
        cb.list_callback = cbs.callbacks
        ctx = RunContext(cb)
        # one stream of batches, pass after pass; an epoch takes `steps` of them (a whole
        # pass unless sink_size cuts it)
        batches = _batches(train_dataset, continuous=True)
        cbs.on_train_begin(ctx)
        try:
            # a callback may move the start (BackupAndRestore resuming from its backup)
            for e in range(cb.initial_epoch, epoch):
                cb.cur_epoch_num = e + 1
                cbs.on_train_epoch_begin(ctx)
                for k in range(steps):
                    data = next(batches, None)
                    if data is None:
                        raise ValueError(
                            f"For '{api}', the 'train_dataset' should give {steps} batches "
                            f"an epoch, but it ran out after {k} in epoch {e + 1} (a one-shot "
                            f"iterable cannot be read twice: give GeneratorDataset a "
                            f"generator function or a random-accessible source).")
                    cb.train_dataset_element = data
                    if not sink:
                        cbs.on_train_step_begin(ctx)
                    cb.net_outputs = net(*data)
                    cb.cur_step_num += 1
                    if not sink:
                        cbs.on_train_step_end(ctx)
                    if ctx.get_stop_requested():
                        break
                if sink:
                    cbs.on_train_step_end(ctx)
                cbs.on_train_epoch_end(ctx)
                if ctx.get_stop_requested():
                    break
        finally:
            cbs.on_train_end(ctx)

    def fit(self, epoch: int, train_dataset: Dataset, valid_dataset: Dataset | None = None,
            valid_frequency: int | list = 1, callbacks: Any = None,
            dataset_sink_mode: bool = False, valid_dataset_sink_mode: bool = False,
            sink_size: int = -1, initial_epoch: int = 0) -> None:
        """`train`, evaluating `valid_dataset` after every `valid_frequency`-th epoch (or
        after the epochs listed) with the callbacks' eval hooks; the results are in
        cb_params.eval_results and `Model.eval_results`."""
        api = "Model.fit"
        if isinstance(valid_frequency, list):
            if not all(isinstance(v, int) and v > 0 for v in valid_frequency):
                raise ValueError(f"For '{api}', the 'valid_frequency' list should hold "
                                 f"epoch numbers >= 1, but got {valid_frequency}.")
        else:
            validator.check_positive_int(valid_frequency, "valid_frequency", api)
        if valid_dataset is not None:
            _check_dataset(valid_dataset, api)
        cbs = callback_list(callbacks).callbacks
        if valid_dataset is not None:     # first: the others' epoch end sees its results
            cbs = [_EvalCallback(self, valid_dataset, valid_frequency, cbs)] + cbs
        self.train(epoch, train_dataset, cbs, dataset_sink_mode, sink_size, initial_epoch)

    # -- compile ahead ---------------------------------------------------------------------
    def build(self, train_dataset: Dataset | None = None, valid_dataset: Dataset | None = None,
              sink_size: int = -1, epoch: int = 1) -> None:
        """Compile the training step for `train_dataset`'s batches and the evaluation network
        for `valid_dataset`'s, without running them (the first batch gives the shapes), so
        `train` and `eval` start at once. In a parallel run every rank calls it; afterwards
        each Parameter holds this rank's slice, as after a first step."""
        api = "Model.build"
        validator.check_positive_int(epoch, "epoch", api)
        _check_sink_size(sink_size, api)
        if train_dataset is None and valid_dataset is None:
            raise ValueError(f"For '{api}', the 'train_dataset' and 'valid_dataset' should not "
                             f"both be None.")
        if train_dataset is not None:
            self._compile_train(train_dataset, api)
        if valid_dataset is not None:
            net = self._eval_network
            if net is None:
                raise ValueError(f"For '{api}', the Model needs a 'loss_fn' or an "
                                 f"'eval_network' to build for 'valid_dataset', but got "
                                 f"neither.")
            _check_dataset(valid_dataset, api)
            net.set_train(False)
            net.compile(*_first_batch(valid_dataset, api))

    def infer_train_layout(self, train_dataset: Dataset, dataset_sink_mode: bool = True,
                           sink_size: int = -1) -> dict:
        """The training step compiled for `train_dataset`'s batches (not run), and the
        parameter layouts it chose: `parameter_layout_dict` of the training cell, whose
        entries load_distributed_checkpoint and the strategy files use."""
        api = "Model.infer_train_layout"
        _check_layout_context(api)
        validator.check_bool("dataset_sink_mode", dataset_sink_mode, api)
        _check_sink_size(sink_size, api)
        return self._compile_train(train_dataset, api).parameter_layout_dict

    def infer_predict_layout(self, *predict_data: Any) -> dict:
        """The prediction network compiled for `predict_data` (not run), and its parameter
        layouts: the `predict_strategy` load_distributed_checkpoint takes."""
        api = "Model.infer_predict_layout"
        _check_layout_context(api)
        for i, t in enumerate(predict_data):
            if not isinstance(t, Tensor):
                raise TypeError(f"For '{api}', every 'predict_data' should be a Tensor, but "
                                f"got {type(t).__name__} at index {i}.")
        net = self._network
        net.set_train(False)
        net.compile(*predict_data)
        return net.parameter_layout_dict

    def _trained(self, api: str) -> Cell:
        """The training cell (a ValueError naming `api` when the Model has no optimizer)."""
        if self._train_network is None:
            raise ValueError(f"For '{api}', the Model needs an 'optimizer' (and a 'loss_fn' "
                             f"unless the network returns the loss) to train, but got "
                             f"optimizer=None.")
        return self._train_network

    def _compile_train(self, dataset: Dataset, api: str) -> Cell:
        net = self._trained(api)
        _check_dataset(dataset, api)
        _check_sharding(dataset, api)
        net.set_train(True)
        net.compile(*_first_batch(dataset, api))
        return net

    # -- eval ----------------------------------------------------------------------------
    def eval(self, valid_dataset: Dataset, callbacks: Any = None,
             dataset_sink_mode: bool = False) -> dict[str, Any]:
        """{metric name: value} over one pass of `valid_dataset`. In a data-parallel run each
        rank evaluates its own shard (as MindSpore): the values are this rank's."""
        api = "Model.eval"
        if self._eval_network is None:
            raise ValueError(f"For '{api}', the Model needs a 'loss_fn' or an 'eval_network' "
                             f"to evaluate, but got neither.")
        if not self._metric_fns:
            raise ValueError(f"For '{api}', the Model needs 'metrics' to evaluate, but got "
                             f"None.")
        _check_dataset(valid_dataset, api)
        net = self._eval_network
        net.set_train(False)
        for m in self._metric_fns.values():
            m.clear()
        cb = _params(eval_network=net, valid_dataset=valid_dataset, metrics=self._metric_fns,
                     batch_num=valid_dataset.get_dataset_size(), cur_step_num=0,
                     cur_epoch_num=1, mode="eval", net_outputs=None,
                     dataset_sink_mode=dataset_sink_mode)
        cbs = callback_list(callbacks)
        cb.list_callback = cbs.callbacks
        ctx = RunContext(cb)
        cbs.on_eval_begin(ctx)
        cbs.on_eval_epoch_begin(ctx)
        for data in _batches(valid_dataset, continuous=False):
            cbs.on_eval_step_begin(ctx)
            outputs = net(*data)
            cb.net_outputs = outputs
            cb.cur_step_num += 1
            self._update_metrics(outputs)
            cbs.on_eval_step_end(ctx)
        result = {name: m.eval() for name, m in self._metric_fns.items()}
        self.eval_results = result
        cb.metrics = result
        cbs.on_eval_epoch_end(ctx)
        cbs.on_eval_end(ctx)
        return result

    def _update_metrics(self, outputs: Any) -> None:
        outs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
        for m in self._metric_fns.values():
            if m.indexes is not None:        # a rearranging update picks them itself
                rearranges = getattr(type(m).update, "rearranges_inputs", False)
                m.update(*(outs if rearranges else [outs[i] for i in m.indexes]))
            elif self._eval_indexes is None:
                m.update(*outs)
            elif isinstance(m, Loss):
                m.update(outs[self._eval_indexes[0]])
            else:
                m.update(outs[self._eval_indexes[1]], outs[self._eval_indexes[2]])

    # -- predict -------------------------------------------------------------------------
    def predict(self, *predict_data: Any, backend: Any = None, config: Any = None) -> Any:
        """`network(*predict_data)` in inference mode (`set_train(False)`)."""
        self._network.set_train(False)
        return self._network(*predict_data)


def _params(**kw: Any) -> CallbackParam:
    cb = CallbackParam(kw)
    cb.parallel_mode = get_auto_parallel_context("parallel_mode")
    cb.device_number = get_group_size() if is_parallel() else 1
    return cb


def _check_dataset(dataset: Any, api: str) -> None:
    if not isinstance(dataset, Dataset):
        raise TypeError(f"For '{api}', the dataset should be an msops.dataset Dataset "
                        f"(GeneratorDataset, NumpySlicesDataset, ...), but got "
                        f"{type(dataset).__name__}.")


def _check_sink_size(sink_size: Any, api: str) -> None:
    validator.check_value_type("sink_size", sink_size, int, api)
    if sink_size == 0 or sink_size < -1:
        raise ValueError(f"For '{api}', the 'sink_size' should be -1 or a positive int, "
                         f"but got {sink_size}.")


def _check_layout_context(api: str) -> None:
    """Layouts exist in GRAPH_MODE under semi_auto_parallel / auto_parallel (MindSpore's
    RuntimeErrors)."""
    if get_context("mode") != GRAPH_MODE:
        raise RuntimeError(f"For '{api}', the layouts come from a compiled graph: call "
                           f"ms.set_context(mode=ms.GRAPH_MODE) first.")
    mode = get_auto_parallel_context("parallel_mode")
    if mode not in (ParallelMode.SEMI_AUTO_PARALLEL, ParallelMode.AUTO_PARALLEL):
        raise RuntimeError(f"For '{api}', the parallel_mode should be 'semi_auto_parallel' or "
                           f"'auto_parallel', but got {mode!r}.")


def _first_batch(dataset: Dataset, api: str) -> list:
    """The dataset's first batch (its shapes and dtypes compile the network)."""
    data = next(_batches(dataset, continuous=False), None)
    if data is None:
        raise ValueError(f"For '{api}', the dataset should have at least one batch, but it "
                         f"has none.")
    return data


def _check_sharding(dataset: Dataset, api: str) -> None:
    """In a parallel run, every rank must read the part of each global batch that
    dataset_strategy says it feeds: otherwise the ranks would train on a wrong batch."""
    if not is_parallel():
        return
    want = parallel_shard()
    got = dataset_shards(dataset)
    if got != want:
        strategy = get_auto_parallel_context("dataset_strategy")
        raise ValueError(f"For '{api}', with dataset_strategy {strategy!r} on "
                         f"{get_group_size()} ranks, rank {get_rank()}'s dataset should be "
                         f"read with num_shards={want[0]}, shard_id={want[1]} "
                         f"(msops.dataset.parallel_shard()), but got num_shards={got[0]}, "
                         f"shard_id={got[1]}.")


def _batches(dataset: Dataset, continuous: bool) -> Iterator[list]:
    """The dataset's batches as lists of Tensors: one pass, or pass after pass."""
    iterator = dataset.create_tuple_iterator()
    while True:
        empty = True
        for data in iterator:
            empty = False
            yield data
        if not continuous or empty:
            return


class _EvalCallback(Callback):
    """Model.fit's evaluation after the chosen epochs (then back to training mode)."""

    def __init__(self, model: Model, dataset: Dataset, frequency: int | list,
                 callbacks: list) -> None:
        self.model, self.dataset, self.frequency = model, dataset, frequency
        self.callbacks = callbacks

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        e = cb.cur_epoch_num
        due = e in self.frequency if isinstance(self.frequency, list) else \
            e % self.frequency == 0 or e == cb.epoch_num
        if due:
            cb.eval_results = self.model.eval(self.dataset, self.callbacks)
            cb.train_network.set_train(True)

