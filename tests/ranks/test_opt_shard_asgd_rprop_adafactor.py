"""ASGD, Rprop and AdaFactor with the parallel optimizer (enable_parallel_optimizer=True) on
real MPI worlds: 20 training steps equal the serial run and each rank holds only its dim-0
shard. ASGD and Rprop are element-wise; AdaFactor's RMS norms and its factored row and
column means over a shard are completed over the ranks (matrices and vectors), its row and
column state held as slices; also with model-parallel split weights (Megatron, the update
in the step, in ms.jit or in the optimizer's own graph), and a weight split along both
dims is refused by name."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size, get_rank
import test_layerwise_optimizers as tl
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


@pytest.mark.parametrize("case", sorted(CASES))
def test_adafactor_sharded_matrices_equal_serial(case):
    make_net, mode = CASES[case]
    check_equal_serial(make_net, ADAFACTOR["relative"], mode)
    # the factored state of a shard is the shard's rows (its column means stay whole)
    _, _, layouts, _, graph = train(make_net, ADAFACTOR["relative"], mode, **SHARDED)
    held = {nd.value.name: tuple(nd.shape) for nd in graph.parameters}
    for name, lay in layouts.items():
        if lay.opt_shard_group and len(lay.layout.tensor_shape) == 2:
            rows, cols = lay.layout.tensor_shape
            assert held[f"exp_avg_sq_row.{name}"] == (lay.slice_shape[0],) != (rows,)
            assert held[f"exp_avg_sq_col.{name}"] == (cols,)


@pytest.mark.parametrize("case", sorted(tl.CASES))
def test_adafactor_model_parallel_equals_serial(case):
    make_net, mode, keys = tl.CASES[case]
    want_losses, want, _ = tl.train(make_net, ADAFACTOR["relative"], how=keys.get("how", "cell"))
    losses, got, graph = tl.train(make_net, ADAFACTOR["relative"], mode, **keys)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-4, atol=1e-6)
    held = 0
    for pname, (value, _) in want.items():
        mine, layout = got[pname]
        held += mine.shape != value.shape
        where = layout.slice_of(get_rank()) if layout is not None else ...
        np.testing.assert_allclose(mine, value[where], rtol=1e-4, atol=1e-5, err_msg=pname)
    assert held >= 2
    assert "AllReduce" in [nd.op for nd in graph.nodes]


class BothDims(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones((8, 8), np.float32)), "w")
        self.mm = ops.MatMul().shard(((1, 2), (2, 2)))

    def construct(self, x):
        return self.mm(x, self.w)


@pytest.mark.ranks(4)
def test_adafactor_refuses_a_weight_split_along_both_dims():
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=4,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = BothDims()
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                   nn.AdaFactor(net.trainable_params()))
        with pytest.raises(NotImplementedError, match="For 'AdaFactor', the parameter 'w' is "
                                                      "held split along dims \\[0, 1\\]"):
            step(Tensor(np.ones((4, 8), np.float32)), Tensor(np.zeros((4, 8), np.float32)))
    finally:
        ms.reset_auto_parallel_context()


def test_adafactor_sharded_state_checkpoint_equals_serial(tmp_path_factory):
    """The optimizer's state saved whole after opt-sharded training (its row state held as
    slices, gathered by the save) equals the serial run's."""
    from mpi4py import MPI
    from test_parallel_optimizer import data, mlp
    folder = MPI.COMM_WORLD.bcast(str(tmp_path_factory.mktemp("af")) if get_rank() == 0
                                  else None)

    def saved(mode, **keys):
        ms.reset_auto_parallel_context()
        if mode is not None:
            ms.set_auto_parallel_context(parallel_mode=mode, device_num=get_group_size(),
                                         full_batch=True, **keys)
        ms.set_context(mode=ms.GRAPH_MODE)
        try:
            net = mlp()
            opt = nn.AdaFactor(net.trainable_params())
            step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
            x, y = data()
            for _ in range(3):
                step(Tensor(x), Tensor(y))
            path = f"{folder}/{mode}.safetensors"
            ms.save_checkpoint(opt, path)
        finally:
            ms.reset_auto_parallel_context()
        return ms.load_checkpoint(path)

    want, got = saved(None), saved("data_parallel", **SHARDED)
    assert sorted(want) == sorted(got) and any(k.startswith("exp_avg_sq_row.") for k in want)
    for name, value in want.items():
        np.testing.assert_allclose(got[name].asnumpy(), value.asnumpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=name)
