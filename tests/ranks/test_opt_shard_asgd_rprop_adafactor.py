"""ASGD, Rprop and AdaFactor with the parallel optimizer (enable_parallel_optimizer=True) on
real MPI worlds: 20 training steps equal the serial run and each rank holds only its dim-0
shard. ASGD and Rprop are element-wise; AdaFactor's RMS norms of a shard are completed
over the ranks (a net of vector parameters, all sharded), and a factored (matrix)
parameter held in shards is refused by name."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size, get_rank
from test_parallel_optimizer import CASES, train

RANKS = (2, 4)

OPTIMIZERS = {
    "asgd": lambda ps: nn.ASGD(ps, learning_rate=0.05, lambd=0.1, t0=5.0, weight_decay=0.01),
    "rprop": lambda ps: nn.Rprop(ps, learning_rate=0.01, weight_decay=0.01),
    "rprop_groups": lambda ps: nn.Rprop([{"params": ps[::2], "lr": [0.02, 0.01]},
                                         {"params": ps[1::2], "lr": lambda t: 0.01}]),
}
SHARDED = dict(enable_parallel_optimizer=True,
               parallel_optimizer_config={"parallel_optimizer_threshold": 0})


def check_equal_serial(make_net, optimizer, mode):
    want_losses, want, _, _, _ = train(make_net, optimizer)
    losses, got, layouts, _, _ = train(make_net, optimizer, mode, **SHARDED)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-4, atol=1e-6)
    assert losses[-1] < losses[0]
    rank, sharded = get_rank(), 0
    for pname, value in want.items():
        lay = layouts[pname]
        sharded += bool(lay.opt_shard_group)
        assert got[pname].shape == tuple(lay.slice_shape), pname
        np.testing.assert_allclose(got[pname], value[lay.layout.slice_of(rank)], rtol=1e-4,
                                   atol=1e-5, err_msg=pname)
    assert sharded >= 1                          # dim 0 divides the ranks


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_elementwise_optimizers_sharded_equal_serial(case, name):
    make_net, mode = CASES[case]
    check_equal_serial(make_net, OPTIMIZERS[name], mode)


class Vectors(nn.Cell):
    """Vector parameters only (a scale and a shift per feature, 16 features): every one
    divides the ranks and is stored sharded; a fixed projection to 3 outputs."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(4)
        self.scale = Parameter(Tensor(rng.standard_normal(16).astype(np.float32)), "scale")
        self.shift = Parameter(Tensor(rng.standard_normal(16).astype(np.float32) * 0.1),
                               "shift")
        self.proj = Tensor(rng.standard_normal((16, 3)).astype(np.float32) * 0.3)
        self.lift = Tensor(rng.standard_normal((6, 16)).astype(np.float32) * 0.5)
        self.matmul, self.matmul2 = ops.MatMul(), ops.MatMul()
        self.tanh = ops.Tanh()

    def construct(self, x):
        h = self.tanh(self.matmul(x, self.lift) * self.scale + self.shift)
        return self.matmul2(h, self.proj)


ADAFACTOR = {
    "relative": lambda ps: nn.AdaFactor(ps, weight_decay=0.01),
    "manual_clip": lambda ps: nn.AdaFactor(ps, 0.05, relative_step=False, clip_threshold=0.5,
                                           beta1=None),
}


@pytest.mark.parametrize("name", sorted(ADAFACTOR))
def test_adafactor_sharded_vectors_equal_serial(name):
    check_equal_serial(Vectors, ADAFACTOR[name], "data_parallel")


def test_adafactor_refuses_sharded_matrices():
    make_net, mode = CASES["data_parallel"]
    with pytest.raises(NotImplementedError, match="For 'AdaFactor', the parameter '.*weight' "
                                                  "should be held whole"):
        train(make_net, ADAFACTOR["relative"], mode, **SHARDED)
    # replicated (no parallel optimizer) it trains as the serial run
    want_losses, want, _, _, _ = train(make_net, ADAFACTOR["relative"])
    losses, got, _, _, _ = train(make_net, ADAFACTOR["relative"], mode)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-4, atol=1e-6)
    for pname, value in want.items():
        np.testing.assert_allclose(got[pname], value, rtol=1e-4, atol=1e-5, err_msg=pname)
