"""set_context / set_auto_parallel_context: every documented key accepted, the keys that
act here act (graph dumps, dataset_strategy, enable_alltoall), errors name key and choices."""
import os

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from msops.parallel import TensorLayout, plan
from msops.parallel.redistribution_plan import AllGatherDim, AllToAllDims, Slice

#: MindSpore 2.x's documented set_context keys, with a non-default value each
CONTEXT_VALUES = {
    "device_id": 1, "device_target": "CPU", "max_device_memory": "2GB",
    "variable_memory_max_size": "1GB", "mempool_block_size": "2GB", "op_timeout": 60,
    "enable_dump": True, "save_dump_path": "d", "deterministic": "ON",
    "print_file_path": "p", "env_config_path": "e", "precompile_only": False,
    "reserve_class_name_in_scope": False, "pynative_synchronize": True, "debug_level": "DEBUG",
    "enable_graph_kernel": True, "graph_kernel_flags": "--opt_level=1",
    "enable_reduce_precision": False, "aoe_tune_mode": "online", "aoe_config": {"a": 1},
    "check_bprop": True, "max_call_depth": 2000, "grad_for_scalar": True,
    "enable_compile_cache": True, "compile_cache_path": "c", "inter_op_parallel_num": 2,
    "runtime_num_threads": 4, "disable_format_transform": True, "support_binary": True,
    "memory_optimize_level": "O1", "memory_offload": "ON", "ascend_config": {"x": 1},
    "jit_syntax_level": "STRICT", "gpu_config": {"y": 2}, "jit_config": {"jit_level": "O1"},
    "exec_order": "dfs", "save_graphs_path": "g",
}

#: MindSpore 2.x's documented set_auto_parallel_context keys, with an accepted value each
AUTO_PARALLEL_VALUES = {
    "device_num": 4, "global_rank": 1, "gradients_mean": True, "gradient_fp32_sync": False,
    "loss_repeated_mean": False, "parallel_mode": "hybrid_parallel",
    "search_mode": "sharding_propagation", "parameter_broadcast": True,
    "strategy_ckpt_load_file": "a.ckpt", "strategy_ckpt_save_file": "b.ckpt",
    "full_batch": True, "dataset_strategy": ((2, 1), (2, 1)),
    "enable_parallel_optimizer": True,
    "parallel_optimizer_config": {"gradient_accumulation_shard": False},
    "enable_alltoall": False, "all_reduce_fusion_config": [2, 5],
    "pipeline_stages": 1, "pipeline_config": None, "pipeline_result_broadcast": False,
    "comm_fusion": {"allreduce": {"mode": "size", "config": 32},
                    "allgather": {"mode": "auto"}},
    "strategy_ckpt_config": {"load_file": "", "save_file": "s.ckpt",
                             "only_trainable_params": False}, "group_ckpt_save_file": "g.ckpt",
    "auto_pipeline": False, "dump_local_norm": False, "dump_local_norm_path": "",
    "dump_device_local_norm": False, "force_fp32_communication": True,
    "grad_accumulation_step": 2, "optimizer_weight_shard_size": 2,
    "optimizer_weight_shard_aggregated_save": True,
}


@pytest.fixture(autouse=True)
def _restore():
    saved = {k: ms.get_context(k) for k in CONTEXT_VALUES}
    yield
    ms.set_context(**saved)
    ms.set_context(save_graphs=False)
    ms.reset_auto_parallel_context()


@pytest.mark.parametrize("key", sorted(CONTEXT_VALUES))
def test_every_set_context_key_is_accepted_and_read_back(key):
    ms.set_context(**{key: CONTEXT_VALUES[key]})
    assert ms.get_context(key) == CONTEXT_VALUES[key]


@pytest.mark.parametrize("key", sorted(AUTO_PARALLEL_VALUES))
def test_every_auto_parallel_key_is_accepted_and_reset(key):
    default = ms.get_auto_parallel_context(key)
    ms.set_auto_parallel_context(**{key: AUTO_PARALLEL_VALUES[key]})
    assert ms.get_auto_parallel_context(key) == AUTO_PARALLEL_VALUES[key]
    ms.reset_auto_parallel_context()
    assert ms.get_auto_parallel_context(key) == default


@pytest.mark.parametrize("kwargs,match", [
    ({"device_target": "TPU"}, r"'device_target' should be"),
    ({"precompile_only": True}, r"'precompile_only' should be False"),
    ({"deterministic": "YES"}, r"'deterministic' should be one of \['ON', 'OFF'\], but got "
                               r"'YES'"),
    ({"save_graphs": 4}, r"'save_graphs'"),
    ({"max_call_depth": 0}, r"'max_call_depth'"),
    ({"no_such_key": 1}, r"the key should be one of .*but got 'no_such_key'"),
])
def test_set_context_errors_name_the_key(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=r"For 'set_context', (the )?" + match):
        ms.set_context(**kwargs)


def test_set_context_is_all_or_nothing():
    with pytest.raises(ValueError):
        ms.set_context(device_id=3, device_target="TPU")
    assert ms.get_context("device_id") == 0


def test_an_accelerator_target_is_recorded_with_a_warning(monkeypatch):
    """MindSpore scripts name their device (`device_target="Ascend"`): msops keeps the
    value for scripts that read it and says once that it computes on the CPU."""
    from msops import context
    monkeypatch.setattr(context, "_warned_device", [False])
    with pytest.warns(UserWarning, match="'device_target' 'Ascend' is recorded, but msops "
                                         "runs every kernel with numpy on the CPU"):
        ms.set_context(mode=ms.GRAPH_MODE, device_target="Ascend")
    assert ms.get_context("device_target") == "Ascend"
    ms.set_context(device_target="GPU")                     # warned once per process
    assert ms.get_context("device_target") == "GPU"
    ms.set_context(device_target="CPU")


@pytest.mark.parametrize("kwargs,match", [
    ({"pipeline_stages": 0}, r"'pipeline_stages' should be .*positive"),
    ({"pipeline_config": {"pipeline_scheduler": "zb"}}, r"'pipeline_scheduler'"),
    ({"pipeline_config": {"stages": 2}}, r"'pipeline_config' keys should be in"),
    ({"auto_pipeline": True}, r"'auto_pipeline' should be False \(automatic stage assignment"),
    ({"dump_local_norm": True}, r"'dump_local_norm' should be False"),
    ({"search_mode": "greedy"}, r"'search_mode'"),
    ({"dataset_strategy": "model_parallel"}, r"'dataset_strategy' should be 'data_parallel', "
                                             r"'full_batch' or one tuple"),
    ({"dataset_strategy": ((2, 0),)}, r"'dataset_strategy'"),
    ({"comm_fusion": {"allreduce": {"mode": "index", "config": [2]}}}, r"'comm_fusion'"),
    ({"all_reduce_fusion_config": [5, 2]}, r"'all_reduce_fusion_config' should be an "
                                           r"increasing list"),
    ({"parallel_mode": "pipeline"}, r"'parallel_mode' should be one of"),
])
def test_auto_parallel_errors_name_the_key(kwargs, match):
    with pytest.raises(ValueError, match=r"For 'set_auto_parallel_context', (the )?" + match):
        ms.set_auto_parallel_context(**kwargs)


def test_pipeline_interleave_is_a_bool():
    with pytest.raises(TypeError, match=r"'pipeline_interleave' should be bool, but got int"):
        ms.set_auto_parallel_context(pipeline_config={"pipeline_interleave": 1})
    ms.set_auto_parallel_context(pipeline_config={"pipeline_interleave": True})
    assert ms.get_auto_parallel_context("pipeline_config") == {
        "pipeline_interleave": True, "pipeline_scheduler": "1f1b"}
    ms.reset_auto_parallel_context()


def test_full_batch_and_dataset_strategy_follow_each_other():
    assert ms.get_auto_parallel_context("dataset_strategy") == "data_parallel"
    ms.set_auto_parallel_context(full_batch=True)
    assert ms.get_auto_parallel_context("dataset_strategy") == "full_batch"
    ms.set_auto_parallel_context(dataset_strategy="data_parallel")
    assert ms.get_auto_parallel_context("full_batch") is False
    ms.set_auto_parallel_context(dataset_strategy=[[4, 1]])
    assert ms.get_auto_parallel_context("dataset_strategy") == ((4, 1),)
    assert ms.get_auto_parallel_context("full_batch") is False
    ms.set_auto_parallel_context(auto_parallel_search_mode="dynamic_programming")
    assert ms.get_auto_parallel_context("search_mode") == "dynamic_programming"


class TwoRelu(nn.Cell):
    """ReLU split by rows, then by columns: the redistribution between them is a permute."""

    def __init__(self, n):
        super().__init__()
        self.a = ops.ReLU().shard(((n, 1),))
        self.b = ops.ReLU().shard(((1, n),))

    def construct(self, x):
        return self.b(self.a(x))


@pytest.mark.parametrize("alltoall,want", [(True, ["AlltoAll"]), (False, ["AllGather"])])
def test_enable_alltoall_chooses_the_redistribution(sim, alltoall, want):
    sim(4, 1)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=4,
                                 full_batch=True, enable_alltoall=alltoall)
    ms.set_context(mode=ms.GRAPH_MODE)
    graph = TwoRelu(4).compile(Tensor(np.ones((8, 8), np.float32)))
    assert [n.op for n in graph.nodes if n.is_communication] == want


def test_plan_without_alltoall_gathers_then_slices():
    src = TensorLayout((4,), (0, -1), (8, 8))
    dst = TensorLayout((4,), (-1, 0), (8, 8))
    assert [type(s) for s in plan(src, dst)] == [AllToAllDims]
    assert [type(s) for s in plan(src, dst, alltoall=False)] == [AllGatherDim, Slice]


def test_dataset_strategy_tuple_lays_out_the_fed_inputs(sim):
    """((2, 1),) on 4 ranks: each rank feeds half the rows, rank pairs feed the same half."""
    sim(4, 3)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=4,
                                 dataset_strategy=((2, 1),))
    ms.set_context(mode=ms.GRAPH_MODE)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.relu = ops.ReLU().shard(((4, 1),))

        def construct(self, x):
            return self.relu(x)

    graph = Net().compile(Tensor(np.ones((4, 6), np.float32)))    # this rank's (4, 6) slice
    assert graph.inputs[0].shape == (4, 6)
    assert graph.inputs[0].layout.tensor_shape == (8, 6)            # global: 2 x 4 rows
    assert graph.nodes[-1].shape == (2, 6)                          # ReLU wants a quarter
    assert not any(n.is_communication for n in graph.nodes)         # a local slice suffices


def test_dataset_strategy_errors(sim):
    sim(4, 0)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=4,
                                 dataset_strategy=((3, 1),))
    ms.set_context(mode=ms.GRAPH_MODE)
    with pytest.raises(ValueError, match=r"'dataset_strategy' of input 0 should use a number "
                                         r"of devices dividing device_num 4, but \(3, 1\)"):
        nn.ReLU().compile(Tensor(np.ones((3, 6), np.float32)))
    ms.set_auto_parallel_context(dataset_strategy=((2,),))
    with pytest.raises(ValueError, match=r"'dataset_strategy' of input 0 should have length 2"):
        nn.ReLU().compile(Tensor(np.ones((3, 6), np.float32)))


def test_save_graphs_writes_ir_and_dot(tmp_path):
    ms.set_context(mode=ms.GRAPH_MODE, save_graphs=True, save_graphs_path=str(tmp_path))
    net = nn.Dense(3, 2)
    net(Tensor(np.ones((4, 3), np.float32)))
    ms.value_and_grad(net, None, net.trainable_params())(Tensor(np.ones((4, 3), np.float32)))
    files = sorted(os.listdir(tmp_path))
    assert [f.rsplit(".", 1)[1] for f in files] == ["dot", "ir", "dot", "ir"]
    ir = (tmp_path / files[1]).read_text()
    assert "MatMul" in ir and ir.startswith("graph Dense")
    assert "digraph" in (tmp_path / files[0]).read_text()
    ms.set_context(save_graphs=False)
    net(Tensor(np.ones((5, 3), np.float32)))                          # a new compile
    assert len(os.listdir(tmp_path)) == 4


def test_pipeline_config_is_checked():
    ms.set_auto_parallel_context(pipeline_stages=2,
                                 pipeline_config={"pipeline_scheduler": "gpipe"})
    assert ms.get_auto_parallel_context("pipeline_stages") == 2
    assert ms.get_auto_parallel_context("pipeline_config") == {
        "pipeline_interleave": False, "pipeline_scheduler": "gpipe"}
    ms.set_auto_parallel_context(pipeline_config={"pipeline_scheduler": "1f1b"})
    assert ms.get_auto_parallel_context("pipeline_config")["pipeline_scheduler"] == "1f1b"
    ms.reset_auto_parallel_context()
    assert ms.get_auto_parallel_context("pipeline_stages") == 1
