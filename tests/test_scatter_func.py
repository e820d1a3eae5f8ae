"""The arithmetic tensor scatters (TensorScatterAdd/Sub/Mul/Div/Max/Min and ops.
tensor_scatter_*), ops.scatter_nd_* (a Parameter updated in place) and ops.unsorted_segment_*:
values against numpy's unbuffered ufunc.at written here (repeated indices included), eagerly
and inside a compiled Cell; gradients against finite differences (repeated indices and a
zero update for Mul); ties of Max share the gradient; argument errors."""
import doctest

import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.primitives import scatter_ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(12)
X = RNG.standard_normal((4, 3)).astype(np.float32)
IDX = np.array([[2], [0], [2], [3]], np.int32)             # row 2 addressed twice
U = RNG.standard_normal((4, 3)).astype(np.float32) + 2.0
IDX2 = np.array([[1, 2], [3, 0], [1, 2]], np.int64)        # element (1, 2) twice
U2 = np.array([1.5, -0.5, 4.0], np.float32)


def np_scatter(ufunc, x, idx, u):
    out = x.copy()
    ufunc.at(out, tuple(np.moveaxis(idx, -1, 0)), u)
    return out


FUNCS = [("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.true_divide),
         ("max", np.maximum), ("min", np.minimum)]


@pytest.mark.parametrize("name,ufunc", FUNCS, ids=[f[0] for f in FUNCS])
@pytest.mark.parametrize("idx,u", [(IDX, U), (IDX2, U2)], ids=["rows", "elements"])
def test_tensor_scatter_matches_numpy_eager_and_compiled(name, ufunc, idx, u):
    fn = getattr(ops, f"tensor_scatter_{name}")
    want = np_scatter(ufunc, X, idx, u)
    args = (Tensor(X), Tensor(idx), Tensor(u))
    eager, compiled = eager_and_compiled(fn, *args)
    for out in (eager, compiled):
        assert out.dtype == ms.float32 and out.shape == X.shape
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(getattr(ops, f"TensorScatter{name.capitalize()}")()(*args)
                                  .asnumpy(), eager.asnumpy())


def test_integer_scatters_keep_the_dtype():
    x = np.arange(6, dtype=np.int32).reshape(3, 2)
    idx, u = np.array([[1], [1]], np.int32), np.array([[5, -5], [1, 2]], np.int32)
    for name, ufunc in FUNCS[:3] + FUNCS[4:]:
        out = getattr(ops, f"tensor_scatter_{name}")(Tensor(x), Tensor(idx), Tensor(u))
        assert out.dtype == ms.int32
        np.testing.assert_array_equal(out.asnumpy(), np_scatter(ufunc, x, idx, u))


X64, U64 = X.astype(np.float64), U.astype(np.float64)
U64[1, 1] = 0.0                              # a zero update: Mul's gradient stays exact


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "max", "min"])
def test_gradients_match_finite_differences_with_repeated_indices(name):
    fn = getattr(ops, f"tensor_scatter_{name}")
    u = np.abs(U64) + 0.5 if name == "div" else U64
    w = RNG.standard_normal(X.shape)
    loss = lambda x, u: fn(x, Tensor(IDX), u).asnumpy() * w  # noqa: E731
    gx, gu = ms.grad(lambda x, u: ops.ReduceSum()(fn(x, Tensor(IDX), u) * Tensor(w), ()),
                     (0, 1))(Tensor(X64), Tensor(u))
    np.testing.assert_allclose(gx.asnumpy(), finite_differences(
        lambda a: loss(Tensor(a), Tensor(u)), X64), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gu.asnumpy(), finite_differences(
        lambda a: loss(Tensor(X64), Tensor(a)), u), rtol=1e-6, atol=1e-8)


def test_max_ties_share_the_gradient():
    """x[1] == both updates of slice 1: each of the three gets a third of dout there."""
    x, idx, u = np.array([1.0, 7.0, 0.0]), np.array([[1], [1], [2]], np.int32), \
        np.array([7.0, 7.0, -1.0])
    gx, gu = ms.grad(lambda x, u: ops.ReduceSum()(ops.tensor_scatter_max(
        x, Tensor(idx), u) * Tensor(np.array([1.0, 3.0, 5.0])), ()), (0, 1))(Tensor(x),
                                                                          Tensor(u))
    np.testing.assert_allclose(gx.asnumpy(), [1.0, 1.0, 5.0])
    np.testing.assert_allclose(gu.asnumpy(), [1.0, 1.0, 0.0])


class InPlace(nn.Cell):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn
        self.p = Parameter(Tensor(X.copy()), name="p")

    def construct(self, idx, u):
        return self.fn(self.p, idx, u)


@pytest.mark.parametrize("name,ufunc", FUNCS + [("update", None)],
                         ids=[f[0] for f in FUNCS] + ["update"])
def test_scatter_nd_updates_the_parameter_in_place(name, ufunc):
    fn = getattr(ops, f"scatter_nd_{name}")
    idx = np.array([[2], [0]], np.int32)
    u = U[:2]
    if ufunc is None:
        want = X.copy()
        want[[2, 0]] = u
    else:
        want = np_scatter(ufunc, X, idx, u)
    for mode in (ms.PYNATIVE_MODE, ms.GRAPH_MODE):
        ms.set_context(mode=mode)
        try:
            net = InPlace(fn)
            out = net(Tensor(idx), Tensor(u))
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
        np.testing.assert_allclose(net.p.asnumpy(), want, rtol=1e-6)


SEG_X = RNG.standard_normal((5, 2)).astype(np.float32)
SEG_IDS = np.array([0, 3, 0, 7, -1], np.int32)              # 7 and -1: dropped; 1, 2: empty


def np_segments(ufunc, x, ids, n, empty):
    out = np.full((n,) + x.shape[ids.ndim:], empty, x.dtype)
    keep = (ids >= 0) & (ids < n)
    ufunc.at(out, ids[keep], x[keep])
    return out


@pytest.mark.parametrize("name,ufunc,empty", [
    ("sum", np.add, 0), ("max", np.maximum, np.finfo(np.float32).min),
    ("min", np.minimum, np.finfo(np.float32).max), ("prod", np.multiply, 1)])
def test_unsorted_segments_match_numpy_eager_and_compiled(name, ufunc, empty):
    fn = getattr(ops, f"unsorted_segment_{name}")
    want = np_segments(ufunc, SEG_X, SEG_IDS, 4, empty)
    for out in eager_and_compiled(lambda x, i: fn(x, i, 4), Tensor(SEG_X), Tensor(SEG_IDS)):
        assert out.shape == (4, 2) and out.dtype == ms.float32
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)


@pytest.mark.parametrize("name", ["sum", "max", "prod"])
def test_unsorted_segment_gradients_match_finite_differences(name):
    fn = getattr(ops, f"unsorted_segment_{name}")
    x = SEG_X.astype(np.float64)
    ids = Tensor(np.array([0, 2, 0, 2, 1], np.int32))
    w = RNG.standard_normal((3, 2))
    g = ms.grad(lambda t: ops.ReduceSum()(fn(t, ids, 3) * Tensor(w), ()))(Tensor(x))
    want = finite_differences(lambda a: fn(Tensor(a), ids, 3).asnumpy() * w, x)
    np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("call,err,match", [
    (lambda: ops.tensor_scatter_add(Tensor(X), Tensor(IDX.astype(np.float32)), Tensor(U)),
     TypeError, r"For 'TensorScatterAdd', the 'indices' should be a Tensor with dtype"),
    (lambda: ops.tensor_scatter_max(Tensor(X), Tensor(IDX), Tensor(U[:2])), ValueError,
     r"For 'TensorScatterMax', the 'updates shape' should be"),
    (lambda: ops.tensor_scatter_div(Tensor(X.astype(np.int32)), Tensor(IDX),
                                    Tensor(U.astype(np.int32))), TypeError,
     r"For 'TensorScatterDiv', the 'input_x' should be a Tensor with dtype in"),
    (lambda: ops.tensor_scatter_sub(Tensor(X), Tensor(IDX + 3), Tensor(U)), ValueError,
     r"For 'TensorScatterSub', every value of 'indices' should be in \[0, 4\)"),
    (lambda: ops.scatter_nd_add(Tensor(X), Tensor(IDX), Tensor(U)), TypeError,
     r"For 'scatter_nd_add', the 'input_x' should be a Parameter"),
    (lambda: ops.unsorted_segment_sum(Tensor(SEG_X), Tensor(SEG_IDS), Tensor(np.array([2, 3]))),
     ValueError, r"For 'unsorted_segment_sum', the 'num_segments' should be a positive int"),
    (lambda: ops.unsorted_segment_sum(Tensor(SEG_X), Tensor(SEG_IDS), 0), ValueError,
     r"For 'unsorted_segment_sum', the 'num_segments' should be a positive int"),
    (lambda: ops.unsorted_segment_max(Tensor(SEG_X), Tensor(SEG_IDS[:3]), 2), ValueError,
     r"For 'unsorted_segment_max', the 'segment_ids' shape should be a prefix"),
    (lambda: ops.unsorted_segment_min(Tensor(SEG_X), Tensor(SEG_IDS.astype(np.float32)), 2),
     TypeError, r"For 'unsorted_segment_min', the 'segment_ids' should be an int32 or int64"),
])
def test_argument_errors_name_the_op_and_argument(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_docstring_examples():
    res = doctest.testmod(scatter_ops, extraglobs={"Tensor": Tensor, "np": np})
    assert res.attempted > 0 and res.failed == 0
