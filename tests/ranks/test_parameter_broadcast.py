"""parameter_broadcast under real MPI: parameters made different on every rank agree
within each replica group afterwards (each holds its group's first rank's values), and
slices split over the ranks are untouched; MindSpore's ValueErrors."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size, get_rank
from msops.parallel import parameter_broadcast
from msops.parallel.strategy_ckpt import save_strategy_file, strategy_file_dict

RANKS = (2, 4)
N = get_group_size()
RANK = get_rank()
BASE = {name: np.random.default_rng(k).standard_normal((8, 8)).astype(np.float32)
        for k, name in enumerate(("w_split", "w_rep", "w_mixed"))}


class Net(nn.Cell):
    """x @ w_split (columns split over all ranks) @ w_rep (replicated on all ranks)
    @ w_mixed (columns split over N/2 ranks, two replicas)."""

    def __init__(self):
        super().__init__()
        self.m1 = ops.MatMul().shard(((1, 1), (1, N)))
        self.m2 = ops.MatMul().shard(((N, 1), (1, 1)))
        self.m3 = ops.MatMul().shard(((2, 1), (1, N // 2)))
        for name, value in BASE.items():
            setattr(self, name, Parameter(Tensor(value), name))

    def construct(self, x):
        return self.m3(self.m2(self.m1(x, self.w_split), self.w_rep), self.w_mixed)


def _slice(name, rank):
    """Rank `rank`'s slice of BASE[name], by hand: w_split's columns 8/N per rank,
    w_mixed's 8/(N/2) per position rank % (N/2) (the minor device axis), w_rep whole."""
    if name == "w_split":
        return BASE[name][:, rank * 8 // N:(rank + 1) * 8 // N]
    if name == "w_mixed":
        k, w = rank % (N // 2), 8 // (N // 2)
        return BASE[name][:, k * w:(k + 1) * w]
    return BASE[name]


#: the rank each rank's copy comes from, by hand: its replica group's first rank
SOURCE = {"w_split": RANK, "w_rep": 0, "w_mixed": RANK % (N // 2)}


@pytest.fixture
def net():
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True)
    net = Net()
    net(Tensor(np.ones((4, 8), np.float32)))        # the parameters now hold their slices
    for name in BASE:                                # every rank its own values
        getattr(net, name).set_data(Tensor(_slice(name, RANK) + 100 * RANK))
    yield net
    ms.reset_auto_parallel_context()


@pytest.mark.parametrize("source", ["parameter_layout_dict", "strategy_file"])
def test_replicas_take_their_group_first_rank_values(net, source, tmp_path_factory):
    layout = net.parameter_layout_dict
    if source == "strategy_file":      # the same layouts, read back from a strategy file
        path = str(tmp_path_factory.getbasetemp() / f"strategy_{RANK}.json")
        save_strategy_file(path, strategy_file_dict(net, N))
        layout = ms.build_searched_strategy(path)
    assert sorted(layout) == sorted(BASE)
    parameter_broadcast(net, layout, cur_rank=RANK)
    for name in BASE:
        got = getattr(net, name).asnumpy()
        np.testing.assert_array_equal(got, _slice(name, RANK) + 100 * SOURCE[name],
                                      err_msg=name)


def test_a_subset_of_parameters(net):
    layout = {"w_rep": net.parameter_layout_dict["w_rep"]}
    parameter_broadcast(net, layout, RANK, 0)
    np.testing.assert_array_equal(net.w_rep.asnumpy(), BASE["w_rep"])
    np.testing.assert_array_equal(net.w_mixed.asnumpy(), _slice("w_mixed", RANK) + 100 * RANK)


@pytest.mark.parametrize("kwargs,match", [
    ({"cur_rank": (RANK + 1) % N}, rf"the 'cur_rank' should be this process's rank {RANK}, "
                                   rf"but got {(RANK + 1) % N}"),
    ({"cur_rank": RANK, "initial_rank": 1}, r"the 'initial_rank' should be the first rank of "
                                            r"this rank's pipeline stage, 0, but got 1"),
])
def test_wrong_ranks(net, kwargs, match):
    with pytest.raises(ValueError, match=rf"For 'parameter_broadcast', {match}"):
        parameter_broadcast(net, net.parameter_layout_dict, **kwargs)


def test_unknown_parameter(net):
    layout = {"nope": net.parameter_layout_dict["w_rep"]}
    with pytest.raises(ValueError, match=r"For 'parameter_broadcast', the parameter 'nope' of "
                                         r"'layout' should be one of the net's parameters"):
        parameter_broadcast(net, layout, RANK)
