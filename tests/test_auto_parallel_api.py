"""AutoParallel's configuration methods: the auto-parallel context each one writes, and
its errors (one process; the training itself is tests/ranks/test_auto_parallel.py)."""
import pytest

import msops as ms
from msops import Layout, nn
from msops.parallel.auto_parallel import AutoParallel
from msops.parallel.nn import GradAccumulation, MicroBatchInterleaved, Pipeline


@pytest.fixture(autouse=True)
def _world(sim):
    sim(8, 0)                    # AutoParallel reads the world (a simulated one of 8 here)
    yield
    ms.reset_auto_parallel_context()


def ctx(key):
    return ms.get_auto_parallel_context(key)


def test_each_method_writes_its_context_keys(tmp_path):
    net = AutoParallel(nn.Dense(2, 2), parallel_mode="recursive_programming")
    assert (ctx("parallel_mode"), ctx("search_mode")) == ("auto_parallel", "recursive_programming")
    assert ctx("dataset_strategy") == "data_parallel" and ctx("full_batch") is False
    assert ctx("device_num") == 8
    net.dataset_strategy(((1, 1), (1,)))
    assert ctx("dataset_strategy") == ((1, 1), (1,))
    net.hsdp(shard_size=2, threshold=8, optimizer_level="level2")
    assert ctx("enable_parallel_optimizer") is True
    assert ctx("optimizer_weight_shard_size") == 2
    assert ctx("parallel_optimizer_config")["parallel_optimizer_threshold"] == 8
    net.pipeline(stages=1, output_broadcast=True)
    assert ctx("pipeline_result_broadcast") is True
    assert ctx("pipeline_config") == {"pipeline_interleave": False, "pipeline_scheduler": "1f1b"}
    net.pipeline(stages=1, interleave=True, scheduler="gpipe")
    assert ctx("pipeline_config") == {"pipeline_interleave": True, "pipeline_scheduler": "gpipe"}
    net.comm_fusion({"allreduce": {"mode": "size", "config": 32}})
    assert ctx("comm_fusion")["allreduce"] == {"mode": "size", "config": 32}
    net.comm_fusion({"openstate": False})
    assert ctx("comm_fusion")["allgather"]["config"] * 2 ** 20 == 1     # one byte: no fusion
    net.save_param_strategy_file(str(tmp_path / "s.json"))
    net.load_operator_strategy_file(str(tmp_path / "l.json"))
    net.disable_strategy_file_only_for_trainable_params()
    assert ctx("strategy_ckpt_config") == {"save_file": str(tmp_path / "s.json"),
                                           "load_file": str(tmp_path / "l.json"),
                                           "only_trainable_params": False}
    assert ctx("strategy_ckpt_save_file") == str(tmp_path / "s.json")
    net.enable_gradients_mean()
    net.disable_gradient_fp32_sync()
    net.disable_loss_repeated_mean()
    net.enable_fp32_communication()
    net.set_group_ckpt_save_file("groups.json")
    assert (ctx("gradients_mean"), ctx("gradient_fp32_sync"), ctx("loss_repeated_mean"),
            ctx("force_fp32_communication"), ctx("group_ckpt_save_file")) == \
        (True, False, False, True, "groups.json")
    assert net.parallel_mode == "recursive_programming"


@pytest.mark.parametrize("call,error,match", [
    (lambda: AutoParallel(nn.Dense(2, 2), "semi_auto_parallel"), ValueError,
     "'parallel_mode' should be one of"),
    (lambda: AutoParallel(3), TypeError, "'network' should be a Cell or a function"),
    (lambda: AutoParallel(nn.Dense(2, 2)).hsdp(shard_size=0), ValueError, "'shard_size'"),
    (lambda: AutoParallel(nn.Dense(2, 2)).hsdp(threshold=-1), ValueError, "'threshold'"),
    (lambda: AutoParallel(nn.Dense(2, 2)).hsdp(optimizer_level="level4"), ValueError,
     "'optimizer_level'"),
    (lambda: AutoParallel(nn.Dense(2, 2)).pipeline(stages=0), ValueError, "'stages'"),
    (lambda: AutoParallel(nn.Dense(2, 2)).pipeline(stages=2.0), TypeError, "'stages'"),
    (lambda: AutoParallel(nn.Dense(2, 2)).pipeline(interleave=1), TypeError, "'interleave'"),
    (lambda: AutoParallel(nn.Dense(2, 2)).pipeline(scheduler="zb"), ValueError, "scheduler"),
    (lambda: AutoParallel(nn.Dense(2, 2)).dataset_strategy(None), ValueError, "'config'"),
    (lambda: AutoParallel(nn.Dense(2, 2)).dataset_strategy(4), TypeError, "'config'"),
    (lambda: AutoParallel(nn.Dense(2, 2)).dataset_strategy((Layout((2,), ("dp",))("dp"),)),
     ValueError, "a Layout per input is not supported"),
    (lambda: AutoParallel(nn.Dense(2, 2)).comm_fusion([1]), TypeError, "'config'"),
    (lambda: AutoParallel(nn.Dense(2, 2)).save_param_strategy_file(1), TypeError, "'file_path'"),
    (lambda: AutoParallel(nn.Dense(2, 2)).save_operator_strategy_file("rel.json"), ValueError,
     "absolute path ending in '.json'"),
    (lambda: AutoParallel(nn.Dense(2, 2)).dump_local_norm("/tmp/x"), NotImplementedError,
     "local-norm dumps"),
])
def test_errors_name_the_method_and_argument(call, error, match):
    with pytest.raises(error, match=match) as err:
        call()
    assert "AutoParallel" in str(err.value)


def test_parallel_nn_cells_are_the_nn_cells_with_mindspores_defaults():
    net = nn.WithLossCell(nn.Dense(4, 2), nn.MSELoss())
    p = Pipeline(net)
    assert isinstance(p, nn.PipelineCell) and p.micro_size == 1
    assert isinstance(GradAccumulation(net, 2), nn.GradAccumulationCell)
    assert MicroBatchInterleaved is nn.MicroBatchInterleaved
    with pytest.raises(ValueError, match="For 'Pipeline', the 'stage_config' should name"):
        Pipeline(net, 2, stage_config={"nope": 0})


def test_no_init_parameters_builds_the_same_initial_values():
    ms.set_seed(11)
    want = nn.Dense(3, 4).weight.asnumpy()
    ms.set_seed(11)
    with nn.no_init_parameters():
        got = nn.Dense(3, 4).weight.asnumpy()
    assert got.shape == (4, 3) and abs(want).sum() > 0
    assert (got == want).all()
