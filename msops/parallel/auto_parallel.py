"""`AutoParallel`, as `mindspore.parallel.auto_parallel.AutoParallel` (MindSpore 2.6+): the
top-level Cell that carries a network's parallel configuration.

MindSpore reads the wrapper's settings into the auto-parallel context when it compiles the
graph; msops's compile reads the same context (`msops.parallel.context`), so the wrapper
writes its settings there as they are made: at construction (the mode, every rank as the
device count, the data-parallel feeding MindSpore defaults to) and at each configuration
call. The context is the process's, as MindSpore's is: a second AutoParallel, or
`set_auto_parallel_context`, changes it for every network compiled afterwards. The wrapper
lives in the `nn` layer (it is a Cell) though MindSpore spells it under `parallel`.
"""
from __future__ import annotations

import os
from typing import Any, Callable

from msops.common import validator
from msops.common.shard_layout import Layout
from msops.communication import get_group_size, get_rank
from msops.nn.cell import Cell
from msops.parallel.context import get_auto_parallel_context, set_auto_parallel_context

__all__ = ["AutoParallel"]

#: AutoParallel's parallel_mode -> the context keys it sets
_MODES = {"semi_auto": {"parallel_mode": "semi_auto_parallel"},
          "sharding_propagation": {"parallel_mode": "auto_parallel",
                                   "search_mode": "sharding_propagation"},
          "recursive_programming": {"parallel_mode": "auto_parallel",
                                    "search_mode": "recursive_programming"}}
_LEVELS = ("level1", "level2", "level3")
_API = "AutoParallel"


class AutoParallel(Cell):
    """`AutoParallel(network, parallel_mode="semi_auto")`: `network` (a Cell or a function)
    compiled in parallel. parallel_mode: "semi_auto" (the strategies given by `shard`),
    "sharding_propagation" (the given strategies propagated to the other ops) or
    "recursive_programming" (every strategy searched).

    >>> net = AutoParallel(nn.WithLossCell(Network(), loss_fn), parallel_mode="semi_auto")
    >>> net.hsdp(); net.dataset_strategy("full_batch")
    >>> Model(net, optimizer=opt).train(2, dataset)
    """

    def __init__(self, network: Cell | Callable, parallel_mode: str = "semi_auto") -> None:
        super().__init__(auto_prefix=False)
        if not isinstance(network, Cell) and not callable(network):
            raise TypeError(f"For '{_API}', the 'network' should be a Cell or a function, but "
                            f"got {type(network).__name__}.")
        validator.check_value_type("parallel_mode", parallel_mode, str, _API)
        if parallel_mode not in _MODES:
            raise ValueError(f"For '{_API}', the 'parallel_mode' should be one of "
                             f"{list(_MODES)}, but got '{parallel_mode}'.")
        self.network = network
        self._parallel_mode = parallel_mode
        self._global_rank = get_rank()
        self._device_num = get_group_size()
        self._strategy_file = {"load_file": "", "save_file": "", "only_trainable_params": True}
        set_auto_parallel_context(**_MODES[parallel_mode], device_num=self._device_num,
                                  dataset_strategy="data_parallel")

    def construct(self, *inputs: Any) -> Any:
        return self.network(*inputs)

    def dataset_strategy(self, config: Any) -> None:
        """How a fed batch lies over the ranks: "data_parallel" (each rank feeds its dim-0
        slice, the default), "full_batch" (each feeds the whole batch) or one strategy per
        input, e.g. ((2, 1), (2, 1))."""
        if config is None:
            raise ValueError(f"For '{_API}.dataset_strategy', the 'config' should be "
                             f"'data_parallel', 'full_batch' or a tuple, but got None.")
        if not isinstance(config, (str, tuple)):
            raise TypeError(f"For '{_API}.dataset_strategy', the 'config' should be a str or a "
                            f"tuple, but got {type(config).__name__}.")
        if isinstance(config, tuple) and any(isinstance(s, Layout) for s in config):
            raise ValueError(f"For '{_API}.dataset_strategy', the 'config' should be "
                             f"tuples of ints (a Layout per input is not supported in msops), "
                             f"but got {config!r}.")
        set_auto_parallel_context(dataset_strategy=config)

    def hsdp(self, shard_size: int = -1, threshold: int = 64,
             optimizer_level: str = "level1") -> None:
        """The parallel optimizer: each parameter's update (weights and optimizer state)
        sharded over its data-parallel replicas, or over groups of `shard_size` of them;
        parameters under `threshold` KB stay whole. msops shards the gradients too (a
        ReduceScatter) at every `optimizer_level`, which therefore give the same results."""
        if isinstance(shard_size, bool) or not isinstance(shard_size, int) or \
                (shard_size <= 0 and shard_size != -1):
            raise ValueError(f"For '{_API}.hsdp', the 'shard_size' should be a positive int or "
                             f"-1, but got {shard_size!r}.")
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0:
            raise ValueError(f"For '{_API}.hsdp', the 'threshold' should be an int >= 0 (KB), "
                             f"but got {threshold!r}.")
        if optimizer_level not in _LEVELS:
            raise ValueError(f"For '{_API}.hsdp', the 'optimizer_level' should be one of "
                             f"{list(_LEVELS)}, but got {optimizer_level!r}.")
        set_auto_parallel_context(
            enable_parallel_optimizer=True, optimizer_weight_shard_size=shard_size,
            parallel_optimizer_config={"parallel_optimizer_threshold": threshold,
                                       "optimizer_weight_shard_size": shard_size,
                                       "optimizer_level": optimizer_level})

    def pipeline(self, stages: int = 1, output_broadcast: bool = False,
                 interleave: bool = False, scheduler: str = "1f1b") -> None:
        """Pipeline parallelism over `stages` stages (the network's cells say their
        `pipeline_stage`; wrap it in `parallel.nn.Pipeline` for the micro-batches)."""
        where = f"{_API}.pipeline"
        if isinstance(stages, bool) or not isinstance(stages, int):
            raise TypeError(f"For '{where}', the 'stages' should be an int, but got "
                            f"{type(stages).__name__}.")
        if stages <= 0:
            raise ValueError(f"For '{where}', the 'stages' should be > 0, but got {stages}.")
        validator.check_bool("output_broadcast", output_broadcast, where)
        validator.check_bool("interleave", interleave, where)
        validator.check_value_type("scheduler", scheduler, str, where)
        validator.check_string("scheduler", scheduler, ("1f1b", "gpipe"), where)
        set_auto_parallel_context(pipeline_stages=stages,
                                  pipeline_result_broadcast=output_broadcast,
                                  pipeline_config={"pipeline_interleave": interleave,
                                                   "pipeline_scheduler": scheduler})

    def comm_fusion(self, config: dict | None) -> None:
        """Fusion buckets of the inserted collectives: {"allreduce" | "allgather" |
        "reducescatter": {"mode": "auto"} | {"mode": "size", "config": MB}}, and
        "openstate" (False: no fusion)."""
        if config is not None and not isinstance(config, dict):
            raise TypeError(f"For '{_API}.comm_fusion', the 'config' should be a dict, but got "
                            f"{type(config).__name__}.")
        config = dict(config or {})
        if not config.pop("openstate", True):
            config = {kind: {"mode": "size", "config": 2.0 ** -20}   # one byte: nothing fuses
                      for kind in ("allreduce", "allgather", "reducescatter")}
        set_auto_parallel_context(comm_fusion=config or None)

    def load_param_strategy_file(self, file_path: str) -> None:
        """Take the parameters' strategies from the JSON strategy file `file_path`."""
        self._set_strategy_file("load_file", file_path)

    def save_param_strategy_file(self, file_path: str) -> None:
        """Write the compiled parameters' strategies to the JSON strategy file `file_path`."""
        self._set_strategy_file("save_file", file_path)

    def disable_strategy_file_only_for_trainable_params(self) -> None:
        """Strategy files hold the non-trainable parameters too."""
        self._strategy_file["only_trainable_params"] = False
        set_auto_parallel_context(strategy_ckpt_config=dict(self._strategy_file))

    def _set_strategy_file(self, key: str, file_path: str) -> None:
        if not isinstance(file_path, str):
            raise TypeError(f"For '{_API}', the 'file_path' should be a str, but got "
                            f"{type(file_path).__name__}.")
        self._strategy_file[key] = file_path
        set_auto_parallel_context(strategy_ckpt_config=dict(self._strategy_file))

    def save_operator_strategy_file(self, file_path: str) -> None:
        """Sharding propagation's strategies written to `file_path` (absolute, .json)."""
        self._set_strategy_file("save_file", _json_path("save_operator_strategy_file",
                                                        file_path))

    def load_operator_strategy_file(self, file_path: str) -> None:
        """Sharding propagation starts from the strategies in `file_path` (absolute, .json)."""
        self._set_strategy_file("load_file", _json_path("load_operator_strategy_file",
                                                        file_path))

    def enable_gradients_mean(self) -> None:
        """Data-parallel gradients are averaged over the replicas, not summed."""
        set_auto_parallel_context(gradients_mean=True)

    def enable_fp32_communication(self) -> None:
        """Reductions communicate in float32: recorded; msops's reductions of float16 and
        bfloat16 run in float32 anyway (primitives/mpi.py)."""
        set_auto_parallel_context(force_fp32_communication=True)

    def disable_gradient_fp32_sync(self) -> None:
        """float16 gradients reduced without a cast to float32 first: recorded, no effect
        in msops (see enable_fp32_communication)."""
        set_auto_parallel_context(gradient_fp32_sync=False)

    def disable_loss_repeated_mean(self) -> None:
        """No mean over a loss computed repeatedly by several ranks in the backward:
        recorded, no effect in msops (its backward is the serial gradient either way)."""
        set_auto_parallel_context(loss_repeated_mean=False)

    def set_group_ckpt_save_file(self, file_path: str) -> None:
        """Where the communication groups are recorded: stored for its owner (see
        docs/api.md, `group_ckpt_save_file`)."""
        if not isinstance(file_path, str):
            raise TypeError(f"For '{_API}.set_group_ckpt_save_file', the 'file_path' should be "
                            f"a str, but got {type(file_path).__name__}.")
        set_auto_parallel_context(group_ckpt_save_file=file_path)

    def print_local_norm(self) -> None:
        """Printing each parameter's local gradient norm: not implemented in msops."""
        raise NotImplementedError(f"For '{_API}.print_local_norm', local-norm dumps are not "
                                  f"implemented in msops.")

    def dump_local_norm(self, file_path: str) -> None:
        """Dumping each parameter's local gradient norm: not implemented in msops."""
        raise NotImplementedError(f"For '{_API}.dump_local_norm', local-norm dumps are not "
                                  f"implemented in msops.")

    def enable_device_local_norm(self) -> None:
        """Dumping the device's local gradient norm: not implemented in msops."""
        raise NotImplementedError(f"For '{_API}.enable_device_local_norm', local-norm dumps "
                                  f"are not implemented in msops.")

    def no_init_parameters_in_compile(self) -> None:
        """MindSpore: do not initialise the parameters while compiling. msops initialises
        a Parameter when it is created, so compiling initialises nothing either way."""

    @property
    def parallel_mode(self) -> str:
        """The mode given at construction."""
        return self._parallel_mode

    def __repr__(self) -> str:
        mode = get_auto_parallel_context("parallel_mode")
        return f"AutoParallel({self._parallel_mode}, context {mode})"


def _json_path(method: str, file_path: Any) -> str:
    """`file_path` checked as MindSpore checks an operator strategy file: an absolute .json."""
    if not isinstance(file_path, str):
        raise TypeError(f"For '{_API}.{method}', the 'file_path' should be a str, but got "
                        f"{type(file_path).__name__}.")
    if not os.path.isabs(file_path) or not file_path.endswith(".json"):
        raise ValueError(f"For '{_API}.{method}', the 'file_path' should be an absolute path "
                         f"ending in '.json', but got '{file_path}'.")
    return file_path
