"""`mindspore.ops.communication` (MindSpore 2.9+), whose collectives `mindspore.ops` exports
too: in MindSpore 2.10 they are mint.distributed's torch-style functions (results written
into the caller's Tensors, a CommHandle or None returned), so this namespace is msops's
`mint.distributed` itself, not a third family; `set_comm_ops_inplace(False)` gives
all_reduce, all_gather_into_tensor, reduce_scatter_tensor and all_to_all_single their
returning form, (Tensor, CommHandle or None).

`mindspore.ops` also exports them (`OPS_NAMES`, attached by the package, msops/__init__.py:
this module sits in the mint layer, above ops), except `gather` and `scatter`, which in
`msops.ops` stay the array ops (`ops.gather(input_params, input_indices, axis)`); the
collectives of those names are `msops.ops.communication.gather` / `.scatter`.
"""
from msops.mint.distributed import *  # noqa: F401,F403
from msops.mint.distributed import P2POp, __all__ as _distributed_all  # noqa: F401
from msops.mint.distributed._inplace import set_comm_ops_inplace

__all__ = list(_distributed_all) + ["P2POp", "set_comm_ops_inplace"]

#: the names `msops.ops` takes from here: MindSpore 2.10's communication functions in
#: `mindspore.ops`, less those that mean array ops there
OPS_NAMES = tuple(n for n in __all__ if n not in ("gather", "scatter", "ReduceOp", "CommHandle"))
