"""Pipeline parallelism with operator parallelism inside each stage, against the serial
run: pipeline_stages=2 on 4 and 8 ranks, each stage's MatMuls split over its devices."""
import numpy as np

from pipeline_nets import batch, check_stage_params, my_stage, train

RANKS = (4, 8)


def test_stage_devices_shard_their_ops():
    """pipeline_stages=2 on 4 or 8 ranks: each stage's MatMuls split over its devices."""
    x, y = batch()
    strategy = ((1, 1), (1, 2))
    want, serial, _ = train(1, "momentum", 2, x, y)
    got, net, step = train(2, "momentum", 2, x, y, strategy=strategy)
    np.testing.assert_allclose(got, want, rtol=2e-5)
    check_stage_params(net, serial, 2)
    for b in net.blocks:
        if b.pipeline_stage == my_stage(2):
            assert tuple(b.w.shape) == (b.w._full_shape[0], b.w._full_shape[1] // 2)
