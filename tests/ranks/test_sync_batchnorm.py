"""nn.SyncBatchNorm on 2/4/8 ranks, each rank holding some rows of its group's batch: the
output, the moving statistics and the gradients equal a serial BatchNorm over the group's
concatenated batch, in PYNATIVE and GRAPH_MODE; `process_groups` splits the ranks."""
import numpy as np
import pytest
from mpi4py import MPI

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size, get_rank

RANKS = (2, 4, 8)


class Weighted(nn.Cell):
    """sum(bn(x) * w): a loss whose gradient reaches every output element differently."""

    def __init__(self, bn, w):
        super().__init__()
        self.bn, self.w = bn, Tensor(w)
        self.sum = ops.ReduceSum()

    def construct(self, x):
        return self.sum(self.bn(x) * self.w)


def rows_of(n, uneven):
    """Rows each world rank holds: 2 each, or rank r r + 1 of them."""
    return [r + 1 if uneven else 2 for r in range(n)]


def data(n, two_d, uneven):
    """The world's batch and loss weights, alike on every rank."""
    rng = np.random.default_rng(5)
    total = sum(rows_of(n, uneven))
    shape = (total, 3, 2, 2) if two_d else (total, 3)
    x = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
    return x, rng.standard_normal(shape).astype(np.float32)


def rows(n, uneven, ranks):
    """Indices of the world batch's rows held by `ranks`, in rank order."""
    starts = np.cumsum([0] + rows_of(n, uneven))
    return np.concatenate([np.arange(starts[r], starts[r + 1]) for r in ranks])


def run(bn, x, w):
    """(output, dx, dgamma, dbeta) of one training call, and the moving statistics after."""
    net = Weighted(bn, w)
    net.set_train()
    params = [bn.gamma, bn.beta]
    y = bn(Tensor(x)).asnumpy()                    # one update of the moving statistics
    _, (dx, (dg, db)) = ms.value_and_grad(net, 0, params)(Tensor(x))
    return (y, dx.asnumpy(), dg.asnumpy(), db.asnumpy(),
            bn.moving_mean.asnumpy(), bn.moving_variance.asnumpy())


def make_bn(two_d, cls=None, **kw):
    ms.set_seed(1)
    if cls is None:
        cls = nn.BatchNorm2d if two_d else nn.BatchNorm1d
    return cls(3, gamma_init="normal", beta_init="normal", momentum=0.8, **kw)


def groups_of(case, n):
    if case == "halves":
        return [list(range(n // 2)), list(range(n // 2, n))]
    if case == "first_pair":          # ranks 2.. are in no group: their own batch
        return [[1, 0]]
    return None


@pytest.mark.parametrize("mode", ["pynative", "graph"])
@pytest.mark.parametrize("two_d", [False, True])
@pytest.mark.parametrize("case", ["world", "halves", "first_pair", "uneven"])
def test_equals_a_serial_batchnorm_over_the_group(mode, two_d, case):
    n, rank = get_group_size(), get_rank()
    uneven = case == "uneven"
    groups = groups_of(case, n)
    members = next((g for g in groups if rank in g), [rank]) if groups else list(range(n))
    x, w = data(n, two_d, uneven)
    mine = rows(n, uneven, [rank])
    ms.set_context(mode=ms.PYNATIVE_MODE)
    want = run(make_bn(two_d), x[rows(n, uneven, members)], w[rows(n, uneven, members)])
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    sync = make_bn(two_d, nn.SyncBatchNorm, process_groups=groups)
    got = run(sync, x[mine], w[mine])
    # where this rank's rows sit in the serial (group-ordered) batch
    member_rows = list(rows(n, uneven, members))
    at = [member_rows.index(i) for i in mine]
    for name, g, v in (("y", got[0], want[0]), ("dx", got[1], want[1])):
        np.testing.assert_allclose(g, v[at], rtol=1e-4, atol=1e-5, err_msg=name)
    # gamma's and beta's gradients: each rank's part; summed over the group, the serial one
    parts = MPI.COMM_WORLD.allgather((got[2], got[3]))
    for k, name in ((0, "dgamma"), (1, "dbeta")):
        total = sum(parts[r][k] for r in members)
        np.testing.assert_allclose(total, want[2 + k], rtol=1e-4, atol=1e-5, err_msg=name)
    for k, name in ((4, "moving_mean"), (5, "moving_variance")):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=name)
    assert not np.allclose(want[4], 0)      # the statistics moved


def test_data_parallel_graph_is_the_global_batchnorm():
    """Compiled data_parallel: the global network's BatchNorm, statistics over all ranks."""
    n, rank = get_group_size(), get_rank()
    x, w = data(n, False, False)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    want = make_bn(False)
    want.set_train()
    y_want = want(Tensor(x)).asnumpy()
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=n, full_batch=False)
    try:
        sync = make_bn(False, nn.SyncBatchNorm)
        sync.set_train()
        y = sync(Tensor(x[2 * rank:2 * rank + 2])).asnumpy()
        grouped = make_bn(False, nn.SyncBatchNorm, process_groups=[[r] for r in range(n)])
        grouped.set_train()
        with pytest.raises(ValueError, match="For 'SyncBatchNorm', the 'process_groups' "
                                             "should be None"):
            grouped(Tensor(x[2 * rank:2 * rank + 2]))
    finally:
        ms.reset_auto_parallel_context()
    np.testing.assert_allclose(y, y_want[2 * rank:2 * rank + 2], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sync.moving_mean.asnumpy(), want.moving_mean.asnumpy(),
                               rtol=1e-5, atol=1e-6)


def test_process_groups_errors():
    n = get_group_size()
    with pytest.raises(ValueError, match=rf"rank ids in 'process_groups' should be in "
                                         rf"\[0, {n}\), but got {n}"):
        nn.SyncBatchNorm(2, process_groups=[[0, n]])
    with pytest.raises(ValueError, match="should be unique, but got 0 twice"):
        nn.SyncBatchNorm(2, process_groups=[[0], [0, 1]])
    with pytest.raises(TypeError, match="process_groups"):
        nn.SyncBatchNorm(2, process_groups=(0, 1))


class Head(nn.Cell):
    """Dense -> (Sync)BatchNorm -> Dense."""

    def __init__(self, bn):
        super().__init__()
        ms.set_seed(2)
        self.net = nn.SequentialCell(nn.Dense(4, 3), bn, nn.Dense(3, 2))

    def construct(self, x):
        return self.net(x)


def test_data_parallel_training_equals_serial():
    """PYNATIVE data_parallel (each rank its rows, DistributedGradReducer with the mean):
    3 Momentum steps of a net with SyncBatchNorm give the serial BatchNorm net's weights
    and moving statistics."""
    n, rank = get_group_size(), get_rank()
    rng = np.random.default_rng(9)
    data = [(rng.standard_normal((2 * n, 4)).astype(np.float32) * 2 + 1,
             rng.standard_normal((2 * n, 2)).astype(np.float32)) for _ in range(3)]

    def train(net, batches):
        net.set_train()
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                   nn.Momentum(net.trainable_params(), 0.1, 0.9))
        for x, y in batches:
            step(Tensor(x), Tensor(y))
        return {p.name: p.asnumpy() for p in net.get_parameters()}

    ms.set_context(mode=ms.PYNATIVE_MODE)
    want = train(Head(nn.BatchNorm1d(3)), data)
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=n,
                                 gradients_mean=True)
    try:
        got = train(Head(nn.SyncBatchNorm(3)),
                    [(x[2 * rank:2 * rank + 2], y[2 * rank:2 * rank + 2]) for x, y in data])
    finally:
        ms.reset_auto_parallel_context()
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)
