"""`ops.reshard(tensor, layout)` (also `mindspore.parallel.function.reshard`): the tensor
laid out as `layout` in semi-auto / auto parallel, the identity elsewhere."""
from __future__ import annotations

from typing import Any

from msops.common.shard_layout import Layout
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.primitives.reshard_ops import Reshard

__all__ = ["reshard"]


def reshard(tensor: Any, layout: Any) -> Tensor:
    """`tensor`, mathematically unchanged, with exactly the layout `layout` (a called
    Layout: device matrix, aliases, tensor map) in a parallel graph: the pass inserts the
    redistribution into it, the gradient flows back through that redistribution, and
    sharding propagation starts from it. A Reshard primitive carrying the layout."""
    check_tensor("reshard", "tensor", tensor)
    if not isinstance(layout, Layout):
        raise TypeError(f"For 'reshard', the 'layout' should be a Layout, but got "
                        f"{type(layout).__name__}.")
    if layout.tensor_map is None:
        raise ValueError(f"For 'reshard', the 'layout' should be called with one alias per "
                         f"dim of the tensor (e.g. layout('dp', 'None')), but got {layout!r}.")
    return _prim(Reshard, (layout,), (layout,))(tensor)
