"""`mindspore.parallel.function`: the parallel-namespace spelling of `ops.reshard`."""
from msops.ops.reshard_func import reshard

__all__ = ["reshard"]
