"""Chosen strategies after compile and strategy files (strategy_ckpt_save/load_file),
on a simulated world of 8 (planning only)."""
import json

import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.parallel.strategy_ckpt import get_strategies


class Net(nn.Cell):
    def __init__(self, strategy=((2, 1), (1, 4))):
        super().__init__()
        self.matmul = ops.MatMul()
        if strategy:
            self.matmul.shard(strategy)
        self.add = ops.Add()
        self.w = Parameter(Tensor(np.ones((16, 8), np.float32)), name="w")
        self.b = Parameter(Tensor(np.zeros((8,), np.float32)), name="b")

    def construct(self, x):
        return self.add(self.matmul(x, self.w), self.b)


class Outer(nn.Cell):
    def __init__(self, inner):
        super().__init__()
        self.backbone = inner
        self.relu = ops.ReLU()

    def construct(self, x):
        return self.relu(self.backbone(x))


X = Tensor(np.ones((8, 16), np.float32))


@pytest.fixture
def semi(sim):
    sim(8, 3)
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8,
                                 full_batch=True)
    yield
    ms.reset_auto_parallel_context()


def test_get_strategies_after_compile(semi):
    net = Outer(Net())
    assert get_strategies(net) == {}
    net.compile(X)
    # the user's strategy, and the data-parallel defaults the pass chose for the others
    assert get_strategies(net) == {"backbone.matmul": ((2, 1), (1, 4)),
                                   "backbone.add": ((8, 1), (1,)),
                                   "relu": ((8, 1),)}


def test_save_then_load_strategy_file(semi, tmp_path):
    path = str(tmp_path / "strategy.json")
    ms.set_auto_parallel_context(strategy_ckpt_save_file=path)
    net = Net()
    net.compile(X)
    content = json.load(open(path))
    assert content["device_num"] == 8
    assert content["parallel_strategy_item"]["matmul"] == {
        "op": "MatMul", "stage": 0, "parallel_strategy": [[2, 1], [1, 4]]}
    assert content["parallel_layout_item"]["w"]["dev_matrix"] == [2, 4]
    assert content["parallel_layout_item"]["w"]["tensor_map"] == [-1, 0]
    assert content["parallel_layout_item"]["w"]["slice_shape"] == [16, 2]
    # a fresh network without shard() takes the file's strategies, also under a wrapper
    ms.set_auto_parallel_context(strategy_ckpt_save_file="", strategy_ckpt_load_file=path)
    fresh = Outer(Net(strategy=None))
    fresh.compile(X)
    assert get_strategies(fresh)["backbone.matmul"] == ((2, 1), (1, 4))
    lay = fresh.parameter_layout_dict
    assert lay["backbone.w"][:3] == ([2, 4], [-1, 0], [16, 2]), lay


def test_strategy_ckpt_config_names_the_same_files(semi, tmp_path):
    """MindSpore 2.x's spelling: strategy_ckpt_config's save_file / load_file act as
    strategy_ckpt_save_file / strategy_ckpt_load_file."""
    path = str(tmp_path / "strategy.json")
    ms.set_auto_parallel_context(strategy_ckpt_config={"save_file": path})
    assert ms.get_auto_parallel_context("strategy_ckpt_config") == {
        "load_file": "", "save_file": path, "only_trainable_params": True}
    Net().compile(X)
    assert json.load(open(path))["parallel_strategy_item"]["matmul"]["parallel_strategy"] == \
        [[2, 1], [1, 4]]
    ms.set_auto_parallel_context(strategy_ckpt_config={"load_file": path,
                                                       "only_trainable_params": False})
    assert ms.get_auto_parallel_context("strategy_ckpt_save_file") == ""
    fresh = Net(strategy=None)
    fresh.compile(X)
    assert get_strategies(fresh)["matmul"] == ((2, 1), (1, 4))


@pytest.mark.parametrize("config,error,match", [
    ([("save_file", "a")], TypeError, "'strategy_ckpt_config' should be"),
    ({"save": "a"}, ValueError, r"keys of 'strategy_ckpt_config' should be in .* \['save'\]"),
    ({"save_file": 3}, TypeError, r"strategy_ckpt_config\['save_file'\]"),
    ({"only_trainable_params": 1}, TypeError, "only_trainable_params"),
])
def test_strategy_ckpt_config_errors(config, error, match):
    with pytest.raises(error, match=match):
        ms.set_auto_parallel_context(strategy_ckpt_config=config)


def test_strategy_file_mismatches_are_errors(semi, tmp_path):
    path = str(tmp_path / "s.json")
    ms.set_auto_parallel_context(strategy_ckpt_save_file=path)
    Net().compile(X)
    content = json.load(open(path))
    ms.set_auto_parallel_context(strategy_ckpt_save_file="", strategy_ckpt_load_file=path)

    content["device_num"] = 4
    json.dump(content, open(path, "w"))
    with pytest.raises(ValueError, match=r"s\.json' was saved for device_num 4, which "
                                         r"should equal this run's 8"):
        Net().compile(X)
    content["device_num"] = 8
    content["parallel_strategy_item"]["conv"] = {"op": "Conv2D", "parallel_strategy": [[1]]}
    json.dump(content, open(path, "w"))
    with pytest.raises(ValueError, match=r"names the op 'conv', which the network should have"):
        Net().compile(X)
    del content["parallel_strategy_item"]["conv"]
    content["parallel_strategy_item"]["add"] = {"op": "Sub", "parallel_strategy": [[1, 1], [1]]}
    json.dump(content, open(path, "w"))
    with pytest.raises(ValueError, match=r"op 'add' in '.*' should be a Add .*but got Sub"):
        Net().compile(X)
    content["parallel_strategy_item"]["add"] = {"op": "Add", "parallel_strategy": [[1, 1]]}
    json.dump(content, open(path, "w"))
    with pytest.raises(ValueError, match=r"For 'Add', the strategy should have one entry per "
                                         r"tensor input \(2\), but got 1"):
        Net().compile(X)
    del content["parallel_strategy_item"]["add"]
    content["parallel_layout_item"]["w"]["tensor_map"] = [0, -1]
    json.dump(content, open(path, "w"))
    with pytest.raises(ValueError, match=r"layout of parameter 'w' should be the file's"):
        Net().compile(X)
    open(path, "w").write("{not json")
    with pytest.raises(ValueError, match=r"'.*s\.json' should be JSON"):
        Net().compile(X)


def test_context_keys_are_strings():
    with pytest.raises(TypeError, match="strategy_ckpt_save_file"):
        ms.set_auto_parallel_context(strategy_ckpt_save_file=3)
    assert ms.get_auto_parallel_context("strategy_ckpt_load_file") == ""


def _strategy_json(ops: dict, layouts: dict, device_num: int = 2) -> dict:
    return {"current_stage": 0, "device_num": device_num, "parallel_strategy_item": ops,
            "parallel_layout_item": layouts}


def test_merge_pipeline_strategys_unions_the_stage_files(tmp_path):
    """Two stages' files (each with its ops and parameters, one parameter in both): the
    merged file holds every item once; a disagreeing item or device_num is refused."""
    w0 = {"dev_matrix": [2], "tensor_map": [-1, 0], "slice_shape": [4, 2],
          "tensor_shape": [4, 4], "field_size": 0, "uniform_split": True, "opt_shard_group": ""}
    w1 = dict(w0, tensor_map=[0, -1], slice_shape=[2, 4])
    mm = {"op": "MatMul", "stage": 0, "parallel_strategy": [[1, 1], [1, 2]]}
    src = tmp_path / "stages"
    src.mkdir()
    (src / "stage0.json").write_text(json.dumps(_strategy_json({"a.matmul": mm},
                                                               {"w0": w0, "tied": w1})))
    (src / "stage1.json").write_text(json.dumps(_strategy_json(
        {"b.matmul": dict(mm, stage=1)}, {"w1": w1, "tied": w1})))
    dst = str(tmp_path / "merged.json")
    ms.merge_pipeline_strategys(str(src), dst)
    merged = json.load(open(dst))
    assert merged["device_num"] == 2
    assert merged["parallel_strategy_item"] == {"a.matmul": mm,
                                                "b.matmul": dict(mm, stage=1)}
    assert merged["parallel_layout_item"] == {"w0": w0, "w1": w1, "tied": w1}
    assert sorted(ms.build_searched_strategy(dst)) == ["tied", "w0", "w1"]
    (src / "stage1.json").write_text(json.dumps(_strategy_json({}, {"tied": w0})))
    with pytest.raises(ValueError, match=r"the 'tied' of '.*stage1.json' should equal the "
                                         r"one of '.*stage0.json'"):
        ms.merge_pipeline_strategys(str(src), dst)
    (src / "stage1.json").write_text(json.dumps(_strategy_json({}, {}, device_num=4)))
    with pytest.raises(ValueError, match=r"every strategy file should have one device_num"):
        ms.merge_pipeline_strategys(str(src), dst)
    with pytest.raises(ValueError, match=r"'src_strategy_dirs' should be a folder"):
        ms.merge_pipeline_strategys(str(tmp_path / "none"), dst)
