"""msops.dataset.transforms against numpy written here: values, dtypes, shapes, seeded
randomness, use in Dataset.map, errors."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor
from msops import dataset as ds
from msops.dataset import transforms


@pytest.mark.parametrize("data_type,want", [(ms.int32, np.int32), (np.float16, np.float16),
                                            (ms.float32, np.float32), ("uint8", np.uint8)])
def test_typecast(data_type, want):
    x = np.array([[1.7, -2.2], [3.0, 250.9]], np.float64)
    out = transforms.TypeCast(data_type)(x)
    assert out.dtype == want
    if np.dtype(want).kind == "f":
        np.testing.assert_allclose(out, x.astype(want))
    elif want is np.int32:
        assert out.tolist() == [[1, -2], [3, 250]]            # truncated toward zero
    assert transforms.TypeCast(ms.int32)(Tensor(np.ones(2, np.float32))).dtype == np.int32


def test_onehot():
    op = transforms.OneHot(4)
    out = op(np.array([2, 0, 3], np.int32))
    assert out.dtype == np.int32 and out.tolist() == [[0, 0, 1, 0], [1, 0, 0, 0], [0, 0, 0, 1]]
    scalar = op(np.array(1, np.uint32))
    assert scalar.shape == (4,) and scalar.dtype == np.uint32 and scalar.tolist() == [0, 1, 0, 0]
    smooth = transforms.OneHot(4, smoothing_rate=0.2)(np.array([1, 3]))
    want = np.full((2, 4), 0.05, np.float32)
    want[0, 1] = want[1, 3] = 0.8 + 0.05
    assert smooth.dtype == np.float32
    np.testing.assert_allclose(smooth, want, rtol=1e-6)


def test_fill_duplicate_concatenate_padend_slice():
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    filled = transforms.Fill(7.9)(x)
    assert filled.dtype == np.int16 and filled.tolist() == [[7] * 3] * 2
    a, b = transforms.Duplicate()(x)
    assert a is not b and (a == b).all()
    cat = transforms.Concatenate(0, prepend=np.array([9, 8]), append=[7])(np.array([1, 2],
                                                                                   np.int32))
    assert cat.dtype == np.int32 and cat.tolist() == [9, 8, 1, 2, 7]
    padded = transforms.PadEnd([3, 4], pad_value=-1)(x)
    assert padded.tolist() == [[0, 1, 2, -1], [3, 4, 5, -1], [-1, -1, -1, -1]]
    assert transforms.PadEnd([None, 2])(x).tolist() == [[0, 1], [3, 4]]      # cut to 2
    m = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(transforms.Slice(1)(m), m[1:2])
    np.testing.assert_array_equal(transforms.Slice(None, [2, 0], slice(1, 3))(m),
                                  m[:, [2, 0], 1:3])
    np.testing.assert_array_equal(transforms.Slice(Ellipsis, [3])(m), m[..., 3:4])


def test_compose_and_map_with_two_outputs():
    d = ds.NumpySlicesDataset(np.arange(4, dtype=np.float64), ["x"], shuffle=False)
    d = d.map(transforms.Compose([lambda v: v * 2, transforms.TypeCast(ms.int32)]), "x")
    d = d.map(transforms.Duplicate(), "x", ["x", "y"])
    got = list(d.create_tuple_iterator(output_numpy=True))
    assert d.get_col_names() == ["x", "y"]
    assert [(int(x), int(y)) for x, y in got] == [(0, 0), (2, 2), (4, 4), (6, 6)]
    assert got[0][0].dtype == np.int32


def _draws(op, n=64):
    return [int(op(np.array(0))) for _ in range(n)]


def test_random_ops_are_seeded():
    add = [lambda v: v + 1, lambda v: v + 10, lambda v: v + 100]
    ms.set_seed(3)
    first = _draws(transforms.RandomChoice(add)), _draws(transforms.RandomApply(add[:1], 0.3))
    ms.set_seed(3)
    again = _draws(transforms.RandomChoice(add)), _draws(transforms.RandomApply(add[:1], 0.3))
    assert first == again
    assert set(first[0]) == {1, 10, 100} and set(first[1]) == {0, 1}
    assert 5 < first[1].count(1) < 35                          # ~0.3 of 64
    ds.config.set_seed(4)
    try:
        assert _draws(transforms.RandomChoice(add)) != first[0]
    finally:
        ds.config._seed[0] = None
    assert set(_draws(transforms.RandomApply(add[:1], 1.0))) == {1}
    order = transforms.RandomOrder([lambda v: v * 2, lambda v: v + 1])
    assert set(int(order(np.array(1))) for _ in range(32)) == {3, 4}   # (1*2)+1, (1+1)*2


@pytest.mark.parametrize("make,err,match", [
    (lambda: transforms.TypeCast("text"), TypeError, "For 'TypeCast', the 'data_type' should "
                                                     "be an msops dtype"),
    (lambda: transforms.OneHot(0), ValueError, "'num_classes' should be a positive int"),
    (lambda: transforms.OneHot(3, 1.5), ValueError, "'smoothing_rate' should be in \\[0.0, "
                                                    "1.0\\], but got 1.5"),
    (lambda: transforms.OneHot(3)(np.array([1, 3])), ValueError, "every label should be in "
                                                                 "\\[0, 3\\), but got 3"),
    (lambda: transforms.OneHot(3)(np.array([0.5])), TypeError, "integer labels"),
    (lambda: transforms.OneHot(3)(np.zeros((2, 2), int)), ValueError, "scalar or 1-D"),
    (lambda: transforms.Fill("a")(np.ones(2)), TypeError, "For 'Fill', the 'fill_value' should "
                                                          "match"),
    (lambda: transforms.Concatenate(1), ValueError, "'axis' should be 0 or -1"),
    (lambda: transforms.Concatenate(prepend=[1.5])(np.array([1])), TypeError,
     "'prepend' dtype should be castable"),
    (lambda: transforms.PadEnd([2])(np.ones((2, 2))), ValueError, "one entry per input dim"),
    (lambda: transforms.Slice(5)(np.ones(3)), IndexError, "should be in \\[-3, 3\\), but got 5"),
    (lambda: transforms.Slice("a"), TypeError, "every slice should be"),
    (lambda: transforms.Compose([]), TypeError, "non-empty list of callables"),
    (lambda: transforms.RandomApply([abs], prob=2), ValueError, "'prob' should be in"),
    (lambda: transforms.TypeCast(ms.int32)(np.ones(2), np.ones(2)), TypeError,
     "one array \\(one column\\), but got 2"),
])
def test_errors(make, err, match):
    with pytest.raises(err, match=match):
        make()
