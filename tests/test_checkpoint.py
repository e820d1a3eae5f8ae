"""Checkpoints in one process: round trips, layouts, atomic writes, corruption, loading."""
import json
import os
import re
import struct

import ml_dtypes
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.parallel.layout import TensorLayout
from msops.parallel.slices import local_slice, place_slices
from msops.train import safetensors_io
from msops.train.ckpt_format import Checkpoint
from msops.train.safetensors_io import CheckpointError


class Net(nn.Cell):
    def __init__(self, seed=0):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.dense = nn.Dense(4, 3)
        self.dense.weight.set_data(rng.standard_normal((3, 4)).astype(np.float32))
        self.matmul = ops.MatMul()
        self.w = Parameter(Tensor(rng.standard_normal((3, 8)).astype(np.float32)), name="w")

    def construct(self, x):
        return self.matmul(self.dense(x), self.w)


def params(net):
    return {p.name: p.asnumpy().copy() for p in net.get_parameters()}


def test_round_trip_serial_net(tmp_path):
    path = str(tmp_path / "net.safetensors")
    net = Net(seed=1)
    ms.save_checkpoint(net, path)
    loaded = ms.load_checkpoint(path)
    assert set(loaded) == set(params(net))
    for name, want in params(net).items():
        assert isinstance(loaded[name], Parameter) and loaded[name].name == name
        np.testing.assert_array_equal(loaded[name].asnumpy(), want)
    fresh = Net(seed=2)
    assert ms.load_param_into_net(fresh, loaded) == ([], [])
    x = Tensor(np.ones((2, 4), np.float32))
    np.testing.assert_array_equal(fresh(x).asnumpy(), net(x).asnumpy())


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int32, np.uint8, np.bool_,
                                   ml_dtypes.bfloat16, np.complex64, np.complex128])
def test_dtypes_round_trip(tmp_path, dtype):
    path = str(tmp_path / "d.safetensors")
    arr = (np.arange(12) % 5).reshape(3, 4).astype(dtype)
    ms.save_checkpoint({"t": Tensor(arr)}, path)
    got = ms.load_checkpoint(path)["t"].asnumpy()
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, arr)
    meta = json.loads(_header(path)["__metadata__"]["msops.tensors"])
    assert meta["t"]["dtype"] == np.dtype(dtype).name


def test_list_form_choice_func_and_append_dict(tmp_path):
    path = str(tmp_path / "l.safetensors")
    ms.save_checkpoint([{"name": "a", "data": Tensor(np.ones(2, np.float32))},
                        {"name": "b", "data": Tensor(np.zeros(2, np.float32))}], path,
                       choice_func=lambda n: n != "b", append_dict={"epoch": 3})
    got = ms.load_checkpoint(path)
    assert sorted(got) == ["a", "epoch"] and int(got["epoch"].asnumpy()) == 3


def test_load_param_into_net_reports_unused_and_missing(tmp_path):
    net = Net()
    d = {"dense.weight": Parameter(Tensor(np.ones((3, 4), np.float32)), name="dense.weight"),
         "extra": Parameter(Tensor(np.ones(1, np.float32)), name="extra")}
    not_loaded, unused = ms.load_param_into_net(net, d)
    assert sorted(not_loaded) == ["dense.bias", "w"] and unused == ["extra"]
    np.testing.assert_array_equal(net.dense.weight.asnumpy(), np.ones((3, 4)))
    with pytest.raises(ValueError, match=r"strict_load=True.*dense.bias"):
        ms.load_param_into_net(Net(), d, strict_load=True)


@pytest.mark.parametrize("value,what", [(np.ones((4, 3), np.float32), r"shape of parameter "
                                         r"'dense.weight' should be \(3, 4\), but got \(4, 3\)"),
                                        (np.ones((3, 4), np.float64), r"dtype of parameter "
                                         r"'dense.weight' should be Float32, but got Float64")])
def test_mismatch_names_the_parameter(value, what):
    with pytest.raises(ValueError, match=what):
        ms.load_param_into_net(Net(), {"dense.weight": Tensor(value)})


def test_load_checkpoint_into_net_argument(tmp_path):
    path = str(tmp_path / "n.safetensors")
    ms.save_checkpoint(Net(seed=5), path)
    fresh = Net(seed=6)
    ms.load_checkpoint(path, net=fresh)
    for name, want in params(Net(seed=5)).items():
        np.testing.assert_array_equal(params(fresh)[name], want)


# -- atomic writes --------------------------------------------------------------------
def test_failed_write_leaves_previous_file(tmp_path, monkeypatch):
    path = str(tmp_path / "c.safetensors")
    ms.save_checkpoint({"a": Tensor(np.ones(4, np.float32))}, path)
    before = open(path, "rb").read()

    def half_then_crash(tensors, filename, metadata=None):
        with open(filename, "wb") as f:          # the write dies midway through the file
            f.write(b"\x00" * 20)
        raise OSError("disk full")

    monkeypatch.setattr(safetensors_io, "save_file", half_then_crash)
    with pytest.raises(OSError, match="disk full"):
        ms.save_checkpoint({"a": Tensor(np.zeros(4, np.float32))}, path)
    assert open(path, "rb").read() == before
    assert os.listdir(tmp_path) == ["c.safetensors"]       # no temporary file left
    np.testing.assert_array_equal(ms.load_checkpoint(path)["a"].asnumpy(), np.ones(4))


def test_failed_fsync_leaves_previous_file(tmp_path, monkeypatch):
    path = str(tmp_path / "c.safetensors")
    ms.save_checkpoint({"a": Tensor(np.ones(4, np.float32))}, path)
    before = open(path, "rb").read()

    def no_fsync(fd):
        raise OSError("I/O error")

    monkeypatch.setattr(os, "fsync", no_fsync)
    with pytest.raises(OSError, match="I/O error"):
        ms.save_checkpoint({"a": Tensor(np.zeros(4, np.float32))}, path)
    assert open(path, "rb").read() == before
    assert os.listdir(tmp_path) == ["c.safetensors"]


# -- corruption -----------------------------------------------------------------------
def _header(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n])


def _saved(tmp_path):
    path = str(tmp_path / "x.safetensors")
    ms.save_checkpoint({"a": Tensor(np.arange(8, dtype=np.float32)),
                        "b": Tensor(np.ones((2, 2), np.float32))}, path)
    return path


def test_truncated_file_names_the_file(tmp_path):
    path = _saved(tmp_path)
    raw = open(path, "rb").read()
    open(path, "wb").write(raw[:len(raw) - 5])
    with pytest.raises(CheckpointError, match=r"x\.safetensors.*truncated or corrupted"):
        ms.load_checkpoint(path)


def test_bit_flip_names_file_and_tensor(tmp_path):
    path = _saved(tmp_path)
    header = _header(path)
    raw = bytearray(open(path, "rb").read())
    start = 8 + struct.unpack("<Q", raw[:8])[0] + header["a"]["data_offsets"][0]
    raw[start + 5] ^= 0x10
    open(path, "wb").write(bytes(raw))
    with pytest.raises(CheckpointError, match=r"tensor 'a' in '.*x\.safetensors' fails its "
                                              r"checksum"):
        ms.load_checkpoint(path)


def test_tampered_metadata_is_an_error(tmp_path):
    path = _saved(tmp_path)
    raw = open(path, "rb").read()
    open(path, "wb").write(raw.replace(b'\\"crc32c\\": ', b'\\"crc32c\\":1', 1))
    with pytest.raises(CheckpointError, match=r"metadata of '.*x\.safetensors' is corrupted: "
                                              r"it fails its crc32 check"):
        ms.load_checkpoint(path)


def test_metadata_damage_is_named_not_leaked(tmp_path):
    """What the checkpoint fuzzer found: a damaged dtype or key in the metadata gave
    numpy's TypeError / a KeyError; a file of an older msops (no metadata crc32) still
    gets each entry checked."""
    import zlib
    from safetensors.numpy import save_file
    path = str(tmp_path / "old.safetensors")
    arr = np.arange(6, dtype=np.float32)
    good = {"dtype": "float32", "shape": [6], "crc32": zlib.crc32(arr.tobytes())}
    for entry, what in [({**good, "dtype": "int33"}, "dtype of 'a' should be the name of a "
                                                     "numeric dtype, but got 'int33'"),
                        ({**good, "dtype": "object"}, "numeric dtype, but got 'object'"),
                        ({"dtxpe": "float32", "shape": [6], "crc32": 1}, "but got None"),
                        ({**good, "shape": [-6]}, "shape of 'a' should be a list of sizes"),
                        ({"dtype": "float32", "shape": [6]}, "should hold its checksum")]:
        save_file({"a": arr}, path, metadata={"format": "msops-checkpoint-1",
                                              "msops.tensors": json.dumps({"a": entry})})
        with pytest.raises(CheckpointError, match=r"metadata of '.*old\.safetensors' is "
                                                  r"corrupted: .*" + re.escape(what)):
            ms.load_checkpoint(path)
    save_file({"a": arr}, path, metadata={"format": "msops-checkpoinu-1",
                                          "msops.tensors": json.dumps({"a": good})})
    with pytest.raises(CheckpointError, match="the format should be 'msops-checkpoint-1', "
                                              "but got 'msops-checkpoinu-1'"):
        ms.load_checkpoint(path)


def test_a_file_cut_at_a_value_boundary_or_empty_is_an_error(tmp_path):
    """A .ckpt cut where one value ends parses as a shorter valid protobuf: msops' value
    count says so. Empty: an error too, and so is loading no parameter (as MindSpore)."""
    path = str(tmp_path / "x.ckpt")
    ms.save_checkpoint({"a": Tensor(np.arange(3, dtype=np.float32)),
                        "b": Tensor(np.ones((2, 2), np.float32))}, path)
    raw = open(path, "rb").read()
    first = Checkpoint()
    first.ParseFromString(raw)
    one = Checkpoint()
    one.value.append(first.value[0])
    cut = len(one.SerializeToString())
    open(path, "wb").write(raw[:cut])
    with pytest.raises(CheckpointError, match=r"x\.ckpt' holds 1 values of the 2 msops wrote: "
                                              r"it is truncated after tensor 'a'"):
        ms.load_checkpoint(path)
    open(path, "wb").write(b"")
    with pytest.raises(CheckpointError, match=r"x\.ckpt' is empty \(0 bytes\)"):
        ms.load_checkpoint(path)
    ms.save_checkpoint({"a": Tensor(np.ones(2, np.float32))}, path)
    with pytest.raises(ValueError, match=r"no parameter was loaded from '.*x\.ckpt': "
                                         r"choice_func kept none of its 1"):
        ms.load_checkpoint(path, choice_func=lambda name: False)


def test_files_with_zlib_crc32_still_read(tmp_path):
    """Files written before the switch to CRC-32C hold zlib crc32s: still checked."""
    import zlib
    from safetensors.numpy import save_file
    path = str(tmp_path / "old.safetensors")
    arr = np.arange(6, dtype=np.float32)
    entry = {"dtype": "float32", "shape": [6], "crc32": zlib.crc32(arr.tobytes())}
    save_file({"a": arr}, path, metadata={"format": "msops-checkpoint-1",
                                          "msops.tensors": json.dumps({"a": entry})})
    np.testing.assert_array_equal(ms.load_checkpoint(path)["a"].asnumpy(), arr)
    entry["crc32"] ^= 1
    save_file({"a": arr}, path, metadata={"format": "msops-checkpoint-1",
                                          "msops.tensors": json.dumps({"a": entry})})
    with pytest.raises(CheckpointError, match=r"tensor 'a' in '.*old\.safetensors' fails"):
        ms.load_checkpoint(path)


def test_missing_file_and_bad_format(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothere"):
        ms.load_checkpoint(str(tmp_path / "nothere.safetensors"))
    with pytest.raises(ValueError, match=r"'format' should be one of .*, but got 'npz'"):
        ms.save_checkpoint({"a": Tensor(np.ones(1, np.float32))}, str(tmp_path / "a"),
                           format="npz")


def test_no_pickle_anywhere():
    root = os.path.join(os.path.dirname(ms.__file__))
    for folder, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                text = open(os.path.join(folder, f)).read()
                assert not re.search(r"import (c?pickle|dill|joblib)|allow_pickle=True", text), f


# -- layouts --------------------------------------------------------------------------
@pytest.mark.parametrize("dm,tmap", [((2, 4), (1, 0)), ((2, 4), (0, 1)), ((2, 4), (-1, 0)),
                                     ((2, 2, 2), ((2, 0), -1)), ((8,), (-1, -1))])
def test_place_slices_inverts_local_slice(dm, tmap):
    full = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
    lay = TensorLayout(dm, tmap, full.shape)
    blocks = np.stack([local_slice(full, lay, r) for r in range(lay.device_num)])
    np.testing.assert_array_equal(place_slices(blocks, lay), full)
    assert local_slice(blocks[3], lay, 3) is not None        # a slice is taken as it is


class Sharded(nn.Cell):
    def __init__(self, n):
        super().__init__()
        self.matmul = ops.MatMul().shard(((2, 1), (1, n // 2)))
        self.w = Parameter(Tensor(np.ones((16, 8), np.float32)), name="w")
        self.b = Parameter(Tensor(np.ones((8,), np.float32)), name="b")
        self.add = ops.Add()

    def construct(self, x):
        return self.add(self.matmul(x, self.w), self.b)


def test_parameter_layout_dict(sim):
    sim(8, 3)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = Sharded(8)
        assert net.parameter_layout_dict == {}
        net.compile(Tensor(np.ones((4, 16), np.float32)))
        lay = net.parameter_layout_dict
    finally:
        ms.reset_auto_parallel_context()
    # MatMul ((2, 1), (1, 4)): device matrix [2, 4] (the size-1 k axis dropped); w = (k, n)
    # has k unsplit and n over axis 0 (counted from the right)
    assert lay["w"][:6] == ([2, 4], [-1, 0], [16, 2], 0, True, "")
    assert lay["w"].slice_shape == [16, 2] and lay["w"].layout.tensor_shape == (16, 8)
    # b feeds Add's data-parallel default (dim 0 of the first input over all 8): replicated
    assert lay["b"][:3] == ([8], [-1], [8])
    assert set(lay) == {"w", "b"}


def test_parameter_layout_dict_stand_alone():
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Net()
    net.compile(Tensor(np.ones((2, 4), np.float32)))
    assert net.parameter_layout_dict == {}


# -- merging shards -------------------------------------------------------------------
def test_merge_sliced_parameter_by_layout_and_by_dim0():
    full = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
    lay = TensorLayout((2, 2), (0, 1), full.shape)         # rows over the right axis
    slices = []
    for r in range(4):
        p = Parameter(Tensor(local_slice(full, lay, r)), name="w")
        p.layout = lay
        slices.append(p)
    merged = ms.merge_sliced_parameter(slices)
    assert merged.name == "w"
    np.testing.assert_array_equal(merged.asnumpy(), full)
    plain = [Parameter(Tensor(s.asnumpy()), name="w") for s in slices]
    np.testing.assert_array_equal(ms.merge_sliced_parameter(plain, {"w": lay}).asnumpy(), full)
    np.testing.assert_array_equal(ms.merge_sliced_parameter(plain).asnumpy(),
                                  np.concatenate([s.asnumpy() for s in plain]))
    with pytest.raises(ValueError, match=r"number of slices of 'w' should be 4"):
        ms.merge_sliced_parameter(slices[:3])
    with pytest.raises(ValueError, match=r"name, dtype and shape of the first"):
        ms.merge_sliced_parameter([slices[0], Parameter(Tensor(full), name="w")])


def test_shards_of_8_simulated_ranks_load_into_a_stand_alone_net(tmp_path):
    from msops.communication import init, release
    x = Tensor(np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32))
    ms.set_context(mode=ms.GRAPH_MODE)
    want = Sharded(8)
    for p in want.get_parameters():
        p.set_data(np.random.default_rng(len(p.name)).standard_normal(p.shape)
                   .astype(np.float32))
    expected = want(x).asnumpy()
    files = [str(tmp_path / f"rank{r}.safetensors") for r in range(8)]
    for r in range(8):                   # a shard save moves no data: simulated ranks do it
        init("simulation", world_size=8, rank=r)
        ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8,
                                     full_batch=True)
        try:
            net = Sharded(8)
            ms.load_param_into_net(net, {p.name: p for p in want.get_parameters()})
            net.compile(x)
            ms.save_checkpoint(net, files[r], integrated_save=False)
        finally:
            ms.reset_auto_parallel_context()
            release()
    assert ms.load_checkpoint(files[5])["w"].shape == (16, 2)
    fresh = Sharded(8)
    assert ms.load_distributed_checkpoint(fresh, files) == ([], [])
    np.testing.assert_array_equal(fresh(x).asnumpy(), expected)
    with pytest.raises(ValueError, match=r"layout of 'w' .* has 8 ranks, so there should be "
                                         r"8 rank files, but got 4"):
        ms.load_distributed_checkpoint(Sharded(8), files[:4])
