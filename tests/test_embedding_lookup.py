"""nn.EmbeddingLookup and nn.MultiFieldEmbeddingLookup on one process: lookups, max_norm and
the SUM / MEAN / MAX field combinations against numpy references written here, eagerly
and compiled; the table's gradient against a numpy scatter-add; argument errors in
MindSpore's form. (Slice modes under MPI: tests/ranks/test_embedding_lookup.py.)"""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops

RNG = np.random.default_rng(8)
TABLE = RNG.standard_normal((12, 4)).astype(np.float32)
IDS = np.array([[1, 5, 11], [0, 12, -1]], np.int32)          # 12 and -1: outside the table


def both(make, *xs):
    eager = make()(*[Tensor(x) for x in xs]).asnumpy()
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = make()(*[Tensor(x) for x in xs]).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(compiled, eager, rtol=1e-6, atol=1e-7)
    return eager


def np_lookup(ids):
    valid = (ids >= 0) & (ids < len(TABLE))
    return np.where(valid[..., None], TABLE[np.where(valid, ids, 0)], 0)


def test_lookup_gives_rows_and_zeros_outside_the_table():
    np.testing.assert_array_equal(
        both(lambda: nn.EmbeddingLookup(12, 4, param_init=Tensor(TABLE)), IDS), np_lookup(IDS))
    layer = nn.EmbeddingLookup(12, 4, target="DEVICE", sparse=False,
                               param_init=Tensor(TABLE))
    np.testing.assert_array_equal(layer(Tensor(IDS[0])).asnumpy(), np_lookup(IDS[0]))
    assert layer.embedding_table.name == "embedding_table"
    assert nn.EmbeddingLookup.TABLE_COLUMN_SLICE == "table_column_slice"


def test_max_norm_rescales_long_rows():
    rows = np_lookup(IDS).astype(np.float64)
    norm = np.linalg.norm(rows, axis=-1, keepdims=True)
    want = rows * 0.8 / np.maximum(norm, 0.8)
    np.testing.assert_allclose(
        both(lambda: nn.EmbeddingLookup(12, 4, param_init=Tensor(TABLE), max_norm=0.8), IDS),
        want, rtol=1e-6, atol=1e-7)


def test_table_gradient_is_the_scatter_added_cotangent():
    layer = nn.EmbeddingLookup(12, 4, param_init=Tensor(TABLE))
    w = RNG.standard_normal(IDS.shape + (4,)).astype(np.float32)
    grads = ms.grad(lambda ids: ops.ReduceSum()(layer(ids) * Tensor(w), ()), None,
                    layer.trainable_params())(Tensor(IDS))
    want = np.zeros_like(TABLE)
    valid = (IDS >= 0) & (IDS < 12)
    np.add.at(want, IDS[valid], w[valid])
    np.testing.assert_allclose(grads[0].asnumpy(), want, rtol=1e-6)


def np_multi_field(ids, values, fields, field_size, operator):
    rows = np_lookup(ids).astype(np.float64) * values[..., None]
    out = np.zeros((ids.shape[0], field_size, TABLE.shape[1]))
    for b in range(ids.shape[0]):
        for f in range(field_size):
            at = fields[b] == f
            if operator == "SUM":
                out[b, f] = rows[b, at].sum(0)
            elif operator == "MEAN":
                weight = np.abs(values[b, at]).sum()
                out[b, f] = rows[b, at].sum(0) / weight if weight else 0
            else:
                kept = at & (values[b] != 0)
                out[b, f] = rows[b, kept].max(0) if kept.any() else 0
    return out


@pytest.mark.parametrize("operator", ["SUM", "MEAN", "MAX"])
def test_multi_field_combines_each_field(operator):
    ids = RNG.integers(0, 12, (3, 7)).astype(np.int32)
    values = RNG.standard_normal((3, 7)).astype(np.float32)
    values[0, :3] = 0                                         # padding entries
    fields = RNG.integers(0, 4, (3, 7)).astype(np.int32)
    fields[1] = np.minimum(fields[1], 2)                      # field 3 of sample 1 empty

    def make():
        return nn.MultiFieldEmbeddingLookup(12, 4, 4, param_init=Tensor(TABLE),
                                            operator=operator)
    np.testing.assert_allclose(both(make, ids, values, fields),
                               np_multi_field(ids, values, fields, 4, operator), rtol=1e-5,
                               atol=1e-6)


ERRORS = [
    (lambda: nn.EmbeddingLookup(12, 4, target="GPU"), ValueError,
     r"For 'EmbeddingLookup', the 'target' should be one of \['CPU', 'DEVICE'\]"),
    (lambda: nn.EmbeddingLookup(12, 4, slice_mode="row"), ValueError,
     r"For 'EmbeddingLookup', the 'slice_mode' should be one of \['batch_slice'"),
    (lambda: nn.EmbeddingLookup(12, 4, slice_mode="field_slice", manual_shapes=(5, 5)),
     ValueError, r"For 'EmbeddingLookup', the 'manual_shapes' should sum to the 'vocab_size'"),
    (lambda: nn.EmbeddingLookup(12, 4, manual_shapes=[6, 6]), TypeError,
     r"For 'EmbeddingLookup', the type of 'manual_shapes'"),
    (lambda: nn.EmbeddingLookup(12, 4, max_norm=0), ValueError,
     r"For 'EmbeddingLookup', the 'max_norm' should be > 0"),
    (lambda: nn.EmbeddingLookup(0, 4), ValueError, r"For 'EmbeddingLookup', the 'vocab_size'"),
    (lambda: nn.MultiFieldEmbeddingLookup(12, 4, 3, operator="MIN"), ValueError,
     r"For 'MultiFieldEmbeddingLookup', the 'operator' should be one of \['SUM', 'MAX', "
     r"'MEAN'\]"),
    (lambda: nn.MultiFieldEmbeddingLookup(12, 4, 3)(
        Tensor(IDS), Tensor(np.ones((2, 3), np.float32)), Tensor(np.ones((2, 2), np.int32))),
     ValueError, r"For 'MultiFieldEmbeddingLookup', the 'field_ids' should be 2-D"),
    (lambda: nn.MultiFieldEmbeddingLookup(12, 4, 3)(
        Tensor(IDS), Tensor(np.ones((2, 3), np.int32)), Tensor(IDS)),
     TypeError, r"For 'MultiFieldEmbeddingLookup', the 'input_values'"),
]


@pytest.mark.parametrize("call,exc,msg", ERRORS)
def test_errors_name_the_layer_and_argument(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_vocab_cache_size_is_ignored_with_a_warning():
    with pytest.warns(UserWarning, match="'vocab_cache_size' is valid only in parameter "
                                         "server training mode"):
        layer = nn.EmbeddingLookup(12, 4, param_init=Tensor(TABLE), vocab_cache_size=8)
    np.testing.assert_array_equal(layer(Tensor(IDS)).asnumpy(), np_lookup(IDS))
