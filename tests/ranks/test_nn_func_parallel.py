"""The new layer and image functions (grid_sample, conv_transpose2d, max_pool2d with
indices, avg_pool2d with ceil_mode, embedding, batch_norm inference, crop_and_resize,
fractional_max_pool2d, pdist) inside one net under semi_auto_parallel's default layouts
on 2 and 4 ranks: the sharded outputs equal the serial run's."""
import numpy as np
from parallel_oracle import check, data

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4)
N = get_group_size()


class Layers(nn.Cell):
    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(3)
        self.w = Tensor(rng.standard_normal((3, 2, 3, 3)).astype(np.float32))
        self.table = Tensor(rng.standard_normal((10, 4)).astype(np.float32))
        self.stats = Tensor(rng.uniform(0.5, 1.5, 3).astype(np.float32))

    def construct(self, x, grid, idx, boxes, box_idx, samples):
        values, where = ops.max_pool2d(x, 3, 2, 1, 1, True, True)
        return (ops.grid_sample(x, grid, "bilinear", "reflection", False),
                ops.conv_transpose2d(x, self.w, None, 2, 1, 1), values, where,
                ops.avg_pool2d(x, 3, 2, 1, True, False),
                ops.embedding(idx, self.table, padding_idx=2),
                ops.batch_norm(x, self.stats, self.stats, self.stats, self.stats),
                ops.crop_and_resize(ops.transpose(x, (0, 2, 3, 1)), boxes, box_idx, (3, 2)),
                ops.fractional_max_pool2d(x, 2, (3, 4), _random_samples=samples),
                ops.pdist(ops.reshape(x, (2 * N, 3, 48))))


def test_layer_functions_equal_serial():
    rng = np.random.default_rng(1)
    args = (data(2 * N, 3, 6, 8),
            Tensor(rng.uniform(-1.2, 1.2, (2 * N, 4, 5, 2)).astype(np.float32)),
            Tensor(rng.integers(0, 10, (2 * N, 3)).astype(np.int32)),
            Tensor(np.sort(rng.uniform(0, 1, (2 * N, 2, 2)), 1).reshape(2 * N, 4)
                   .astype(np.float32)),
            Tensor(rng.integers(0, 2 * N, 2 * N).astype(np.int32)),
            Tensor(rng.random((2 * N, 3, 2)).astype(np.float32)))
    check(Layers, *args, rtol=1e-5, atol=1e-5)
