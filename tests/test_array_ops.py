"""Array primitives: Reshape, Transpose, Concat, Split, StridedSlice vs numpy."""
import doctest
import re

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import msops as ms
from msops import Tensor, nn, ops
from msops.primitives import array_ops
from msops.primitives.math_ops import elementwise_spec
from msops.primitives.rules import rule_of

DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.int8, np.int64,
          np.uint32, np.bool_, np.complex64]


def arange(shape, dtype=np.float32):
    return (np.arange(int(np.prod(shape))) % 7).astype(dtype).reshape(shape)


def test_docstring_examples():
    res = doctest.testmod(array_ops, extraglobs={"Tensor": Tensor, "np": np})
    assert res.attempted >= 5 and res.failed == 0


def test_sharding_rules_beside_the_ops():
    assert [rule_of("sharding", p) for p in (ops.Identity, ops.Reshape, ops.Transpose,
                                             ops.Concat, ops.Split, ops.StridedSlice)] == \
        [elementwise_spec, array_ops.reshape_spec, array_ops.transpose_spec,
         array_ops.concat_spec, array_ops.split_spec, array_ops.strided_slice_spec]
    assert rule_of("expansion", ops.Reshape) is array_ops.reshape_local
    assert rule_of("sharding", ops.Flatten) is array_ops.flatten_spec
    assert rule_of("bprop", ops.Flatten) is array_ops.flatten_bprop


# -- Reshape ------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,out", [((6, 4), [6, 4]), ((-1,), [24]), ((2, -1, 3), [2, 4, 3]),
                                       ([4, 3, 2, 1], [4, 3, 2, 1]), ((-1, 24), [1, 24])])
def test_reshape_infer(shape, out):
    assert ops.Reshape().infer_shape([2, 3, 4], shape) == out


def test_reshape_infer_errors():
    rs = ops.Reshape()
    with pytest.raises(ValueError, match=r"For 'Reshape', the 'shape' should have 24 elements, "
                                         r"like x shape \[2, 3, 4\], but got \(5, 5\)"):
        rs.infer_shape([2, 3, 4], (5, 5))
    with pytest.raises(ValueError, match=r"should have 24 elements, like x shape \[2, 3, 4\], "
                                         r"but got \(5, -1\)"):
        rs.infer_shape([2, 3, 4], (5, -1))
    with pytest.raises(ValueError, match=r"For 'Reshape', the 'shape' should hold non-negative "
                                         r"ints and at most one -1, but got \(-1, -1\)"):
        rs.infer_shape([2, 3, 4], (-1, -1))
    with pytest.raises(ValueError, match=r"at most one -1, but got \(-2, -12\)"):
        rs.infer_shape([2, 3, 4], (-2, -12))
    with pytest.raises(TypeError, match=r"For 'Reshape', the type of 'shape\[1\]' should be int, "
                                        r"but got float"):
        rs.infer_shape([2, 3, 4], (6, 4.0))
    with pytest.raises(TypeError, match=r"the type of 'shape' should be one of \[tuple, list\], "
                                        r"but got int"):
        rs(Tensor(arange((2, 3))), 6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_reshape_kernel(dtype):
    x = arange((2, 3, 4), dtype)
    out = ops.Reshape()(Tensor(x), (4, -1))
    assert out.dtype.np_dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.asnumpy(), x.reshape(4, 6))
    # the target shape may also be a Tensor (a const input, read as its value)
    out2 = ops.Reshape()(Tensor(x), Tensor(np.array([3, 8], np.int64)))
    np.testing.assert_array_equal(out2.asnumpy(), x.reshape(3, 8))


# -- Flatten ------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,out", [((2, 3, 4), [2, 12]), ((5,), [5, 1]), ((3, 0, 2), [3, 0]),
                                       ((2, 3), [2, 3])])
def test_flatten_infer(shape, out):
    assert ops.Flatten().infer_shape(list(shape)) == out


def test_flatten_errors():
    with pytest.raises(ValueError, match=r"For 'Flatten', the rank of 'x' should be >= 1, but "
                                         r"got shape \[\] of rank 0"):
        ops.Flatten()(Tensor(np.array(1.0, np.float32)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_flatten_kernel_and_cell(dtype):
    x = arange((2, 3, 4), dtype)
    out = ops.Flatten()(Tensor(x))
    assert out.dtype.np_dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.asnumpy(), x.reshape(2, 12))
    np.testing.assert_array_equal(nn.Flatten()(Tensor(x)).asnumpy(), x.reshape(2, 12))


def test_flatten_sharding_rule_splits_dim0_only():
    spec = array_ops.flatten_spec(ops.Flatten(), [[8, 2, 3]], [[8, 6]], {})
    assert spec.ins == (("b", "x1", "x2"),) and spec.outs == (("b", "y"),)
    assert sorted(letter for letter, _ in spec.unsplittable) == ["x1", "x2", "y"]


# -- Transpose ----------------------------------------------------------------------------
def test_transpose_infer_and_errors():
    tr = ops.Transpose()
    assert tr.infer_shape([2, 3, 4], (1, 2, 0)) == [3, 4, 2]
    assert tr.infer_shape([2, 3, 4], (-1, 0, -2)) == [4, 2, 3]
    assert tr.infer_shape([], ()) == []
    for bad in ((0, 1), (0, 1, 1), (0, 1, 3), (0, 1, -4)):
        with pytest.raises(ValueError, match=r"For 'Transpose', the 'perm' should be a "
                                             r"permutation of the 3 dims of x, but got "
                                             + re.escape(str(bad))):
            tr.infer_shape([2, 3, 4], bad)
    with pytest.raises(TypeError, match=r"the type of 'perm\[0\]' should be int, but got str"):
        tr.infer_shape([2, 3], ("a", 0))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("perm", [(0, 1, 2), (2, 0, 1), (1, 0, 2), (-1, -2, -3)])
def test_transpose_kernel(dtype, perm):
    x = arange((2, 3, 4), dtype)
    out = ops.Transpose()(Tensor(x), perm).asnumpy()
    ref = np.transpose(x, perm)
    assert out.flags.c_contiguous and out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, ref)


# -- Concat / Split -----------------------------------------------------------------------
def test_concat_infer_and_errors():
    assert ops.Concat(1).infer_shape([[2, 3], [2, 5], [2, 1]]) == [2, 9]
    assert ops.Concat(-1).infer_shape([[2, 3, 4], [2, 3, 1]]) == [2, 3, 5]
    assert ops.Concat().infer_dtype([ms.int8, ms.int8]) == ms.int8
    with pytest.raises(ValueError, match=r"For 'Concat', the shape of 'x\[1\]' should match "
                                         r"'x\[0\]' \[2, 3\] except at axis 1, but got \[3, 3\]"):
        ops.Concat(1).infer_shape([[2, 3], [3, 3]])
    with pytest.raises(ValueError, match=r"the shape of 'x\[1\]' should match 'x\[0\]' \[2, 3\] "
                                         r"except at axis 0, but got \[2, 3, 1\]"):
        ops.Concat().infer_shape([[2, 3], [2, 3, 1]])
    with pytest.raises(ValueError, match=r"For 'Concat', the 'axis' should be in \[-2, 2\), "
                                         r"but got 2"):
        ops.Concat(2).infer_shape([[2, 3], [2, 3]])
    with pytest.raises(TypeError, match=r"For 'Concat', the 'x\[1\]' should have the same dtype "
                                        r"as 'x\[0\]': Float32, but got Float16"):
        ops.Concat()((Tensor(arange((2,))), Tensor(arange((2,), np.float16))))
    with pytest.raises(TypeError, match=r"the 'x' should be a non-empty tuple or list of Tensors"):
        ops.Concat()(Tensor(arange((2, 3))))
    with pytest.raises(ValueError, match=r"the rank of 'x\[0\]' should be >= 1"):
        ops.Concat().infer_shape([[], []])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_and_split_kernels(dtype, axis):
    parts = [arange((2, 3, 4), dtype) + i for i in range(3)] if dtype != np.bool_ else \
        [arange((2, 3, 4), dtype) ^ bool(i % 2) for i in range(3)]
    out = ops.Concat(axis)(tuple(Tensor(p) for p in parts)).asnumpy()
    ref = np.concatenate(parts, axis=axis)
    np.testing.assert_array_equal(out, ref)
    assert out.dtype == np.dtype(dtype)
    back = ops.Split(axis, 3)(Tensor(ref))
    assert isinstance(back, tuple) and len(back) == 3
    for got, want in zip(back, np.split(ref, 3, axis=axis)):
        assert got.asnumpy().flags.c_contiguous
        np.testing.assert_array_equal(got.asnumpy(), want)


def test_split_infer_and_errors():
    assert ops.Split(1, 2).infer_shape([4, 6]) == ([4, 3], [4, 3])
    assert ops.Split(-2, 4).infer_shape([4, 6]) == ([1, 6],) * 4
    assert ops.Split(0, 3).infer_dtype(ms.bool_) == (ms.bool_,) * 3
    assert ops.Split().attrs == {"axis": 0, "output_num": 1}
    with pytest.raises(ValueError, match=r"For 'Split', the 'x shape\[1\]' should be divisible "
                                         r"by output_num: 4, but got 6 \(x shape \[4, 6\]\)"):
        ops.Split(1, 4).infer_shape([4, 6])
    with pytest.raises(ValueError, match=r"For 'Split', the 'output_num' should be a positive "
                                         r"int, but got 0"):
        ops.Split(0, 0)
    with pytest.raises(ValueError, match=r"For 'Split', the 'axis' should be in \[-2, 2\), but "
                                         r"got -3"):
        ops.Split(-3, 1)(Tensor(arange((2, 2))))


# -- StridedSlice -------------------------------------------------------------------------
X345 = arange((3, 4, 5), np.int32) + np.arange(60, dtype=np.int32).reshape(3, 4, 5) * 10
S = slice
E = Ellipsis
CASES = [
    # (begin, end, strides, masks dict, numpy index)
    ((0, 1, 2), (3, 3, 5), (1, 1, 1), {}, (S(0, 3), S(1, 3), S(2, 5))),
    ((2, 3), (0, 0), (-1, -2), {}, (S(2, 0, -1), S(3, 0, -2))),
    ((-1, -1, -1), (-4, -5, -6), (-1, -1, -2), {}, (S(-1, -4, -1), S(-1, -5, -1), S(-1, -6, -2))),
    ((1, 9), (2, 100), (1, 1), {}, (S(1, 2), S(9, 100))),                 # clamped: empty dim
    ((1, 3), (2, 0), (1, 1), {"begin_mask": 0b10}, (S(1, 2), S(None, 0))),
    ((1, 1), (2, 0), (1, -1), {"begin_mask": 0b10, "end_mask": 0b11},
     (S(1, None), S(None, None, -1))),
    ((1, 0, 0), (2, 4, 5), (1, 1, 1), {"shrink_axis_mask": 0b1}, (1, S(0, 4), S(0, 5))),
    ((-1, 2), (0, 3), (1, 1), {"shrink_axis_mask": 0b11}, (-1, 2)),
    ((0, 1), (0, 4), (1, 2), {"ellipsis_mask": 0b1}, (E, S(1, 4, 2))),
    ((1, 0, 2), (2, 0, 4), (1, 1, 1), {"ellipsis_mask": 0b10}, (S(1, 2), E, S(2, 4))),
    ((0, 1), (0, 3), (1, 1), {"new_axis_mask": 0b1}, (None, S(1, 3))),
    ((0, 2, 0), (0, 3, 0), (1, 1, 1), {"new_axis_mask": 0b101, "shrink_axis_mask": 0b010},
     (None, 2, None)),
    ((0, 0, 1), (1, 1, 3), (1, 1, 1), {"ellipsis_mask": 0b1, "new_axis_mask": 0b10},
     (E, None, S(1, 3))),
]


@pytest.mark.parametrize("begin,end,strides,masks,index", CASES)
def test_strided_slice_vs_numpy(begin, end, strides, masks, index):
    prim = ops.StridedSlice(**masks)
    ref = X345[index]
    assert prim.infer_shape([3, 4, 5], begin, end, strides) == list(ref.shape)
    out = prim(Tensor(X345), begin, end, strides).asnumpy()
    assert out.flags.c_contiguous and out.dtype == np.int32
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_slice_dtypes(dtype):
    x = arange((4, 6), dtype)
    out = ops.StridedSlice()(Tensor(x), (3, 0), (0, 6), (-2, 3)).asnumpy()
    np.testing.assert_array_equal(out, x[3:0:-2, 0:6:3])
    assert out.dtype == np.dtype(dtype)


def _numpy_index(begin, end, strides, masks):
    """The numpy index of a StridedSlice spec, written directly from the mask definitions."""
    index = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        bit = {k: (v >> i) & 1 for k, v in masks.items()}
        if bit["ellipsis_mask"]:
            index.append(Ellipsis)
        elif bit["new_axis_mask"]:
            index.append(None)
        elif bit["shrink_axis_mask"]:
            index.append(b)
        else:
            index.append(slice(None if bit["begin_mask"] else b, None if bit["end_mask"] else e, s))
    return tuple(index)


@st.composite
def slice_specs(draw):
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    n = draw(st.integers(1, len(shape)))
    begin = draw(st.lists(st.integers(-6, 6), min_size=n, max_size=n))
    end = draw(st.lists(st.integers(-6, 6), min_size=n, max_size=n))
    strides = draw(st.lists(st.integers(-3, 3).filter(bool), min_size=n, max_size=n))
    masks = {k: draw(st.integers(0, 2 ** n - 1)) for k in
             ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask")}
    masks["ellipsis_mask"] = draw(st.sampled_from([0] + [1 << i for i in range(n)]))
    return shape, begin, end, strides, masks


@settings(max_examples=150, deadline=None)
@given(slice_specs())
def test_strided_slice_property(spec):
    shape, begin, end, strides, masks = spec
    x = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    try:
        ref = x[_numpy_index(begin, end, strides, masks)]
    except IndexError:           # a shrunk index outside its dim
        with pytest.raises(ValueError, match=r"For 'StridedSlice', the 'begin\[\d\]' of a "
                                             r"shrunk axis should be in"):
            ops.StridedSlice(**masks)(Tensor(x), tuple(begin), tuple(end), tuple(strides))
        return
    prim = ops.StridedSlice(**masks)
    assert prim.infer_shape(list(shape), begin, end, strides) == list(ref.shape)
    np.testing.assert_array_equal(prim(Tensor(x), begin, end, strides).asnumpy(), ref)


def test_strided_slice_errors():
    ss = ops.StridedSlice()
    with pytest.raises(ValueError, match=r"For 'StridedSlice', the 'strides\[1\]' should be "
                                         r"non-zero, but got 0"):
        ss.infer_shape([3, 4], (0, 0), (3, 4), (1, 0))
    with pytest.raises(ValueError, match=r"For 'StridedSlice', the 'begin', 'end' and 'strides' "
                                         r"should have the same length, but got 2, 1 and 2"):
        ss.infer_shape([3, 4], (0, 0), (3,), (1, 1))
    with pytest.raises(ValueError, match=r"the 'begin\[0\]' of a shrunk axis should be in "
                                         r"\[-3, 3\), but got 3"):
        ops.StridedSlice(shrink_axis_mask=1).infer_shape([3, 4], (3,), (4,), (1,))
    with pytest.raises(ValueError, match=r"the number of specs slicing a dim of x should be <= "
                                         r"the rank of x: 2, but got 3"):
        ss.infer_shape([3, 4], (0, 0, 0), (1, 1, 1), (1, 1, 1))
    with pytest.raises(ValueError, match=r"For 'StridedSlice', the 'ellipsis_mask' should have "
                                         r"at most one bit set, but got 3 \(0b11\)"):
        ops.StridedSlice(ellipsis_mask=3)
    with pytest.raises(ValueError, match=r"the 'end_mask' should be a non-negative int, but got "
                                         r"-1"):
        ops.StridedSlice(end_mask=-1)
    with pytest.raises(TypeError, match=r"the type of 'strides' should be one of \[tuple, "
                                        r"list\], but got int"):
        ss(Tensor(arange((3, 4))), (0, 0), (3, 4), 1)
