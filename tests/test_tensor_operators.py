"""Python's operators and indexing on Tensors, eager and traced (ms.jit), against numpy:
arithmetic (`**`, `//`, `%`), comparisons (element-wise, `==` included), `abs`, `&`, `|`,
`^`, `~` (logical on bools, bitwise on ints), mixed dtypes promoted, `x[...]` (ints,
slices with steps, `...`, `None`, one index array) read and assigned, with gradients,
iteration, `float()` / `int()`."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor

A = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32)
B = np.array([[2.0, 1.0, -1.5], [0.5, 3.0, 2.0]], np.float32)
I = np.array([[7, -8, 9], [5, 6, -4]], np.int32)
M = np.array([[True, False, True], [False, False, True]])

OPERATORS = {
    "pow": (lambda x, y: abs(x) ** y, A, B), "rpow": (lambda x, y: 2.0 ** x, A, B),
    "floordiv": (lambda x, y: x // 3, I, I), "mod": (lambda x, y: x % 3, I, I),
    "rmod": (lambda x, y: 20 % x, I, I), "lt": (lambda x, y: x < y, A, B),
    "le": (lambda x, y: x <= 0.5, A, B), "gt": (lambda x, y: 1 > x, A, B),
    "ge": (lambda x, y: x >= y, A, B), "eq": (lambda x, y: x == y, A, B),
    "ne": (lambda x, y: x != 0.5, A, B), "abs": (lambda x, y: abs(x), A, B),
    "neg_pos": (lambda x, y: -(+x), A, B), "and": (lambda x, y: x & ~y, M, M[::-1]),
    "or": (lambda x, y: x | y, M, M[::-1]), "xor": (lambda x, y: x ^ y, M, M[::-1]),
    "bit_and": (lambda x, y: x & y, I, I[::-1]), "bit_or": (lambda x, y: x | 6, I, I),
    "bit_xor": (lambda x, y: x ^ y, I, I[::-1]), "invert": (lambda x, y: ~x, I, I),
}
INDICES = [1, -1, (1, 2), (slice(None), slice(None, None, -2)), (Ellipsis, 0),
           (None, 1, slice(1, None)), [1, 0, 1], (slice(None), [2, 0]), (0, [-1, 0]),
           ([0, 1], [2, -1]), (slice(None), [0, 2], [3, 1]), ([[0], [1]], [0, 1, 2]),
           (Ellipsis, [1, 0], [3, 3])]


@pytest.fixture(params=["eager", "jit"])
def run(request):
    """Calls `fn(*tensors)` eagerly, or compiled by ms.jit in GRAPH_MODE."""
    ms.set_context(mode=ms.GRAPH_MODE)
    if request.param == "eager":
        return lambda fn, *args: fn(*args)
    return lambda fn, *args: ms.jit(fn)(*args)


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_operators_equal_numpy(name, run):
    fn, x, y = OPERATORS[name]
    got = run(fn, Tensor(x), Tensor(y)).asnumpy()
    want = fn(x, y)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("index", INDICES, ids=str)
def test_indexing_equals_numpy(index, run):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    got = run(lambda t: t[index], Tensor(x)).asnumpy()
    np.testing.assert_array_equal(got, x[index])


def test_index_tensor_and_gradient(run):
    """An int Tensor index gathers; the gradient of a slice scatters back (numpy by hand);
    `logits[arange, labels]` picks one element per row, its gradient one-hot."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[2, 0], [1, 1]], np.int32)
    np.testing.assert_array_equal(run(lambda t, i: t[:, i], Tensor(x), Tensor(idx)).asnumpy(),
                                  x[:, idx])
    back = np.array([-1, 0], np.int32)                       # negative: from the end
    np.testing.assert_array_equal(run(lambda t, i: t[i], Tensor(x), Tensor(back)).asnumpy(),
                                  x[back])
    grad = run(ms.grad(lambda t: (t[1:, ::2] * t[1:, ::2]).sum() + t[0, [3, 3]].sum()),
               Tensor(x)).asnumpy()
    want = np.zeros_like(x)
    want[1:, ::2] = 2 * x[1:, ::2]
    want[0, 3] += 2
    np.testing.assert_array_equal(grad, want)
    labels = Tensor(np.array([3, 0, 1], np.int32))
    rows = Tensor(np.arange(3, dtype=np.int32))
    picked = run(ms.grad(lambda t: (t[rows, labels] * 2).sum()), Tensor(x)).asnumpy()
    np.testing.assert_array_equal(picked, 2 * np.eye(4)[[3, 0, 1]])


def test_equality_hashing_iteration_and_scalars():
    a, b = Tensor(A), Tensor(A.copy())
    assert (a == b).asnumpy().all() and a is not b
    assert len({a, b}) == 2 and a in [a, b]                 # hashed by identity
    with pytest.raises(ValueError, match=r"the truth value of a Tensor should come from one "
                                         r"element"):
        a in [b]                                            # b == a is element-wise
    assert (a == None) is False and (a != None) is True     # noqa: E711
    rows = list(Tensor(I))
    assert len(rows) == 2 and all(np.array_equal(r.asnumpy(), I[k]) for k, r in enumerate(rows))
    assert float(Tensor(np.array(2.5))) == 2.5 and int(Tensor(np.array([7]))) == 7


def test_errors_name_the_operator():
    t = Tensor(A)
    with pytest.raises(TypeError, match=r"'Tensor.__and__', the operands should be bool or "
                                        r"integer Tensors, but got \['Float32', 'Float32'\]"):
        t & t
    with pytest.raises(IndexError, match=r"the index 2 is out of bounds for dim 0 of size 2"):
        t[2]
    with pytest.raises(IndexError, match=r"too many indices: the Tensor has 2 dims"):
        t[0, 0, 0]
    with pytest.raises(IndexError, match=r"a bool Tensor index \(a mask\)"):
        t[Tensor(M)]
    with pytest.raises(IndexError, match=r"several index arrays should stand next to each "
                                         r"other"):
        Tensor(np.ones((2, 3, 4)))[[0], :, [1]]
    with pytest.raises(IndexError, match=r"the index arrays should broadcast together"):
        t[[0, 1], [0, 1, 2]]
    with pytest.raises(TypeError, match=r"a 0-d Tensor is not iterable"):
        list(Tensor(np.array(1.0)))
    with pytest.raises(Exception, match=r"asnumpy|item"):      # a traced value has none
        ms.jit(lambda v: Tensor(np.array(float(v))))(Tensor(np.array(1.0)))


SETS = [((0, 1), 5.0), ((slice(None), 2), np.array([1, 2, 3, 4], np.float32)),
        ((Ellipsis, [0, 3]), -1), ((1, slice(None, None, -1), 0), np.array([7, 8, 9], np.float32)),
        (None, 0.5), ((0, slice(1, 3)), np.array([[2.5], [3.5]], np.float32))]


@pytest.mark.parametrize("index, value", SETS, ids=[str(s[0]) for s in SETS])
def test_setitem_equals_numpy(index, value, run):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    v = Tensor(value) if isinstance(value, np.ndarray) else value

    def put(t, *given):
        t = t * 1                               # a value of the function (not its input)
        t[index] = given[0] if given else v
        return t
    got = run(put, Tensor(x), *([v] if isinstance(v, Tensor) else [])).asnumpy()
    want = x.copy()
    want[index] = value
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_setitem_gradient_and_parameters(mode):
    """d/dx: x's gradient outside the selection, 0 inside; d/dv: the selection's."""
    ms.set_context(mode=mode)
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

    def loss(t, v):
        y = t * 1.0
        y[0, 1:3] = v
        return (y * y).sum()
    gx, gv = ms.grad(loss, (0, 1))(Tensor(x), Tensor(np.full((2, 4), 2.0, np.float32)))
    want = 2 * x
    want[0, 1:3] = 0
    np.testing.assert_array_equal(gx.asnumpy(), want)
    np.testing.assert_array_equal(gv.asnumpy(), np.full((2, 4), 4.0))
    p = ms.Parameter(Tensor(x.copy()), "p")
    p[1, :, 0] = 0.0                                          # eager: written in place
    expect = x.copy()
    expect[1, :, 0] = 0.0
    np.testing.assert_array_equal(p.asnumpy(), expect)

    def clear_row(i):
        p[0, 0] = i
        return p * 1
    np.testing.assert_array_equal(ms.jit(clear_row)(Tensor(np.float32(7))).asnumpy()[0, 0],
                                  np.full(4, 7.0))
    np.testing.assert_array_equal(p.asnumpy()[0, 0], np.full(4, 7.0))   # the Assign wrote it
    ms.set_context(mode=ms.GRAPH_MODE)


def test_setitem_errors():
    t = Tensor(A)
    with pytest.raises(IndexError, match=r"'Tensor.__setitem__', an index Tensor \(its values "
                                         r"data\) should be the whole index"):
        t[0, Tensor(np.array([0], np.int32))] = 1.0
    with pytest.raises(ValueError, match=r"the value of shape \[2\] should broadcast to the "
                                         r"selection's shape \[3\]"):
        t[0] = Tensor(np.ones(2, np.float32))
    with pytest.raises(IndexError, match=r"the index 5 is out of bounds"):
        t[5] = 1.0


PROMOTIONS = [  # (x dtype, y: dtype or Python scalar, op, numpy's result computed as)
    (np.int32, np.float32, "add", np.float32), (np.int32, np.int64, "add", np.int64),
    (np.int32, 1.5, "add", np.float32), (np.float16, 1.5, "mul", np.float16),
    (np.float16, np.float32, "sub", np.float32), (np.bool_, 1, "add", np.int64),
    (np.int32, 2, "truediv", np.float32), (np.int32, np.int32, "truediv", np.float32),
    (np.int32, 0.5, "pow", np.float32), (np.int32, np.int64, "eq", np.bool_),
    (np.uint8, np.int8, "add", np.int16), (np.int64, np.float16, "mul", np.float16),
]


def _id(p):
    y = p[1].__name__ if isinstance(p[1], type) else p[1]
    return f"{p[0].__name__}-{y}-{p[2]}"


@pytest.mark.parametrize("x_dtype, y, op, want_dtype", PROMOTIONS, ids=[_id(p) for p in PROMOTIONS])
def test_operators_promote_mixed_dtypes(x_dtype, y, op, want_dtype, run):
    """Operands of different dtypes meet in the promoted one (MindSpore's implicit
    promotion: family bool < int < float < complex, then width; a scalar of a higher
    family gives its default dtype; true division of ints is float32)."""
    x = np.array([[1, 2], [3, 4]]).astype(x_dtype)
    fns = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
           "truediv": lambda a, b: a / b, "pow": lambda a, b: a ** b,
           "eq": lambda a, b: a == b}
    fn = fns[op]
    if isinstance(y, type):
        yv = np.array([[1, 3], [2, 4]]).astype(y)
        got = run(fn, Tensor(x), Tensor(yv))
        want = fn(x.astype(want_dtype if op != "eq" else np.int64),
                  yv.astype(want_dtype if op != "eq" else np.int64))
    else:
        got = run(lambda a: fn(a, y), Tensor(x))
        want = fn(x.astype(want_dtype), y)
    assert got.dtype == ms.dtype.from_numpy(np.dtype(want_dtype)), got.dtype
    np.testing.assert_allclose(got.asnumpy().astype(np.float64),
                               np.asarray(want).astype(np.float64), rtol=1e-3)


def test_functional_forms_promote_and_primitives_do_not():
    """ops.add / maximum / equal promote as the operators; the primitive itself takes one
    dtype (MindSpore's primitives check), and the logical ops stay bool-only."""
    i32, f32 = Tensor(np.array([1, 5], np.int32)), Tensor(np.array([1.5, 2.0], np.float32))
    got = ms.ops.add(i32, f32)
    assert got.dtype == ms.float32
    np.testing.assert_array_equal(got.asnumpy(), [2.5, 7.0])
    np.testing.assert_array_equal(ms.ops.maximum(i32, f32).asnumpy(), [1.5, 5.0])
    np.testing.assert_array_equal(ms.ops.equal(i32, Tensor(np.array([1, 2], np.int64))).asnumpy(),
                                  [True, False])
    with pytest.raises(TypeError, match=r"For 'Add', the 'y' should have the same dtype"):
        ms.ops.Add()(i32, f32)
    with pytest.raises(TypeError, match=r"For 'LogicalAnd'"):
        ms.ops.logical_and(Tensor(M[0, :2]), i32)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_setitem_rows_by_an_index_tensor(mode, run):
    """x[idx] = v with an int Tensor idx (values known only when run; negative from the
    end): a TensorScatterUpdate, differentiable into x and v."""
    ms.set_context(mode=mode)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([3, -4], np.int32)

    def put(t, i, v):
        t = t * 1
        t[i] = v
        return t
    v = np.array([1.0, 2.0, 3.0], np.float32)
    got = run(put, Tensor(x), Tensor(idx), Tensor(v)).asnumpy()
    want = x.copy()
    want[idx] = v
    np.testing.assert_array_equal(got, want)
    gx, gv = ms.grad(lambda t, w: (put(t, Tensor(idx), w) ** 2).sum(), (0, 1))(Tensor(x),
                                                                               Tensor(v))
    want_gx = 2 * x
    want_gx[idx] = 0
    np.testing.assert_array_equal(gx.asnumpy(), want_gx)
    np.testing.assert_array_equal(gv.asnumpy(), 2 * 2 * v)
    ms.set_context(mode=ms.GRAPH_MODE)


def test_setitem_by_a_bool_mask(run):
    """x[x < 0] = 0 (a Select: x's shape, whatever the mask's count); the gradient flows
    where the mask is False. A value per selected element is refused (its count is data)."""
    x = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]], np.float32)

    def clip(t):
        t = t * 1
        t[t < 0] = 0
        return t
    want = x.copy()
    want[want < 0] = 0
    np.testing.assert_array_equal(run(clip, Tensor(x)).asnumpy(), want)
    grad = run(ms.grad(lambda t: (clip(t) ** 2).sum()), Tensor(x)).asnumpy()
    np.testing.assert_array_equal(grad, 2 * want)
    t = Tensor(x.copy())
    with pytest.raises(ValueError, match=r"with a bool mask index the value should be one "
                                         r"number"):
        t[Tensor(x > 0)] = Tensor(np.ones(3, np.float32))


def test_a_python_scalar_takes_bfloat16_beside_a_bfloat16_tensor():
    import ml_dtypes
    x = np.array([[1.5, -2.0], [3.25, 4.0]], ml_dtypes.bfloat16)
    t = ms.Tensor(x)
    for got, want in ((t * 2.0, x * ml_dtypes.bfloat16(2.0)), (t + 1, x + ml_dtypes.bfloat16(1)),
                      (ms.ops.log2(t), np.log2(x.astype(np.float32)))):
        assert got.dtype == ms.bfloat16
        np.testing.assert_allclose(got.asnumpy().astype(np.float32),
                                   np.asarray(want).astype(np.float32), rtol=1e-2)
    ms.set_context(mode=ms.GRAPH_MODE)
    got = ms.jit(lambda a: a * 3.0 - 1)(t)
    assert got.dtype == ms.bfloat16
    np.testing.assert_array_equal(got.asnumpy().astype(np.float32),
                                  (x.astype(np.float32) * 3 - 1).astype(ml_dtypes.bfloat16)
                                  .astype(np.float32))
