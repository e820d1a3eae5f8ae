"""BatchNorm3d and InstanceNorm2d sharded (semi_auto_parallel, the batch split) equal the
serial layers on 2/4/8 ranks: BatchNorm3d's statistics are the global batch's."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn
from msops.communication import get_group_size
from parallel_oracle import check

RANKS = (2, 4, 8)


@pytest.mark.parametrize("layer", ["BatchNorm3d", "InstanceNorm2d"])
def test_batch_split_equals_serial(layer):
    n = get_group_size()
    x = np.random.default_rng(4).standard_normal((2 * n, 3, 2, 2, 2)).astype(np.float32) * 2
    if layer == "InstanceNorm2d":
        x = x[:, :, 0]

    def make():
        ms.set_seed(2)
        cell = getattr(nn, layer)(3, gamma_init="normal", beta_init="normal")
        if layer == "BatchNorm3d":
            cell.shard(((n, 1, 1, 1, 1),))
        return cell
    check(make, Tensor(x), train=True)
