"""transform_checkpoints and `msops ckpt show|verify|merge|reshard`, on shard folders
written by simulated ranks (a shard save moves no data), checked against numpy slicing."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import init, release
from msops.parallel.strategy_ckpt import layout_from_item
from msops.train import ckpt_format
from msops.train.ckpt_cli import main as ckpt
from msops.train.safetensors_io import read_tensors, write_tensors

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Net(nn.Cell):
    def __init__(self, mm=None, add=None):
        super().__init__()
        self.matmul = ops.MatMul()
        self.add = ops.Add()
        if mm:
            self.matmul.shard(mm)
        if add:
            self.add.shard(add)
        rng = np.random.default_rng(7)
        self.w = Parameter(Tensor(rng.standard_normal((16, 8)).astype(np.float32)), name="w")
        self.b = Parameter(Tensor(rng.standard_normal((4, 8)).astype(np.float32)), name="b")

    def construct(self, x):
        return self.add(self.matmul(x, self.w), self.b)


X = Tensor(np.ones((4, 16), np.float32))
SRC = dict(n=8, mm=((2, 1), (1, 4)), add=((1, 8), (1, 8)))       # w replicated twice
DST = dict(n=4, mm=((1, 2), (2, 2)), add=((4, 1), (4, 1)))


def _full():
    net = Net()
    return {p.name: p.asnumpy().copy() for p in net.get_parameters()}


def _run_ranks(tmp_path, n, mm, add, folder=None, strategy=None):
    """Compile on each simulated rank (saving the strategy file), save shards if asked."""
    strategy = strategy or str(tmp_path / f"strategy{n}.json")
    ms.set_context(mode=ms.GRAPH_MODE)
    for r in range(n):
        init("simulation", world_size=n, rank=r)
        ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=n,
                                     full_batch=True, strategy_ckpt_save_file=strategy)
        try:
            net = Net(mm, add)
            net.compile(X)
            if folder:
                os.makedirs(os.path.join(folder, f"rank_{r}"), exist_ok=True)
                ms.save_checkpoint(net, os.path.join(folder, f"rank_{r}", "net.safetensors"),
                                   integrated_save=False)
        finally:
            ms.reset_auto_parallel_context()
            release()
    return strategy


@pytest.fixture
def src(tmp_path):
    folder = str(tmp_path / "src")
    strategy = _run_ranks(tmp_path, folder=folder, **SRC)
    return folder, strategy


def _check_rank_files(folder, n, strategy, prefix, fmt="safetensors"):
    items = json.load(open(strategy))["parallel_layout_item"]
    full = _full()
    for r in range(n):
        path = os.path.join(folder, f"rank_{r}", f"{prefix}{r}.{fmt}")
        got = ms.load_checkpoint(path)
        assert sorted(got) == ["b", "w"]
        for name, whole in full.items():
            lay = layout_from_item(name, items[name])
            np.testing.assert_array_equal(got[name].asnumpy(), whole[lay.slice_of(r)])


def test_transform_8_ranks_to_4_with_another_strategy(src, tmp_path):
    folder, src_strategy = src
    dst_strategy = _run_ranks(tmp_path, **DST)
    dst = str(tmp_path / "dst")
    ms.transform_checkpoints(folder, dst, "net_", src_strategy, dst_strategy)
    assert sorted(os.listdir(dst)) == [f"rank_{r}" for r in range(4)]
    _check_rank_files(dst, 4, dst_strategy, "net_")
    # and the new shards load into a stand-alone network: the serial values
    fresh = Net()
    for p in fresh.get_parameters():
        p.set_data(np.zeros(p.shape, np.float32))
    ms.load_distributed_checkpoint(
        fresh, [os.path.join(dst, f"rank_{r}", f"net_{r}.safetensors") for r in range(4)])
    for name, want in _full().items():
        np.testing.assert_array_equal(getattr(fresh, name).asnumpy(), want)


def test_transform_to_whole_and_to_mindspore_ckpt(src, tmp_path):
    folder, src_strategy = src
    dst = str(tmp_path / "whole")
    ms.transform_checkpoints(folder, dst, "whole_", src_strategy, None, output_format="ckpt")
    got = ckpt_format.read_ckpt(os.path.join(dst, "rank_0", "whole_0.ckpt"))
    for name, want in _full().items():
        np.testing.assert_array_equal(got[name], want)


def test_mindspore_style_shards_need_the_strategy_file(tmp_path, src):
    """.ckpt shards carry no layout: the saving run's strategy file places them."""
    folder, strategy = src
    ms_dir = str(tmp_path / "ms")
    for r in range(8):
        arrays, _ = read_tensors(os.path.join(folder, f"rank_{r}", "net.safetensors"))
        os.makedirs(os.path.join(ms_dir, f"rank_{r}"))
        ckpt_format.write_ckpt(os.path.join(ms_dir, f"rank_{r}", f"net{r}.ckpt"), arrays)
    out = str(tmp_path / "out")
    with pytest.raises(ValueError, match=r"'\w' has different shapes or values in the rank "
                                         r"files"):
        ms.transform_checkpoints(ms_dir, out, "x", None, None)
    ms.transform_checkpoints(ms_dir, out, "x", strategy, None)
    got = ms.load_checkpoint(os.path.join(out, "rank_0", "x0.safetensors"))
    for name, want in _full().items():
        np.testing.assert_array_equal(got[name].asnumpy(), want)
    fresh = Net()
    for p in fresh.get_parameters():
        p.set_data(np.zeros(p.shape, np.float32))
    files = [os.path.join(ms_dir, f"rank_{r}", f"net{r}.ckpt") for r in range(8)]
    assert ms.load_distributed_checkpoint(fresh, files, train_strategy_filename=strategy) \
        == ([], [])
    for name, want in _full().items():
        np.testing.assert_array_equal(getattr(fresh, name).asnumpy(), want)


def test_transform_errors_name_what_is_wrong(src, tmp_path):
    folder, strategy = src
    content = json.load(open(strategy))
    content["parallel_layout_item"]["w"]["slice_shape"] = [16, 4]
    content["parallel_layout_item"]["w"].pop("tensor_shape")
    bad = str(tmp_path / "bad.json")
    json.dump(content, open(bad, "w"))
    with pytest.raises(ValueError, match=r"'w' should have the shape \(16, 16\) of the "
                                         r"destination strategy, but got \(16, 8\)"):
        ms.transform_checkpoints(folder, str(tmp_path / "d"), "p", None, bad)
    shutil.rmtree(os.path.join(folder, "rank_5"))
    with pytest.raises(FileNotFoundError, match=r"checkpoint of rank 5 is missing: "
                                                r"'.*rank_5' does not exist"):
        ms.transform_checkpoints(folder, str(tmp_path / "d"), "p", None, None)


# -- the command line -------------------------------------------------------------------
def test_cli_show_and_verify(src, capsys):
    folder, _ = src
    assert ckpt(["show", folder]) == 0
    out = capsys.readouterr().out
    assert "8 rank files" in out
    assert "w  [16, 8]  float32  dev_matrix=[2, 4] tensor_map=[-1, 0] slice=[16, 2]" in out
    assert "b  [4, 8]  float32  dev_matrix=[8] tensor_map=[-1, 0] slice=[4, 1]" in out
    assert ckpt(["show", os.path.join(folder, "rank_3", "net.safetensors")]) == 0
    assert "w  [16, 2]  float32  dev_matrix=[2, 4] tensor_map=[-1, 0] slice of [16, 8]" \
        in capsys.readouterr().out
    assert ckpt(["verify", folder]) == 0
    assert "every element is covered exactly once" in capsys.readouterr().out
    whole = os.path.join(folder, "..", "whole.ckpt")
    ms.save_checkpoint({"a": Tensor(np.ones(3, np.float32))}, whole, crc_check=True)
    assert ckpt(["verify", whole]) == 0
    assert "every crc32 it holds matches" in capsys.readouterr().out
    assert ckpt(["show", whole]) == 0
    assert "a  [3]  float32  whole" in capsys.readouterr().out


def test_cli_verify_names_missing_rank_flipped_tensor_and_bad_replica(src, capsys):
    folder, _ = src
    path = os.path.join(folder, "rank_6", "net.safetensors")
    arrays, entries = read_tensors(path)
    arrays["w"] = arrays["w"] + 1                  # a replica that disagrees, checksum fine
    write_tensors(path, arrays, {k: {kk: v for kk, v in e.items()
                                     if kk not in ("dtype", "shape", "crc32c")}
                                 for k, e in entries.items()})
    assert ckpt(["verify", folder]) == 1
    assert "rank 6 ('" in capsys.readouterr().err
    raw = bytearray(open(path, "rb").read())
    raw[-3] ^= 0x40                                # the last tensor's bytes ('w')
    open(path, "wb").write(bytes(raw))
    assert ckpt(["verify", folder]) == 1
    assert "tensor 'w' in '" + path + "' fails its checksum" in capsys.readouterr().err
    shutil.rmtree(os.path.join(folder, "rank_2"))
    assert ckpt(["verify", folder]) == 1
    assert "checkpoint of rank 2 is missing" in capsys.readouterr().err


def test_cli_merge_and_reshard(src, tmp_path, capsys):
    folder, src_strategy = src
    out = str(tmp_path / "whole.ckpt")
    assert ckpt(["merge", folder, out]) == 0
    got = ms.load_checkpoint(out)
    for name, want in _full().items():
        np.testing.assert_array_equal(got[name].asnumpy(), want)
    dst_strategy = _run_ranks(tmp_path, **DST)
    dst = str(tmp_path / "dst")
    assert ckpt(["reshard", folder, dst, "--prefix", "r", "--dst-strategy", dst_strategy]) == 0
    _check_rank_files(dst, 4, dst_strategy, "r")
    assert ckpt(["verify", dst]) == 0


def test_python_dash_m_msops_ckpt(src):
    folder, _ = src
    proc = subprocess.run([sys.executable, "-m", "msops", "ckpt", "verify", folder],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("OK:")


DST_COLUMNS = dict(n=4, mm=((1, 2), (2, 2)), add=((1, 4), (1, 4)))     # b split by columns


def test_transform_by_rank_reads_only_the_ranks_it_needs(src, tmp_path):
    """rank_list_for_transform names 2 of the 8 source files for each new rank; those
    alone build its slices (numpy's slices of the whole weights), in either format, and
    leaving one out is an error naming it."""
    folder, src_strategy = src
    dst_strategy = _run_ranks(tmp_path, **DST_COLUMNS)
    items = json.load(open(dst_strategy))["parallel_layout_item"]
    full = _full()
    for k in range(4):
        ranks = ms.rank_list_for_transform(k, src_strategy, dst_strategy)
        assert len(ranks) == 2 and set(ranks) <= set(range(8))
        files = {r: os.path.join(folder, f"rank_{r}", "net.safetensors") for r in ranks}
        for fmt in ("safetensors", "ckpt"):
            out = str(tmp_path / f"dst{k}.{fmt}")
            ms.transform_checkpoint_by_rank(k, files, out, src_strategy, dst_strategy)
            got = ms.load_checkpoint(out)
            for name, whole in full.items():
                lay = layout_from_item(name, items[name])
                np.testing.assert_array_equal(got[name].asnumpy(), whole[lay.slice_of(k)])
        for r in ranks:                              # each listed rank is needed
            fewer = {q: f for q, f in files.items() if q != r}
            with pytest.raises(ValueError, match=r"needs the checkpoints of source ranks "
                                                 r"\[.*\], which 'checkpoint_files_map' "
                                                 r"lacks"):
                ms.transform_checkpoint_by_rank(k, fewer, str(tmp_path / "x.safetensors"),
                                                src_strategy, dst_strategy)
    with pytest.raises(ValueError, match=r"'rank_id' should be in \[0, 4\)"):
        ms.rank_list_for_transform(4, src_strategy, dst_strategy)


def test_transform_by_rank_from_a_whole_checkpoint(tmp_path):
    """No source strategy: one whole file (rank 0) gives every destination rank its slices."""
    dst_strategy = _run_ranks(tmp_path, **DST)
    whole = str(tmp_path / "whole.ckpt")
    ms.save_checkpoint(Net(), whole)
    assert ms.rank_list_for_transform(3, None, dst_strategy) == [0]
    items = json.load(open(dst_strategy))["parallel_layout_item"]
    for k in range(4):
        out = str(tmp_path / f"r{k}.safetensors")
        ms.transform_checkpoint_by_rank(k, {0: whole}, out, None, dst_strategy)
        got = ms.load_checkpoint(out)
        for name, value in _full().items():
            lay = layout_from_item(name, items[name])
            np.testing.assert_array_equal(got[name].asnumpy(), value[lay.slice_of(k)])
            assert got[name].layout == lay               # the slice records its layout


def test_build_searched_strategy_merges_slices(src):
    """The strategy file's layouts put the 8 ranks' slices of each parameter back together
    (merge_sliced_parameter), as numpy has them whole."""
    folder, src_strategy = src
    layouts = ms.build_searched_strategy(src_strategy)
    assert sorted(layouts) == ["b", "w"]
    assert list(layouts["b"].slice_shape) == [4, 1]
    shards = [ms.load_checkpoint(os.path.join(folder, f"rank_{r}", "net.safetensors"))
              for r in range(8)]
    for name, whole in _full().items():
        merged = ms.merge_sliced_parameter([s[name] for s in shards], layouts)
        np.testing.assert_array_equal(merged.asnumpy(), whole)
