"""SyncBatchNorm, as `mindspore.nn.SyncBatchNorm`: BatchNorm whose batch statistics are
computed over every rank of its process group, each rank holding part of the batch (data
parallelism), by `batch_norm_over_group` (the BatchNorm primitive's own split-batch
expansion, here over the layer's group)."""
from __future__ import annotations

from typing import Any

from msops.common import dtype as mstype
from msops.common import validator
from msops.communication.management import (GlobalComm, create_group_partition,
                                            get_group_size, is_initialized)
from msops.graph.tracer import is_tracing
from msops.nn.normalization import _BatchNorm
from msops.ops._dispatch import CALLS
from msops.parallel.context import is_parallel
from msops.primitives.nn_ops import batch_norm_over_group

__all__ = ["SyncBatchNorm"]


class SyncBatchNorm(_BatchNorm):
    """`SyncBatchNorm(num_features, eps=1e-5, momentum=0.9, affine=True, gamma_init='ones',
    beta_init='zeros', moving_mean_init='zeros', moving_var_init='ones',
    use_batch_statistics=None, process_groups=None, dtype=float32)`: x (N, C) or
    (N, C, H, W), this rank's part of the batch. In training the mean and (biased) variance
    are the whole group's batch's (AllReduces of per-rank sums; their gradients are
    AllReduced back), so every rank normalises and updates its moving statistics as one
    BatchNorm over the group's concatenated batch would.

    `process_groups`: lists of world ranks, each list one group synchronised on its own
    (a rank in no list, or alone in one, uses its own batch); None: all ranks. Making the
    groups is collective: every rank builds the layer with the same groups.
    Compiled in a parallel graph (data_parallel / semi_auto_parallel GRAPH_MODE) the network
    is the global one and BatchNorm's statistics are already the whole batch's, so the layer
    is a BatchNorm there, and `process_groups` must then be None.
    """

    ndims = (2, 4)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.9,
                 affine: bool = True, gamma_init: Any = "ones", beta_init: Any = "zeros",
                 moving_mean_init: Any = "zeros", moving_var_init: Any = "ones",
                 use_batch_statistics: bool | None = None, process_groups: Any = None,
                 dtype: mstype.Type = mstype.float32) -> None:
        super().__init__(num_features, eps, momentum, affine, gamma_init, beta_init,
                         moving_mean_init, moving_var_init, use_batch_statistics, "NCHW", dtype)
        self.process_groups = process_groups
        self.group = self._make_group(process_groups)

    def _make_group(self, process_groups: Any) -> str | None:
        """The group this rank's statistics are summed over (None: its own batch alone)."""
        name = self.cls_name
        if process_groups is None:
            if not is_initialized() or get_group_size() == 1:
                return None
            return GlobalComm.WORLD_COMM_GROUP
        validator.check_value_type("process_groups", process_groups, list, name)
        if not is_initialized():
            raise RuntimeError(f"For '{name}', the 'process_groups' need the communication "
                               f"world: call msops.communication.init() first.")
        world = get_group_size()
        seen: set = set()
        for i, ranks in enumerate(process_groups):
            validator.check_value_type(f"process_groups[{i}]", ranks, list, name)
            for r in ranks:
                validator.check_value_type(f"rank id in process_groups[{i}]", r, int, name)
                if not 0 <= r < world:
                    raise ValueError(f"For '{name}', the rank ids in 'process_groups' should "
                                     f"be in [0, {world}), but got {r} in {process_groups}.")
                if r in seen:
                    raise ValueError(f"For '{name}', the rank ids in 'process_groups' should "
                                     f"be unique, but got {r} twice in {process_groups}.")
                seen.add(r)
        group = create_group_partition([tuple(p) for p in process_groups if p])
        return None if group is None or get_group_size(group) == 1 else group

    def _train(self, args: list) -> Any:
        if is_tracing() and is_parallel():
            if self.process_groups is not None and self.group != GlobalComm.WORLD_COMM_GROUP:
                raise ValueError(
                    f"For '{self.cls_name}', the 'process_groups' should be None (all ranks) "
                    f"in a parallel graph, whose BatchNorm statistics are the whole batch's, "
                    f"but got {self.process_groups}; use PYNATIVE_MODE or stand_alone mode.")
            return self.bn_train(*args)
        if self.group is None:
            return self.bn_train(*args)
        return batch_norm_over_group(self.bn_train, CALLS, args, self.group)

    def extend_repr(self) -> str:
        return super().extend_repr() + f", process_groups={self.process_groups}"
