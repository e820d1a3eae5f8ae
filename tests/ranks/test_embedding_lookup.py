"""nn.EmbeddingLookup's slice modes and nn.MultiFieldEmbeddingLookup under real MPI on 2, 4
and 8 ranks: each mode's sharded lookup (forward, and the table's gradient) equals the
serial run, with the collectives its mapping onto Gather predicts (batch and column
slices none in the forward, a row slice one AllReduce, a field slice none); a field slice
whose manual_shapes are not the even split, and MultiField's field slice, are errors."""
import numpy as np
import pytest
from parallel_oracle import check, comm_ops, run_serial

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4, 8)
N = get_group_size()
VOCAB, EMB, BATCH = 8 * N, 8, 8
RNG = np.random.default_rng(11)
TABLE = RNG.standard_normal((VOCAB, EMB)).astype(np.float32)
IDS = RNG.integers(0, VOCAB, (BATCH, N)).astype(np.int32)
# field k's ids lie in row block k (field_slice's contract)
FIELD_IDS = np.stack([RNG.integers(k * 8, (k + 1) * 8, BATCH) for k in range(N)],
                     1).astype(np.int32)
WEIGHT = RNG.standard_normal((BATCH, N, EMB)).astype(np.float32)


class Summed(nn.Cell):
    """sum(lookup * WEIGHT): a scalar whose table gradient is WEIGHT scattered to the ids."""

    def __init__(self, lookup):
        super().__init__()
        self.lookup, self.sum, self.mul = lookup, ops.ReduceSum(), ops.Mul()
        self.w = Tensor(WEIGHT)

    def construct(self, ids):
        return self.sum(self.mul(self.lookup(ids), self.w), ())


def table_grad(make, ids, parallel):
    ms.reset_auto_parallel_context()
    if parallel:
        ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                     full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = Summed(make())
        grads = ms.grad(net, grad_position=None, weights=net.trainable_params())(ids)
        from msops.parallel import gather_full
        return gather_full(grads[0]).asnumpy()
    finally:
        ms.reset_auto_parallel_context()


def maker(mode, **kw):
    return lambda: nn.EmbeddingLookup(VOCAB, EMB, param_init=Tensor(TABLE), slice_mode=mode,
                                      **kw)


CASES = [(nn.EmbeddingLookup.BATCH_SLICE, {}, IDS, []),
         (nn.EmbeddingLookup.TABLE_ROW_SLICE, {}, IDS, ["AllReduce"]),
         (nn.EmbeddingLookup.TABLE_COLUMN_SLICE, {}, IDS, []),
         (nn.EmbeddingLookup.FIELD_SLICE, {"manual_shapes": (8,) * N}, FIELD_IDS, [])]


@pytest.mark.parametrize("mode,kw,ids,comm", CASES, ids=[c[0] for c in CASES])
def test_slice_mode_lookup_equals_serial(mode, kw, ids, comm):
    graph = check(maker(mode, **kw), Tensor(ids))
    assert comm_ops(graph) == comm
    np.testing.assert_allclose(run_serial(maker(mode, **kw), Tensor(ids)), TABLE[ids])


@pytest.mark.parametrize("mode,kw,ids,comm", CASES, ids=[c[0] for c in CASES])
def test_slice_mode_table_gradient_equals_serial(mode, kw, ids, comm):
    want = np.zeros_like(TABLE)
    np.add.at(want, ids, WEIGHT)
    serial = table_grad(maker(mode, **kw), Tensor(ids), parallel=False)
    np.testing.assert_allclose(serial, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(table_grad(maker(mode, **kw), Tensor(ids), parallel=True),
                               want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", [m for m, *_ in CASES[:3]])
def test_slice_mode_with_max_norm_equals_serial(mode):
    check(maker(mode, max_norm=1.0), Tensor(IDS))


@pytest.mark.parametrize("operator", ["SUM", "MEAN", "MAX"])
@pytest.mark.parametrize("mode", [m for m, *_ in CASES[:3]])
def test_multi_field_equals_serial(mode, operator):
    values = np.where(RNG.random((BATCH, N)) < 0.2, 0, RNG.random((BATCH, N)) + 0.5)
    fields = RNG.integers(0, 3, (BATCH, N)).astype(np.int32)

    def make():
        return nn.MultiFieldEmbeddingLookup(VOCAB, EMB, 3, param_init=Tensor(TABLE),
                                            slice_mode=mode, operator=operator)
    check(make, Tensor(IDS), Tensor(values.astype(np.float32)), Tensor(fields))


def _parallel(fn):
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True)
    try:
        return fn()
    finally:
        ms.reset_auto_parallel_context()


def test_field_slice_without_even_manual_shapes_is_an_error():
    with pytest.raises(ValueError, match="'manual_shapes' should not be None"):
        _parallel(maker(nn.EmbeddingLookup.FIELD_SLICE))
    uneven = (8 * N - N + 1,) + (1,) * (N - 1)
    with pytest.raises(ValueError, match=r"should split the \d+ rows into \d+ equal blocks"):
        _parallel(maker(nn.EmbeddingLookup.FIELD_SLICE, manual_shapes=uneven))
    with pytest.raises(ValueError, match="should be one of \\['table_row_slice'"):
        _parallel(lambda: nn.MultiFieldEmbeddingLookup(VOCAB, EMB, 3,
                                                       slice_mode="field_slice"))


def test_parallel_lookup_needs_2d_ids():
    with pytest.raises(ValueError, match=r"'input_indices' should be 2-D \(batch, fields\)"):
        _parallel(lambda: maker(nn.EmbeddingLookup.BATCH_SLICE)()(Tensor(IDS.reshape(-1))))
