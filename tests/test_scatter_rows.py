"""ops.scatter_add / mul / div / max / min / update (rows of a Parameter updated in place,
MindSpore's ScatterAdd family) and ops.tensor_scatter_elements (none / add): values against
numpy loops written here, eagerly and inside a compiled Cell (the Parameter holds the new
value after either), gradients of tensor_scatter_elements against finite differences, and
argument errors."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled
from test_scatter_func import InPlace, X                    # a Cell holding Parameter p = X

RNG = np.random.default_rng(5)
IDX = np.array([[3, 1], [1, 0]], np.int32)                  # row 1 addressed twice
U = RNG.standard_normal((2, 2, 3)).astype(np.float32) + 2.0


def np_rows(ufunc, x, idx, u):
    out = x.copy()
    for i, row in np.ndenumerate(idx):
        out[row] = u[i] if ufunc is None else ufunc(out[row], u[i])
    return out


FUNCS = [("add", np.add), ("mul", np.multiply), ("div", np.true_divide),
         ("max", np.maximum), ("min", np.minimum)]


@pytest.mark.parametrize("name,ufunc", FUNCS + [("update", None)],
                         ids=[f[0] for f in FUNCS] + ["update"])
def test_scatter_rows_update_the_parameter_in_place(name, ufunc):
    fn = getattr(ops, f"scatter_{name}")
    idx, u = (IDX, U) if ufunc is not None else (np.array([3, 0], np.int64), U[0])
    want = np_rows(ufunc, X, idx, u)
    for mode in (ms.PYNATIVE_MODE, ms.GRAPH_MODE):
        ms.set_context(mode=mode)
        try:
            net = InPlace(fn)
            out = net(Tensor(idx), Tensor(u))
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
        np.testing.assert_allclose(net.p.asnumpy(), want, rtol=1e-6)


def np_scatter_elements(x, idx, u, axis, add):
    out = x.copy()
    for pos in np.ndindex(idx.shape):
        target = list(pos)
        target[axis] = idx[pos] % x.shape[axis]
        out[tuple(target)] = out[tuple(target)] + u[pos] if add else u[pos]
    return out


E_X = RNG.standard_normal((3, 4)).astype(np.float32)
E_IDX = np.array([[3, 0, -1], [1, 2, 0]], np.int64)        # -1 is 3; the two rows unique
E_DUP = np.array([[1, 1], [0, 2], [2, 2]], np.int32)        # repeated along axis 1
E_U = RNG.standard_normal((3, 3)).astype(np.float32)


@pytest.mark.parametrize("idx,axis,reduction", [
    (np.array([[0, 2, 1], [2, 0, 1]], np.int32).T.copy(), 0, "none"),
    (np.array([[1, 0, 3], [2, 3, 0]], np.int64), 1, "none"),
    (E_DUP, 1, "add"),
    (np.array([[2, 0, -3, 1]], np.int32), 0, "add"),
], ids=["axis0", "axis1_fewer_rows", "add_repeated", "add_negative"])
def test_tensor_scatter_elements_matches_numpy_eager_and_compiled(idx, axis, reduction):
    u = E_U.reshape(-1)[:idx.size].reshape(idx.shape) + 0 * idx
    u = u.astype(np.float32)
    want = np_scatter_elements(E_X, idx, u, axis, reduction == "add")
    eager, compiled = eager_and_compiled(
        lambda x, i, v: ops.tensor_scatter_elements(x, i, v, axis, reduction),
        Tensor(E_X), Tensor(idx), Tensor(u))
    for out in (eager, compiled):
        assert out.shape == E_X.shape and out.dtype == ms.float32
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)


X64 = RNG.standard_normal((3, 4))
U64 = RNG.standard_normal((2, 3))
I64 = np.array([[3, 0, 1], [1, 2, 0]], np.int64)


@pytest.mark.parametrize("reduction", ["none", "add"])
def test_tensor_scatter_elements_gradients_match_finite_differences(reduction):
    def fn(x, u):
        return ops.tensor_scatter_elements(x, Tensor(I64), u, 1, reduction)
    gx, gu = ms.grad(lambda x, u: ops.ReduceSum()(fn(x, u) * fn(x, u), ()), (0, 1))(
        Tensor(X64), Tensor(U64))
    np.testing.assert_allclose(gx.asnumpy(), finite_differences(
        lambda a: fn(Tensor(a), Tensor(U64)).asnumpy() ** 2, X64), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gu.asnumpy(), finite_differences(
        lambda a: fn(Tensor(X64), Tensor(a)).asnumpy() ** 2, U64), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("make,err,match", [
    (lambda: ops.scatter_add(Tensor(X), Tensor(IDX), Tensor(U)), TypeError,
     r"For 'scatter_add', the 'input_x' should be a Parameter"),
    (lambda: ops.scatter_max(Parameter(Tensor(X), name="q"), Tensor(IDX), Tensor(U[0])),
     ValueError, r"For 'scatter_max', the 'updates' shape should be .* \[2, 2, 3\]"),
    (lambda: ops.scatter_update(Parameter(Tensor(X), name="q"), Tensor(IDX * 1.0), Tensor(U)),
     TypeError, r"For 'scatter_update', the 'indices' should be an int32 or int64"),
    (lambda: ops.tensor_scatter_elements(Tensor(E_X), Tensor(E_IDX), Tensor(E_U[:2]), 1,
                                         "mul"), ValueError, r"'reduction' should be"),
    (lambda: ops.tensor_scatter_elements(Tensor(E_X), Tensor(E_IDX + 5), Tensor(E_U[:2]), 1),
     ValueError, r"For 'tensor_scatter_elements', every value of 'indices' should be in "
                 r"\[-4, 4\)"),
    (lambda: ops.tensor_scatter_elements(Tensor(E_X), Tensor(E_IDX), Tensor(E_U), 1),
     ValueError, r"For 'tensor_scatter_elements', the 'indices' and 'updates' should have "
                 r"one shape"),
    (lambda: ops.tensor_scatter_elements(Tensor(E_X), Tensor(np.zeros((4, 1), np.int32)),
                                         Tensor(np.zeros((4, 1), np.float32)), 1),
     ValueError, r"no larger off axis 1"),
])
def test_argument_errors_name_the_function_and_argument(make, err, match):
    with pytest.raises(err, match=match):
        make()
