"""A fuzzer over offline resharding (`transform_checkpoints`): drawn parameters, each saved
as one slice per rank under a drawn layout over 1, 2, 4 or 8 ranks (device matrices with
size-1 axes, multi-axis splits, replication), recorded in the shards (msops' safetensors)
or in a strategy file (MindSpore's .ckpt shards), resharded to another drawn layout over
another rank count (or whole). Every destination rank file must hold exactly the numpy
slice of the whole value its layout names, in the chosen output format.
"""
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import msops as ms
from msops.parallel.layout import TensorLayout
from msops.parallel.strategy_ckpt import _layout_item, save_strategy_file
from msops.train.ckpt_format import write_ckpt
from msops.train.safetensors_io import write_tensors
from msops.train.serialization import layout_meta
from layout_cases import _parts, device_matrices, tensor_maps

FUZZ = settings(max_examples=30, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
DTYPES = [np.float32, np.float16, np.int32, np.int8, np.bool_, np.float64]


@st.composite
def resharded(draw, n_src: int, n_dst: int) -> tuple:
    """(src layout, dst layout): one tensor shape, over n_src and n_dst devices."""
    ndim = draw(st.integers(1, 3))
    dm1, dm2 = draw(device_matrices(n_src)), draw(device_matrices(n_dst))
    m1 = draw(tensor_maps(dm1, ndim, draw(st.booleans())))
    m2 = draw(tensor_maps(dm2, ndim, draw(st.booleans())))
    shape = tuple(math.lcm(_parts(dm1, a), _parts(dm2, b)) * draw(st.integers(1, 2))
                  for a, b in zip(m1, m2))
    return TensorLayout(dm1, m1, shape), TensorLayout(dm2, m2, shape)


def _slice(whole: np.ndarray, layout: TensorLayout, rank: int) -> np.ndarray:
    """rank's block of `whole` by numpy indexing alone: along each dim, the block whose
    index is the rank's coordinate over the dim's device axes (the highest axis first)."""
    coords = np.unravel_index(rank, layout.device_matrix)
    index = []
    for d, entry in enumerate(layout.tensor_map):
        axes = () if entry == -1 else (entry,) if isinstance(entry, int) else entry
        # tensor_map counts device axes from the last (MindSpore's convention)
        k, parts = 0, 1
        for a in axes:
            size = layout.device_matrix[len(layout.device_matrix) - 1 - a]
            k = k * size + coords[len(layout.device_matrix) - 1 - a]
            parts *= size
        step = whole.shape[d] // parts
        index.append(slice(k * step, (k + 1) * step))
    return whole[tuple(index)]


@pytest.mark.parametrize("n_src,n_dst", [(1, 4), (2, 8), (4, 2), (8, 8), (8, 1), (4, 4)])
@FUZZ
@given(data=st.data())
def test_resharded_files_hold_the_numpy_slices(tmp_path_factory, n_src, n_dst, data):
    tmp = str(tmp_path_factory.mktemp("reshard"))
    params = {}
    for i in range(data.draw(st.integers(1, 3))):
        src, dst = data.draw(resharded(n_src, n_dst))
        dtype = data.draw(st.sampled_from(DTYPES))
        whole = (np.random.default_rng(i).standard_normal(src.tensor_shape) * 50).astype(dtype)
        params[f"layer{i}.weight"] = (whole, src, dst)
    mindspore_style = data.draw(st.booleans())
    src_dir, dst_dir = os.path.join(tmp, "src"), os.path.join(tmp, "dst")
    for r in range(n_src):
        folder = os.path.join(src_dir, f"rank_{r}")
        os.makedirs(folder)
        slices = {n: _slice(w, s, r) for n, (w, s, _) in params.items()}
        if mindspore_style:
            write_ckpt(os.path.join(folder, "net.ckpt"), slices)
        else:
            write_tensors(os.path.join(folder, "net.safetensors"), slices,
                          {n: layout_meta(s, slice_saved=True) for n, (_, s, _) in params.items()})
    src_strategy = None
    if mindspore_style:
        src_strategy = os.path.join(tmp, "src.json")
        save_strategy_file(src_strategy, {"device_num": n_src, "parallel_strategy_item": {},
                                          "parallel_layout_item": {
                                              n: _layout_item(s) for n, (_, s, _) in params.items()}})
    dst_strategy = None
    if n_dst > 1:
        dst_strategy = os.path.join(tmp, "dst.json")
        save_strategy_file(dst_strategy, {"device_num": n_dst, "parallel_strategy_item": {},
                                          "parallel_layout_item": {
                                              n: _layout_item(d) for n, (_, _, d) in params.items()}})
    fmt = data.draw(st.sampled_from(["safetensors", "ckpt"]))
    ms.transform_checkpoints(src_dir, dst_dir, "net_", src_strategy, dst_strategy,
                             output_format=fmt)
    for r in range(n_dst):
        got = ms.load_checkpoint(os.path.join(dst_dir, f"rank_{r}", f"net_{r}.{fmt}"))
        assert sorted(got) == sorted(params)
        for name, (whole, _, dst) in params.items():
            want = _slice(whole, dst, r) if n_dst > 1 else whole
            value = got[name].asnumpy()
            assert value.dtype == whole.dtype
            np.testing.assert_array_equal(value, want)
