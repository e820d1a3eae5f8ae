"""The parallel layer: context, layouts, strategies, redistribution and the partition pass."""
from msops.parallel.context import (ParallelMode, get_auto_parallel_context,
                                    reset_auto_parallel_context, set_auto_parallel_context)
from msops.common.shard_layout import Layout
from msops.parallel.gather import gather_full
from msops.parallel.shard_strategy import get_shard_strategy
from msops.parallel.layout import TensorLayout
from msops.parallel.redistribution_plan import explain, plan
from msops.parallel.strategy_ckpt import get_strategies

__all__ = ["Layout", "get_shard_strategy", "TensorLayout", "plan", "explain", "gather_full", "ParallelMode",
           "set_auto_parallel_context", "get_auto_parallel_context",
           "reset_auto_parallel_context", "get_strategies"]
