"""Read the strategy every op of a compiled parallel network runs with."""
from __future__ import annotations

from typing import Any

__all__ = ["get_shard_strategy"]


def get_shard_strategy(net: Any) -> dict[str, tuple]:
    """{op name: in strategy} of the last graph `net` (a Cell, or a compiled Graph) was
    compiled to in a parallel mode: the strategies `shard` set, those sharding
    propagation chose, and the data-parallel defaults. Names are MindSpore-shaped,
    "Net/MatMul-op0" (ops numbered in execution order); values are tuples of slices per
    dim, or the Layouts given to `shard`. Empty before compiling or stand-alone.
    (MindSpore's `_cell_graph_executor._get_shard_strategy(net)`.)"""
    graph = getattr(net, "_compile_cache", None)
    graph = graph.last_graph() if graph is not None else net
    strategies = getattr(graph, "strategies", None)
    if strategies is None:
        raise TypeError(f"For 'get_shard_strategy', the 'net' should be a Cell or a compiled "
                        f"Graph, but got {type(net).__name__}.")
    return dict(strategies)
