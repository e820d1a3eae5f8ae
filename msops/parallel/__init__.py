"""The parallel layer: context, layouts, strategies, redistribution and the partition pass.

As `mindspore.parallel` it also holds `parameter_broadcast`, the strategy-file readers, and
(attached by the package, msops/__init__.py, since they live in train/ above this layer)
`shard` and the checkpoint functions; `msops.parallel.function.reshard` is `ops.reshard`."""
from msops.parallel.algo_parameter_config import (get_algo_parameters,
                                                   reset_algo_parameters, set_algo_parameters)
from msops.parallel.context import (ParallelMode, get_auto_parallel_context,
                                    reset_auto_parallel_context, set_auto_parallel_context)
from msops.common.shard_layout import Layout
from msops.parallel.gather import gather_full
from msops.parallel.layout import TensorLayout
from msops.parallel.parameter_broadcast import parameter_broadcast
from msops.parallel.redistribution_plan import explain, plan
from msops.parallel.strategy_ckpt import (build_searched_strategy, get_strategies,
                                          merge_pipeline_strategys, set_op_strategy_config)

__all__ = ["Layout", "TensorLayout", "plan", "explain", "gather_full", "get_strategies", "ParallelMode",
           "set_auto_parallel_context", "get_auto_parallel_context",
           "reset_auto_parallel_context", "parameter_broadcast", "build_searched_strategy",
           "merge_pipeline_strategys", "set_op_strategy_config", "set_algo_parameters",
           "get_algo_parameters", "reset_algo_parameters"]
