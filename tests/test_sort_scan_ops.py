"""BroadcastTo, Stack, Unstack, CumSum, TopK and Sort, and their functional forms (sort,
argsort, topk, max, min, cumsum, split, unstack / unbind, broadcast_to, stack): values
against references written here (plain Python orderings, numpy), in every relevant dtype,
with negative axes, ties, NaN, k = 0 and empty dims; eager and compiled; the composed forms'
gradients against finite differences; argument errors naming the op and the argument."""
import doctest

import ml_dtypes
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from msops.primitives import scan_ops, shape_ops, sort_ops, stack_ops
from numeric import finite_differences
from test_functional_forms import Call

RNG = np.random.default_rng(77)
BF16 = ml_dtypes.bfloat16
REAL = [np.float16, BF16, np.float32, np.float64, np.int8, np.int32, np.int64, np.uint8]


def ties(shape, dtype):
    """Values from a small range, so most rows hold equal elements."""
    return RNG.integers(0, 4, shape).astype(dtype)


def ref_order(x, axis, descending):
    """Indices ordering x along `axis`, written as Python sorts of each line: by value
    (largest first when descending), equal values by index."""
    moved = np.moveaxis(x.astype(np.float64), axis, -1)
    flat = moved.reshape(-1, moved.shape[-1]) if moved.size else moved.reshape(0, moved.shape[-1])
    rows = [sorted(range(len(row)), key=lambda i, r=row: (-r[i] if descending else r[i], i))
            for row in flat]
    return np.moveaxis(np.array(rows, np.int64).reshape(moved.shape), -1, axis)


def eager_and_compiled(fn, *arrays):
    """fn's outputs (a tuple of numpy arrays, dtypes kept), eagerly and as a compiled Cell."""
    tensors = [Tensor(a) for a in arrays]
    results = []
    for mode in (ms.PYNATIVE_MODE, ms.GRAPH_MODE):
        ms.set_context(mode=mode)
        try:
            out = fn(*tensors) if mode == ms.PYNATIVE_MODE else Call(fn)(*tensors)
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
        outs = out if isinstance(out, tuple) else (out,)
        results.append(tuple((t.asnumpy(), t.dtype) for t in outs))
    return results


@pytest.mark.parametrize("module", [stack_ops, scan_ops, sort_ops, shape_ops],
                         ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_docstring_examples(module):
    res = doctest.testmod(module, extraglobs={"Tensor": Tensor, "np": np})
    assert res.attempted >= 1 and res.failed == 0


# -- Sort and TopK -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", REAL, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("axis,descending", [(-1, False), (0, True), (-2, False), (1, True)])
def test_sort_is_stable_in_every_dtype(dtype, axis, descending):
    x = ties((3, 5, 4), dtype)
    want = ref_order(x, axis, descending)
    values, indices = ops.Sort(axis, descending)(Tensor(x))
    assert indices.dtype == ms.int32
    np.testing.assert_array_equal(indices.asnumpy(), want)
    np.testing.assert_array_equal(values.asnumpy(), np.take_along_axis(x, want, axis))
    assert values.asnumpy().dtype == x.dtype and indices.asnumpy().dtype == np.int32


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32])
def test_nan_orders_above_every_number(dtype):
    x = np.array([1.0, np.nan, -np.inf, 3.0, np.nan, np.inf], dtype)
    _, up = ops.Sort()(Tensor(x))
    _, down = ops.Sort(descending=True)(Tensor(x))
    np.testing.assert_array_equal(up.asnumpy(), [2, 0, 3, 5, 1, 4])
    np.testing.assert_array_equal(down.asnumpy(), [1, 4, 5, 3, 0, 2])
    v, i = ops.TopK()(Tensor(x), 3)
    np.testing.assert_array_equal(i.asnumpy(), [1, 4, 5])


@pytest.mark.parametrize("dtype", REAL, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("k", [0, 1, 3, 6])
def test_topk_takes_the_largest_lower_index_first(dtype, k):
    x = ties((2, 3, 6), dtype)
    want = ref_order(x, -1, True)[..., :k]
    values, indices = ops.TopK()(Tensor(x), k)
    assert values.shape == indices.shape == (2, 3, k)
    assert indices.dtype == ms.int32
    np.testing.assert_array_equal(indices.asnumpy(), want)
    np.testing.assert_array_equal(values.asnumpy(), np.take_along_axis(x, want, -1))


def test_sort_and_topk_of_empty_and_1d_inputs():
    v, i = ops.Sort(0)(Tensor(np.zeros((0, 3), np.float32)))
    assert v.shape == i.shape == (0, 3)
    v, i = ops.TopK()(Tensor(np.array([2, 7, 7, 1], np.int32)), 2)
    np.testing.assert_array_equal(v.asnumpy(), [7, 7])
    np.testing.assert_array_equal(i.asnumpy(), [1, 2])
    v, i = ops.TopK(sorted=False)(Tensor(np.zeros((3, 0), np.float32)), 0)
    assert v.shape == (3, 0)


# -- CumSum --------------------------------------------------------------------------------
def ref_cumsum(x, axis, exclusive, reverse):
    """Each output element summed from its own slice of x (float64 for floats)."""
    acc = x.astype(np.float64) if x.dtype.kind == "f" or x.dtype == BF16 else x
    moved = np.moveaxis(acc, axis, 0)
    n = moved.shape[0]
    out = np.zeros_like(moved)
    for i in range(n):
        picked = range(i + exclusive, n) if reverse else range(0, i + 1 - exclusive)
        for j in picked:
            out[i] = out[i] + moved[j]
    return np.moveaxis(out, 0, axis)


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.float64, np.int8,
                                   np.int32, np.uint8, np.complex64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("axis", [0, -1, 1])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_matches_its_definition(dtype, axis, exclusive, reverse):
    x = (RNG.standard_normal((3, 4, 5)) * 4).astype(dtype) if np.dtype(dtype).kind in "fcV" \
        else RNG.integers(0, 60, (3, 4, 5)).astype(dtype)
    got = ops.CumSum(exclusive, reverse)(Tensor(x), axis).asnumpy()
    want = ref_cumsum(x, axis, exclusive, reverse)
    assert got.dtype == x.dtype
    if np.dtype(dtype).kind in "iu":         # ints wrap in their own dtype
        np.testing.assert_array_equal(got, want.astype(dtype))
    else:                                    # half precision: one rounding of a float32 sum
        tol = {np.float16: 2e-3, BF16: 1e-2}.get(dtype, 1e-6)
        np.testing.assert_allclose(got.astype(np.complex128), want.astype(np.complex128),
                                   rtol=tol, atol=tol * 10)


def test_cumsum_of_float16_is_rounded_once():
    """256 steps of 0.1 in float16 would drift; the float32 sum rounded once does not."""
    x = np.full(256, 0.1, np.float16)
    got = ops.CumSum()(Tensor(x), 0).asnumpy()
    want = np.cumsum(x.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(got, want)


# -- BroadcastTo, Stack, Unstack -----------------------------------------------------------
@pytest.mark.parametrize("x_shape,shape,want", [
    ((3,), (2, 3), (2, 3)), ((2, 1), (-1, 4), (2, 4)), ((2, 1), (5, 2, 3), (5, 2, 3)),
    ((1, 3), (0, -1), (0, 3)), ((), (2, 2), (2, 2)), ((2, 3), (2, 3), (2, 3))])
def test_broadcast_to_matches_numpy(x_shape, shape, want):
    x = RNG.integers(-9, 9, x_shape).astype(np.int16)
    got = ops.BroadcastTo(shape)(Tensor(x))
    assert got.shape == want and got.dtype == ms.int16
    np.testing.assert_array_equal(got.asnumpy(), np.broadcast_to(x, want))


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_stack_and_unstack_invert_each_other(axis):
    xs = [ties((2, 3), np.int64) for _ in range(4)]
    stacked = ops.Stack(axis)(tuple(Tensor(x) for x in xs))
    np.testing.assert_array_equal(stacked.asnumpy(), np.stack(xs, axis))
    parts = ops.Unstack(axis)(stacked)
    assert len(parts) == 4
    for p, x in zip(parts, xs):
        np.testing.assert_array_equal(p.asnumpy(), x)
    one = ops.Unstack(-1, num=3)(Tensor(xs[0]))
    np.testing.assert_array_equal(np.stack([t.asnumpy() for t in one], -1), xs[0])


@pytest.mark.parametrize("prim,args", [(ops.Unstack(0), ()), (ops.Sort(0), ()),
                                       (ops.TopK(), (4,))], ids=["Unstack", "Sort", "TopK"])
def test_multi_output_ops_that_claim_fresh_outputs_share_no_memory(prim, args):
    """`fresh_outputs` lets the graph's buffer plan treat the outputs as new arrays."""
    x = np.ascontiguousarray(ties((4, 4), np.float32))
    assert prim.fresh_outputs
    for out in prim.kernel(x, *args):
        assert not np.shares_memory(out, x)


# -- errors --------------------------------------------------------------------------------
X = np.arange(10, dtype=np.float32).reshape(2, 5)


@pytest.mark.parametrize("make,err,match", [
    (lambda: ops.TopK()(Tensor(X), 7), ValueError,
     r"For 'TopK', the 'k' should be in \[0, 5\] \(the last dim of input_x \[2, 5\]\), but got 7"),
    (lambda: ops.TopK()(Tensor(X), -1), ValueError, r"For 'TopK', the 'k' should be in \[0, 5\]"),
    (lambda: ops.TopK()(Tensor(X), 2.0), TypeError, r"For 'TopK', the type of 'k' should be int, but got float"),
    (lambda: ops.TopK(sorted=1), TypeError, r"For 'TopK', .*'sorted'"),
    (lambda: ops.TopK()(Tensor(np.float32(1)), 1), ValueError, r"For 'TopK', .*input_x"),
    (lambda: ops.TopK()(Tensor(X.astype(np.complex64)), 1), TypeError, r"For 'TopK', .*input_x"),
    (lambda: ops.Sort(2)(Tensor(X)), ValueError, r"For 'Sort', the 'axis' should be in \[-2, 2\)"),
    (lambda: ops.Sort(descending=None), TypeError, r"For 'Sort', .*'descending'"),
    (lambda: ops.Sort()(Tensor(np.array([True]))), TypeError, r"For 'Sort', .*'x'"),
    (lambda: ops.CumSum()(Tensor(X), -3), ValueError, r"For 'CumSum', the 'axis' should be in"),
    (lambda: ops.CumSum()(Tensor(X > 1), 0), TypeError, r"For 'CumSum', .*'input'"),
    (lambda: ops.CumSum(exclusive=0), TypeError, r"For 'CumSum', .*'exclusive'"),
    (lambda: ops.BroadcastTo((3, 5))(Tensor(X)), ValueError,
     r"For 'BroadcastTo', input_x \[2, 5\] should broadcast to 'shape' \(3, 5\)"),
    (lambda: ops.BroadcastTo((-1, 2, 5))(Tensor(X)), ValueError,
     r"For 'BroadcastTo', a -1 in 'shape' keeps a dim of input_x"),
    (lambda: ops.BroadcastTo((5,))(Tensor(X)), ValueError,
     r"For 'BroadcastTo', the 'shape' should have at least the rank of input_x"),
    (lambda: ops.BroadcastTo((2, -2)), ValueError, r"For 'BroadcastTo', the 'shape' should hold"),
    (lambda: ops.BroadcastTo(5), TypeError, r"For 'BroadcastTo', .*'shape'"),
    (lambda: ops.Stack()((Tensor(X), Tensor(X.T.copy()))), ValueError,
     r"For 'Stack', every tensor of 'input_x' should have the shape of input_x\[0\] \[2, 5\], "
     r"but input_x\[1\] has \[5, 2\]"),
    (lambda: ops.Stack()((Tensor(X), Tensor(X.astype(np.float64)))), TypeError, r"For 'Stack'"),
    (lambda: ops.Stack(3)((Tensor(X),)), ValueError, r"For 'Stack', the 'axis' should be in"),
    (lambda: ops.Unstack(0, num=3)(Tensor(X)), ValueError,
     r"For 'Unstack', the 'input_x shape\[0\]' \(the number of outputs\) should be == num: 3, "
     r"but got 2"),
    (lambda: ops.Unstack(1)(Tensor(np.zeros((2, 0)))), ValueError,
     r"For 'Unstack', .* should be >= 1, but got 0"),
    (lambda: ops.Unstack()(Tensor(np.float32(1))), ValueError, r"For 'Unstack', .*input_x"),
    (lambda: ops.topk(Tensor(X), 3, dim=0), ValueError,
     r"For 'topk', the 'k' should be in \[0, 2\] \(dim 0 of input shape \[2, 5\]\), but got 3"),
    (lambda: ops.topk(Tensor(X), 1, dim=2), ValueError, r"For 'topk', the 'dim' should be in"),
    (lambda: ops.split(Tensor(X), [2, 2], 1), ValueError,
     r"For 'split', the 'split_size_or_sections' should add up to the size 5"),
    (lambda: ops.split(Tensor(X), 0, 1), ValueError,
     r"For 'split', the 'split_size_or_sections' should be a positive int, but got 0"),
    (lambda: ops.split(Tensor(X), 2.5), TypeError, r"For 'split', the 'split_size_or_sections'"),
    (lambda: ops.split(Tensor(X), 1, 2), ValueError, r"For 'split', the 'axis' should be in"),
    (lambda: ops.max(Tensor(X), 0, where=Tensor(X > 3)), ValueError,
     r"For 'max', the 'initial' should be given with 'where'"),
    (lambda: ops.min(Tensor(X), 0.5), TypeError, r"For 'min', the 'axis' should be an int"),
    (lambda: ops.max(Tensor(X), 0, initial="a"), TypeError, r"For 'max', the 'initial'"),
])
def test_errors_name_the_op_and_argument(make, err, match):
    with pytest.raises(err, match=match):
        make()


# -- functional forms ----------------------------------------------------------------------
A = RNG.standard_normal((3, 4, 5)).astype(np.float32)
T = ties((3, 6), np.int32)
M = np.array([True, False, True, True, False])

FORMS = [
    ("sort", lambda x: ops.sort(x, 0, True), (T,),
     (np.take_along_axis(T, ref_order(T, 0, True), 0), ref_order(T, 0, True))),
    ("argsort", lambda x: ops.argsort(x), (T,), (ref_order(T, -1, False),)),
    ("topk", lambda x: ops.topk(x, 2), (T,),
     (np.take_along_axis(T, ref_order(T, -1, True)[:, :2], -1), ref_order(T, -1, True)[:, :2])),
    ("topk_smallest_dim0", lambda x: ops.topk(x, 2, 0, largest=False), (T,),
     (np.take_along_axis(T, ref_order(T, 0, False)[:2], 0), ref_order(T, 0, False)[:2])),
    ("topk_dim1", lambda x: ops.topk(x, 3, dim=1), (A,),
     (-np.sort(-A, 1)[:, :3], np.argsort(-A, 1, kind="stable")[:, :3])),
    ("max", lambda x: ops.max(x, 1), (A,), (A.max(1), A.argmax(1))),
    ("max_keepdims", lambda x: ops.max(x, -1, True), (A,),
     (A.max(-1, keepdims=True), A.argmax(-1)[..., None])),
    ("max_all", lambda x: ops.max(x), (A,), (A.max(), 0)),
    ("min", lambda x: ops.min(x, 0), (T,), (T.min(0), T.argmin(0))),
    ("max_initial", lambda x: ops.max(x, 2, initial=0.5), (A,),
     (np.maximum(A, 0.5).max(2), np.maximum(A, 0.5).argmax(2))),
    ("min_where", lambda x: ops.min(x, 2, initial=0.25, where=Tensor(M)), (A,),
     (np.where(M, np.minimum(A, 0.25), 0.25).min(2),
      np.where(M, np.minimum(A, 0.25), 0.25).argmin(2))),
    ("cumsum", lambda x: ops.cumsum(x, -2), (A,), (np.cumsum(A, -2),)),
    ("cumsum_dtype", lambda x: ops.cumsum(x, 1, ms.float64), (T,),
     (np.cumsum(T, 1, dtype=np.float64),)),
    ("split_size", lambda x: ops.split(x, 2, 2), (A,), tuple(np.split(A, [2, 4], 2))),
    ("split_equal", lambda x: ops.split(x, 2, -1), (T,), tuple(np.split(T, 3, -1))),
    ("split_sections", lambda x: ops.split(x, [1, 0, 3], 1), (A,), tuple(np.split(A, [1, 1], 1))),
    ("unstack", lambda x: ops.unstack(x, -1), (T,), tuple(np.moveaxis(T, -1, 0))),
    ("unbind", lambda x: ops.unbind(x), (A,), tuple(A)),
    ("broadcast_to", lambda x: ops.broadcast_to(x, (2, -1, 4, 5)), (A[:, :1],),
     (np.broadcast_to(A[:, :1], (2, 3, 4, 5)),)),
    ("stack", lambda x, y: ops.stack((x, y), 1), (T, T), (np.stack([T, T], 1),)),
]


@pytest.mark.parametrize("name,fn,inputs,want", FORMS, ids=[f[0] for f in FORMS])
def test_functional_form_matches_reference_eager_and_compiled(name, fn, inputs, want):
    for outs in eager_and_compiled(fn, *inputs):
        assert len(outs) == len(want)
        for (got, dtype), w in zip(outs, want):
            w = np.asarray(w)
            assert got.shape == w.shape
            if w.dtype.kind in "iub":
                np.testing.assert_array_equal(got, w)
            else:
                np.testing.assert_allclose(got, w, rtol=1e-6, atol=1e-6)


def test_functional_result_dtypes_follow_mindspore():
    x = Tensor(A)
    assert ops.sort(x)[1].dtype == ops.argsort(x).dtype == ops.topk(x, 2, 0)[1].dtype == ms.int32
    assert ops.max(x)[1].dtype == ms.int32                        # the fixed index 0
    assert ops.max(x, 0)[1].dtype == ops.min(x, 0)[1].dtype == ms.int64   # ArgMaxWithValue's
    v, i = ops.max(Tensor(np.float32(2)))
    assert v.shape == i.shape == () and float(v.asnumpy()) == 2


X64 = RNG.standard_normal((3, 5))


@pytest.mark.parametrize("fn", [
    lambda x: ops.topk(x, 2, 0, largest=False)[0],
    lambda x: ops.topk(x, 3)[0] * 2,
    lambda x: ops.sort(x, 1, True)[0] * Tensor(np.arange(5.0)),
    lambda x: ops.split(x, [1, 4], 1)[1] * 3,
    lambda x: ops.max(x, 1, initial=0.1)[0],
    lambda x: ops.min(x, 0, True)[0],
    lambda x: ops.cumsum(x, 0) * Tensor(np.arange(5.0)),
    lambda x: ops.broadcast_to(x, (2, 3, 5)) * Tensor(np.arange(30.0).reshape(2, 3, 5)),
    lambda x: ops.stack(ops.unbind(x, 1)[::-1], 1) * Tensor(np.arange(5.0)),
], ids=["topk_smallest", "topk", "sort", "split", "max_initial", "min", "cumsum",
        "broadcast_to", "unbind_stack"])
def test_composed_forms_differentiate_like_finite_differences(fn):
    def loss(x):
        return ops.ReduceSum()(fn(x), ())
    grad = ms.grad(loss)(Tensor(X64)).asnumpy()
    want = finite_differences(lambda a: fn(Tensor(a)).asnumpy(), X64)
    np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-8)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = ms.grad(loss)(Tensor(X64)).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(compiled, grad, rtol=1e-12, atol=1e-15)


def test_tied_values_send_their_gradient_to_the_element_chosen():
    """Sort's value at each position came from one element (the stable order's): the
    gradient goes there, not shared between equals."""
    x = Tensor(np.array([[2.0, 1.0, 2.0]]))
    w = Tensor(np.array([[10.0, 20.0, 30.0]]))
    grad = ms.grad(lambda x: ops.ReduceSum()(ops.Sort(descending=True)(x)[0] * w, ()))(x)
    np.testing.assert_array_equal(grad.asnumpy(), [[10.0, 30.0, 20.0]])
    grad = ms.grad(lambda x: ops.ReduceSum()(ops.TopK()(x, 1)[0], ()))(x)
    np.testing.assert_array_equal(grad.asnumpy(), [[1.0, 0.0, 0.0]])
