"""Checkpoint conversions and loaders of MindSpore's names: ckpt_to_safetensors /
safetensors_to_ckpt, convert_checkpoints & co., load_segmented_checkpoints,
load_checkpoint_async, unified_safetensors, get_ckpt_path_with_strategy,
set_op_strategy_config. Written files are read back here with safetensors' own reader
and a protobuf wire decoder of this file (not through msops), and compared with the
original arrays and numpy slicing."""
import json
import os
import threading
from concurrent.futures import Future

import numpy as np
import pytest
from safetensors.numpy import load_file

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import init, release
from msops.parallel.layout import TensorLayout
from msops.parallel.strategy_ckpt import get_strategies, save_strategy_file
from msops.train.safetensors_io import CheckpointError, write_tensors
from msops.train.serialization import layout_meta

RNG = np.random.default_rng(3)
ARRAYS = {"w": RNG.standard_normal((8, 6)).astype(np.float32),
          "b": np.arange(6, dtype=np.int32),
          "h": RNG.standard_normal((2, 3)).astype(np.float16),
          "steps": np.array(7, np.int64)}
_NP = {"Float32": np.float32, "Int32": np.int32, "Float16": np.float16, "Int64": np.int64}


# -- an independent reader of MindSpore's .ckpt wire format ---------------------------------
def _varint(buf, pos):
    out = shift = 0
    while True:
        b = buf[pos]
        out |= (b & 0x7F) << shift
        pos += 1
        if not b & 0x80:
            return out, pos
        shift += 7


def _fields(buf):
    """(field number, value) of a message: varints as ints, length-delimited as bytes."""
    pos, out = 0, []
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        if key & 7 == 0:
            value, pos = _varint(buf, pos)
        elif key & 7 == 2:
            n, pos = _varint(buf, pos)
            value, pos = bytes(buf[pos:pos + n]), pos + n
        else:
            raise AssertionError(f"unexpected wire type {key & 7}")
        out.append((key >> 3, value))
    return out


def read_ckpt_bytes(path):
    """name -> array of a .ckpt, decoded from its bytes (no trailer expected)."""
    raw = open(path, "rb").read()
    out = {}
    for field, value in _fields(raw):
        assert field == 1
        tag = tensor = None
        for f, v in _fields(value):
            if f == 1:
                tag = v.decode()
            elif f == 2:
                tensor = _fields(v)
        dims = [v for f, v in tensor if f == 1]
        ttype = [v for f, v in tensor if f == 2][0].decode()
        content = b"".join(v for f, v in tensor if f == 3)
        out[tag] = np.frombuffer(content, _NP[ttype]).reshape(dims)
    return out


def assert_same(got, want):
    assert sorted(got) == sorted(want)
    for name, arr in want.items():
        assert np.asarray(got[name]).dtype == arr.dtype, name
        np.testing.assert_array_equal(np.asarray(got[name]), arr)


# -- ckpt_to_safetensors / safetensors_to_ckpt ------------------------------------------------
def test_ckpt_to_safetensors_file_round_trip(tmp_path):
    src = str(tmp_path / "net.ckpt")
    ms.save_checkpoint(ARRAYS, src)
    ms.ckpt_to_safetensors(src)                           # beside the file
    assert_same(load_file(str(tmp_path / "net.safetensors")), ARRAYS)
    out = str(tmp_path / "back")
    ms.safetensors_to_ckpt(str(tmp_path / "net.safetensors"), out)
    assert_same(read_ckpt_bytes(os.path.join(out, "net.ckpt")), ARRAYS)
    loaded = ms.load_checkpoint(os.path.join(out, "net.ckpt"))
    assert_same({k: v.asnumpy() for k, v in loaded.items()}, ARRAYS)


def test_name_map_and_save_path(tmp_path):
    src = str(tmp_path / "a.ckpt")
    ms.save_checkpoint(ARRAYS, src)
    ms.train.ckpt_to_safetensors(src, str(tmp_path / "st"), {"w": "dense.weight"})
    got = load_file(str(tmp_path / "st" / "a.safetensors"))
    want = {("dense.weight" if k == "w" else k): v for k, v in ARRAYS.items()}
    assert_same(got, want)
    ms.train.safetensors_to_ckpt(str(tmp_path / "st" / "a.safetensors"), str(tmp_path / "ck"),
                                 name_map={"dense.weight": "w"})
    assert_same(read_ckpt_bytes(str(tmp_path / "ck" / "a.ckpt")), ARRAYS)


def test_bfloat16_survives_both_ways(tmp_path):
    import ml_dtypes
    arr = RNG.standard_normal((3, 5)).astype(ml_dtypes.bfloat16)
    ms.save_checkpoint({"x": arr}, str(tmp_path / "b.ckpt"))
    ms.ckpt_to_safetensors(str(tmp_path / "b.ckpt"))
    ms.safetensors_to_ckpt(str(tmp_path / "b.safetensors"), str(tmp_path / "again"))
    got = ms.load_checkpoint(str(tmp_path / "again" / "b.ckpt"))["x"].asnumpy()
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.view(np.uint16), arr.view(np.uint16))


def _rank_folders(root, n, suffix, extra=()):
    """rank_<r>/ folders, each with its own arrays (r added), saved as `suffix`."""
    want = {}
    for r in range(n):
        os.makedirs(os.path.join(root, f"rank_{r}"))
        arrays = {k: (v + r).astype(v.dtype) for k, v in ARRAYS.items()}
        for name in ("ckpt_" + str(r),) + tuple(extra):
            ms.save_checkpoint(arrays, os.path.join(root, f"rank_{r}", f"{name}.{suffix}"))
        want[r] = arrays
    return want


@pytest.mark.parametrize("processes_num", [1, 3])
def test_folder_keeps_rank_folders(tmp_path, processes_num):
    root = str(tmp_path / "src")
    want = _rank_folders(root, 4, "ckpt", extra=("other",))
    dst = str(tmp_path / "dst")
    ms.ckpt_to_safetensors(root, dst, file_name_regex=r"^ckpt_\d", processes_num=processes_num)
    assert sorted(os.listdir(dst)) == [f"rank_{r}" for r in range(4)]
    for r in range(4):
        assert os.listdir(os.path.join(dst, f"rank_{r}")) == [f"ckpt_{r}.safetensors"]
        assert_same(load_file(os.path.join(dst, f"rank_{r}", f"ckpt_{r}.safetensors")), want[r])
    # and back, beside the safetensors files (save_path None)
    ms.safetensors_to_ckpt(dst, processes_num=processes_num)
    for r in range(4):
        assert_same(read_ckpt_bytes(os.path.join(dst, f"rank_{r}", f"ckpt_{r}.ckpt")), want[r])


def test_conversion_errors_name_the_function(tmp_path):
    src = str(tmp_path / "n.ckpt")
    ms.save_checkpoint(ARRAYS, src)
    with pytest.raises(ValueError, match="For 'ckpt_to_safetensors', the 'file_path'"):
        ms.ckpt_to_safetensors(str(tmp_path / "missing.ckpt"))
    with pytest.raises(ValueError, match="For 'ckpt_to_safetensors', the 'save_path'"):
        ms.ckpt_to_safetensors(src, str(tmp_path / "out.safetensors"))
    with pytest.raises(ValueError, match="For 'safetensors_to_ckpt', the 'name_map'"):
        ms.safetensors_to_ckpt(src, name_map=[("w", "v")])
    with pytest.raises(ValueError, match="For 'safetensors_to_ckpt', the 'file_path' should "
                                         "be a .safetensors file"):
        ms.safetensors_to_ckpt(src)
    with pytest.raises(ValueError, match="'file_name_regex'"):
        ms.ckpt_to_safetensors(src, file_name_regex="^zzz")
    with pytest.raises(ValueError, match="rank_0, rank_1"):
        ms.ckpt_to_safetensors(str(tmp_path))
    with pytest.raises(ValueError, match="'processes_num'"):
        ms.ckpt_to_safetensors(src, processes_num=0)
    with pytest.raises(ValueError, match="distinct names"):
        ms.ckpt_to_safetensors(src, name_map={"w": "b"})


def test_damaged_source_is_refused_and_nothing_written(tmp_path):
    src = str(tmp_path / "n.ckpt")
    ms.save_checkpoint(ARRAYS, src)
    raw = bytearray(open(src, "rb").read())
    raw[40] ^= 0xFF                                         # inside w's content
    open(src, "wb").write(bytes(raw))
    with pytest.raises(CheckpointError, match="For 'ckpt_to_safetensors'"):
        ms.ckpt_to_safetensors(src)
    assert os.listdir(tmp_path) == ["n.ckpt"]               # no file, no temporary left
    st = str(tmp_path / "s.safetensors")
    write_tensors(st, ARRAYS)
    raw = bytearray(open(st, "rb").read())
    raw[-3] ^= 0xFF
    open(st, "wb").write(bytes(raw))
    with pytest.raises(CheckpointError, match="For 'safetensors_to_ckpt'.*checksum"):
        ms.safetensors_to_ckpt(st)
    assert not os.path.exists(str(tmp_path / "s.ckpt"))


# -- a distributed checkpoint written by hand: w split 4 ways (2 x 2), b over 2 of 4 ------
FULL = {"w": RNG.standard_normal((8, 6)).astype(np.float32),
        "b": RNG.standard_normal((4,)).astype(np.float32)}
SRC = {"w": TensorLayout((2, 2), (1, 0), (8, 6)), "b": TensorLayout((2, 2), (0,), (4,))}
DST = {"w": TensorLayout((2,), (-1, 0), (8, 6)), "b": TensorLayout((2,), (-1,), (4,))}


def _item(lay):
    return {"dev_matrix": list(lay.device_matrix), "tensor_map": list(lay.tensor_map),
            "slice_shape": list(lay.slice_shape), "tensor_shape": list(lay.tensor_shape),
            "field_size": 0, "uniform_split": True, "opt_shard_group": ""}


def _strategy(path, layouts, n):
    save_strategy_file(path, {"device_num": n, "parallel_strategy_item": {},
                              "parallel_layout_item": {k: _item(v) for k, v in layouts.items()}})
    return path


def _numpy_slice(arr, lay, rank):
    """`rank`'s block of `arr` under `lay`, by numpy: dim d is cut in parts along the
    device-matrix axes its tensor-map entry names (counted from the right)."""
    dm = lay.device_matrix
    coords = np.unravel_index(rank, dm)
    index = []
    for d, m in enumerate(lay.tensor_map):
        if m == -1:
            index.append(slice(None))
            continue
        axis = len(dm) - 1 - m
        step = arr.shape[d] // dm[axis]
        index.append(slice(coords[axis] * step, (coords[axis] + 1) * step))
    return arr[tuple(index)]


def _shards(root, fmt="safetensors", with_layout=True, hyper=None):
    for r in range(4):
        os.makedirs(os.path.join(root, f"rank_{r}"))
        tensors = {n: np.ascontiguousarray(_numpy_slice(FULL[n], SRC[n], r)) for n in FULL}
        tensors.update(hyper or {})
        path = os.path.join(root, f"rank_{r}", f"net_{r}.{fmt}")
        if fmt == "ckpt":
            ms.save_checkpoint(tensors, path)
        else:
            write_tensors(path, tensors, {n: layout_meta(SRC[n], True) for n in FULL}
                          if with_layout else None)
    return root


def test_convert_checkpoints_reshards_like_numpy(tmp_path):
    src = _shards(str(tmp_path / "src"), fmt="ckpt")
    src_strategy = _strategy(str(tmp_path / "s.json"), SRC, 4)
    dst_strategy = _strategy(str(tmp_path / "d.json"), DST, 2)
    dst = str(tmp_path / "dst")
    ms.parallel.convert_checkpoints(src, dst, "new_", src_strategy, dst_strategy, 2, "ckpt")
    for r in range(2):
        got = read_ckpt_bytes(os.path.join(dst, f"rank_{r}", f"new_{r}.ckpt"))
        assert_same(got, {n: np.ascontiguousarray(_numpy_slice(FULL[n], DST[n], r))
                          for n in FULL})
    with pytest.raises(ValueError, match="For 'convert_checkpoints', the 'process_num'"):
        ms.parallel.convert_checkpoints(src, dst, "x", src_strategy, None, 0)
    with pytest.raises(FileNotFoundError, match="For 'convert_checkpoints'"):
        ms.parallel.convert_checkpoints(str(tmp_path / "none"), dst, "x")


def test_convert_checkpoint_by_rank(tmp_path):
    src = _shards(str(tmp_path / "src"))
    src_strategy = _strategy(str(tmp_path / "s.json"), SRC, 4)
    dst_strategy = _strategy(str(tmp_path / "d.json"), DST, 2)
    for r in range(2):
        needed = ms.parallel.rank_list_for_convert(r, src_strategy, dst_strategy)
        assert needed == ms.rank_list_for_transform(r, src_strategy, dst_strategy)
        files = {k: os.path.join(src, f"rank_{k}", f"net_{k}.safetensors") for k in needed}
        out = str(tmp_path / f"out{r}.safetensors")
        ms.parallel.convert_checkpoint_by_rank(r, files, out, src_strategy, dst_strategy)
        assert_same(load_file(out), {n: np.ascontiguousarray(_numpy_slice(FULL[n], DST[n], r))
                                     for n in FULL})
    with pytest.raises(ValueError, match="For 'convert_checkpoint_by_rank'.*rank_list_for_convert"):
        ms.parallel.convert_checkpoint_by_rank(
            0, {0: os.path.join(src, "rank_0", "net_0.safetensors")},
            str(tmp_path / "x.safetensors"), src_strategy, None)
    with pytest.raises(TypeError, match="For 'rank_list_for_convert', the 'rank_id'"):
        ms.parallel.rank_list_for_convert("0", src_strategy, dst_strategy)


# -- unified_safetensors -----------------------------------------------------------------
def test_unified_safetensors_merges_whole_parameters(tmp_path):
    hyper = {"global_step": np.array([12], np.int32)}
    src = _shards(str(tmp_path / "src"), with_layout=False, hyper=hyper)
    strategy = _strategy(str(tmp_path / "s.json"), SRC, 4)
    dst = str(tmp_path / "unified")
    ms.parallel.unified_safetensors(src, strategy, dst)
    weight_map = json.load(open(os.path.join(dst, "param_name_map.json")))
    assert weight_map["metadata"]["total_size"] == sum(a.nbytes for a in FULL.values())
    assert weight_map["weight_map"] == {"w": "part0.safetensors", "b": "part0.safetensors"}
    assert_same(load_file(os.path.join(dst, "part0.safetensors")), FULL)
    assert_same(load_file(os.path.join(dst, "hyper_param.safetensors")), hyper)


def test_unified_safetensors_choice_func_and_missing_rank(tmp_path):
    src = _shards(str(tmp_path / "src"))
    strategy = _strategy(str(tmp_path / "s.json"), SRC, 4)
    dst = str(tmp_path / "u")
    ms.unified_safetensors(src, strategy, dst, choice_func=lambda n: "bias" if n == "b" else False)
    assert_same(load_file(os.path.join(dst, "part0.safetensors")), {"bias": FULL["b"]})
    assert json.load(open(os.path.join(dst, "param_name_map.json")))["weight_map"] == {
        "bias": "part0.safetensors"}
    os.remove(os.path.join(src, "rank_3", "net_3.safetensors"))
    with pytest.raises(ValueError, match="For 'unified_safetensors'.*source ranks \\[3\\]"):
        ms.unified_safetensors(src, strategy, str(tmp_path / "v"))
    with pytest.raises(ValueError, match="For 'unified_safetensors', the 'src_strategy_file'"):
        ms.unified_safetensors(src, str(tmp_path / "none.json"), dst)
    with pytest.raises(ValueError, match="'split_dst_file'"):
        ms.unified_safetensors(src, strategy, dst, split_dst_file=(3, 2))


def test_unified_safetensors_deduplicated_files(tmp_path):
    """Each replica's slice saved by one rank only (merge_with_redundancy=False): b's
    slices are on ranks 0 and 1 (b is split over the device axis 0 only)."""
    src = _shards(str(tmp_path / "src"))
    strategy = _strategy(str(tmp_path / "s.json"), SRC, 4)
    holders = {}
    for r in range(4):
        key = _numpy_slice(np.arange(4), SRC["b"], r).tobytes()
        holders.setdefault(key, r)
    assert len(holders) == 2
    for r in range(4):
        if r not in holders.values():
            path = os.path.join(src, f"rank_{r}", f"net_{r}.safetensors")
            tensors = load_file(path)
            write_tensors(path, {"w": tensors["w"]}, {"w": layout_meta(SRC["w"], True)})
    ms.unified_safetensors(src, strategy, str(tmp_path / "u"), merge_with_redundancy=False)
    assert_same(load_file(str(tmp_path / "u" / "part0.safetensors")), FULL)


# -- load_segmented_checkpoints / load_checkpoint_async ----------------------------------
class Two(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.zeros((8, 6), np.float32)), name="w")
        self.b = Parameter(Tensor(np.zeros((6,), np.int32)), name="b")

    def construct(self, x):
        return x


def test_load_segmented_checkpoints(tmp_path):
    ms.save_checkpoint({"w": ARRAYS["w"]}, str(tmp_path / "seg_0.ckpt"))
    ms.save_checkpoint({"b": ARRAYS["b"], "opt.m": ARRAYS["h"]}, str(tmp_path / "seg_1.ckpt"))
    ms.save_checkpoint({"ignored": ARRAYS["h"]}, str(tmp_path / "other.safetensors"))
    net = Two()
    got = ms.load_segmented_checkpoints(str(tmp_path), net, specify_prefix=["w", "b"])
    assert sorted(got) == ["b", "w"]
    np.testing.assert_array_equal(net.w.asnumpy(), ARRAYS["w"])
    np.testing.assert_array_equal(net.b.asnumpy(), ARRAYS["b"])
    got = ms.parallel.load_segmented_checkpoints(str(tmp_path), filter_prefix="opt.")
    assert sorted(got) == ["b", "w"]
    got = ms.load_segmented_checkpoints(str(tmp_path), choice_func=lambda n: n == "opt.m")
    np.testing.assert_array_equal(got["opt.m"].asnumpy(), ARRAYS["h"])
    ms.save_checkpoint({"w": ARRAYS["w"] + 1}, str(tmp_path / "seg_2.ckpt"))
    with pytest.raises(ValueError, match="For 'load_segmented_checkpoints'.*'w'"):
        ms.load_segmented_checkpoints(str(tmp_path))
    with pytest.raises(ValueError, match="For 'load_segmented_checkpoints', the 'ckpt_file_dir'"):
        ms.load_segmented_checkpoints(str(tmp_path / "nope"))
    with pytest.raises(TypeError, match="'filter_prefix'"):
        ms.load_segmented_checkpoints(str(tmp_path), filter_prefix=3)
    with pytest.raises(ValueError, match="encrypted"):
        ms.load_segmented_checkpoints(str(tmp_path), dec_key=b"k" * 16)


def test_load_checkpoint_async(tmp_path):
    path = str(tmp_path / "a.safetensors")
    ms.save_checkpoint({"w": ARRAYS["w"], "b": ARRAYS["b"]}, path)
    threads = []
    net = Two()
    future = ms.load_checkpoint_async(path, net, choice_func=lambda n: threads.append(
        threading.current_thread().name) or True)
    assert isinstance(future, Future)
    got = future.result(timeout=60)
    assert sorted(got) == ["b", "w"]
    np.testing.assert_array_equal(got["w"].asnumpy(), ARRAYS["w"])
    np.testing.assert_array_equal(net.w.asnumpy(), ARRAYS["w"])
    assert threads and all(t.startswith("msops-load") for t in threads)
    assert sorted(ms.train.load_checkpoint_async(path, filter_prefix="w").result()) == ["b"]
    with pytest.raises(FileNotFoundError, match="For 'load_checkpoint_async'"):
        ms.load_checkpoint_async(str(tmp_path / "gone.ckpt"))
    with pytest.raises(ValueError, match="For 'load_checkpoint_async', the 'ckpt_file_name'"):
        ms.load_checkpoint_async(str(tmp_path / "a.bin"))
    raw = bytearray(open(path, "rb").read())
    raw[-2] ^= 0xFF
    open(path, "wb").write(bytes(raw))
    with pytest.raises(CheckpointError, match="checksum"):
        ms.load_checkpoint_async(path).result(timeout=60)


# -- get_ckpt_path_with_strategy, on simulated ranks ---------------------------------------
def test_get_ckpt_path_with_strategy(tmp_path):
    """b is split over device axis 0 only: ranks holding the same slices of w and b are
    replicas. Rank 3's file is gone: the path found holds exactly rank 3's slices."""
    src = _shards(str(tmp_path / "src"))
    for r in range(4):                                  # MindSpore's names: rank_<r>/<name>
        os.rename(os.path.join(src, f"rank_{r}", f"net_{r}.safetensors"),
                  os.path.join(src, f"rank_{r}", "net.safetensors"))
    lay = {"b": SRC["b"]}                               # w split 4 ways: no replicas of it
    strategy_b = _strategy(str(tmp_path / "b.json"), lay, 4)
    strategy_wb = _strategy(str(tmp_path / "wb.json"), SRC, 4)
    own = os.path.join(src, "rank_3", "net.safetensors")
    want = {n: _numpy_slice(FULL[n], SRC[n], 3) for n in FULL}
    os.remove(own)
    for r, path in ((3, own), (1, os.path.join(src, "rank_1", "net.safetensors"))):
        init("simulation", world_size=4, rank=r)
        try:
            if r == 1:                                  # its own file exists
                assert ms.get_ckpt_path_with_strategy(path, strategy_b) == path
                continue
            found = ms.train.get_ckpt_path_with_strategy(path, strategy_b)
            assert found is not None and found != own
            got = load_file(found)
            np.testing.assert_array_equal(got["b"], want["b"])
            assert ms.get_ckpt_path_with_strategy(path, strategy_wb) is None
            assert ms.get_ckpt_path_with_strategy(str(tmp_path / "x.ckpt"), strategy_b) is None
        finally:
            release()
    with pytest.raises(TypeError, match="For 'get_ckpt_path_with_strategy'"):
        ms.get_ckpt_path_with_strategy(3, strategy_b)


# -- set_op_strategy_config, on a simulated world of 8 ------------------------------------
class Chain(nn.Cell):
    def __init__(self, strategy=None):
        super().__init__()
        self.matmul = ops.MatMul()
        if strategy:
            self.matmul.shard(strategy)
        self.relu = ops.ReLU()
        self.w = Parameter(Tensor(np.ones((16, 8), np.float32)), name="w")

    def construct(self, x):
        return self.relu(self.matmul(x, self.w))


X = Tensor(np.ones((8, 16), np.float32))


@pytest.fixture
def propagation(sim):
    sim(8, 3)
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_auto_parallel_context(parallel_mode="auto_parallel", device_num=8, full_batch=True,
                                 search_mode="sharding_propagation")
    yield
    ms.reset_auto_parallel_context()


def test_set_op_strategy_config_save_then_load(propagation, tmp_path):
    path = str(tmp_path / "ops" / "strategy.json")
    ms.parallel.set_op_strategy_config("SAVE", path)
    net = Chain(((2, 1), (1, 4)))
    net.compile(X)
    content = json.load(open(path))
    saved = {k: v["parallel_strategy"] for k, v in content["parallel_strategy_item"].items()}
    assert saved["matmul"] == [[2, 1], [1, 4]]
    assert saved == {k: [list(s) for s in v] for k, v in get_strategies(net).items()}
    assert content["parallel_layout_item"] == {}
    # edit the file: a fresh network without shard() takes the file's strategies
    content["parallel_strategy_item"]["matmul"]["parallel_strategy"] = [[4, 2], [2, 1]]
    content["parallel_strategy_item"]["relu"]["parallel_strategy"] = [[8, 1]]
    json.dump(content, open(path, "w"))
    ms.parallel.set_op_strategy_config("LOAD", path)
    fresh = Chain()
    fresh.compile(X)
    assert get_strategies(fresh) == {"matmul": ((4, 2), (2, 1)), "relu": ((8, 1),)}
    # outside sharding propagation the setting does not act (MindSpore's condition)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel")
    other = Chain(((1, 1), (1, 8)))
    other.compile(X)
    assert get_strategies(other)["matmul"] == ((1, 1), (1, 8))


def test_set_op_strategy_config_errors(tmp_path):
    with pytest.raises(KeyError, match="absolute path"):
        ms.parallel.set_op_strategy_config("SAVE", "rel/strategy.json")
    with pytest.raises(KeyError, match="'.json'"):
        ms.parallel.set_op_strategy_config("SAVE", str(tmp_path / "s.txt"))
    with pytest.raises(KeyError, match="'SAVE' or 'LOAD'"):
        ms.parallel.set_op_strategy_config("KEEP", str(tmp_path / "s.json"))
