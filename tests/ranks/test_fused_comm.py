"""ops.all_gather_matmul and ops.matmul_reduce_scatter on real MPI worlds, against numpy.

Every rank rebuilds every rank's inputs from seeds, so each output and gradient is checked
against numpy's serial math over all of them: all_gather_matmul(x_r, w_r) is
(concat(x) @ w_r, concat(x)); matmul_reduce_scatter(x_r, w_r) is rank r's rows of
sum_q x_q @ w_q. Gradients are those of the loss summed over ranks, written out in numpy.
Eager, inside a compiled Cell (GRAPH_MODE) and inside ms.jit; errors; the cross-rank check.
"""
import contextlib

import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from msops.communication import create_group, destroy_group, get_group_size, get_rank
from test_desync import raises_everywhere
from test_vmap import eager_and_compiled

RANKS = (2, 4, 8)
WORLD = "hccl_world_group"


def world():
    return get_rank(), get_group_size()


def data(rank, shape, salt=0, dtype=np.float32):
    return np.random.default_rng(1000 * salt + rank).standard_normal(shape).astype(dtype)


def three_ways(fn, *arrays):
    """fn's results on Tensors of `arrays`, named: eager, in a compiled Cell, in ms.jit."""
    return zip(("eager", "graph", "jit"), eager_and_compiled(fn, *arrays))


@pytest.fixture(params=[ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
def mode(request):
    ms.set_context(mode=request.param)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


# -- forward ------------------------------------------------------------------------------------

@pytest.mark.parametrize("trans_x2", [False, True])
@pytest.mark.parametrize("gather_output", [True, False])
def test_all_gather_matmul_is_the_gather_then_the_product(trans_x2, gather_output):
    rank, n = world()
    xs = [data(r, (3, 5)) for r in range(n)]
    ws = [data(r, (4, 5) if trans_x2 else (5, 4), salt=1) for r in range(n)]
    gathered = np.concatenate(xs)
    want = gathered @ (ws[rank].T if trans_x2 else ws[rank])

    def fn(x, w):
        return ops.all_gather_matmul(x, w, WORLD, n, gather_output=gather_output,
                                     trans_x2=trans_x2)
    for how, (out, gather_out) in three_ways(fn, xs[rank], ws[rank]):
        assert out.shape == (3 * n, 4), how
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-5, err_msg=how)
        if gather_output:
            np.testing.assert_array_equal(gather_out.asnumpy(), gathered, err_msg=how)
        else:
            assert gather_out.shape == (0,) and gather_out.dtype == ms.float32, how


@pytest.mark.parametrize("trans_x2", [False, True])
def test_matmul_reduce_scatter_is_the_product_then_the_reduce_scatter(trans_x2):
    rank, n = world()
    xs = [data(r, (2 * n, 5)) for r in range(n)]
    ws = [data(r, (4, 5) if trans_x2 else (5, 4), salt=1) for r in range(n)]
    total = sum(x.astype(np.float64) @ (w.T if trans_x2 else w) for x, w in zip(xs, ws))
    want = total[2 * rank:2 * rank + 2]

    def fn(x, w):
        return ops.matmul_reduce_scatter(x, w, WORLD, n, trans_x2=trans_x2)
    for how, out in three_ways(fn, xs[rank], ws[rank]):
        assert out.shape == (2, 4) and out.dtype == ms.float32, how
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-5, err_msg=how)


@pytest.mark.parametrize("dtype", [ms.float16, ms.bfloat16])
def test_half_precision_multiplies_and_reduces_in_float32(dtype):
    rank, n = world()
    np_dtype = dtype.np_dtype
    xs = [data(r, (2 * n, 8)).astype(np_dtype) for r in range(n)]
    ws = [data(r, (8, 3), salt=1).astype(np_dtype) for r in range(n)]
    x32, w32 = [x.astype(np.float32) for x in xs], [w.astype(np.float32) for w in ws]
    out, gather_out = ops.all_gather_matmul(Tensor(xs[rank]), Tensor(ws[rank]), WORLD, n)
    assert out.dtype == dtype and gather_out.dtype == dtype
    want = (np.concatenate(x32) @ w32[rank]).astype(np_dtype).astype(np.float32)
    np.testing.assert_allclose(out.asnumpy().astype(np.float32), want, rtol=1e-2, atol=1e-2)
    scattered = ops.matmul_reduce_scatter(Tensor(xs[rank]), Tensor(ws[rank]), WORLD, n)
    assert scattered.dtype == dtype
    total = sum(x @ w for x, w in zip(x32, w32))[2 * rank:2 * rank + 2]
    np.testing.assert_allclose(scattered.asnumpy().astype(np.float32), total, rtol=2e-2,
                               atol=2e-2)


@contextlib.contextmanager
def pair_group(prefix):
    """Groups of the pairs (0, 1), (2, 3), ... (made by every rank, freed after): yields
    (this rank's group name, its pair)."""
    rank, n = world()
    pairs = [(p, p + 1) for p in range(0, n, 2)]
    names = [f"{prefix}{p}" for p, _ in pairs]
    for name, ranks in zip(names, pairs):
        create_group(name, list(ranks))
    try:
        yield names[rank // 2], pairs[rank // 2]
    finally:
        for name in names:
            destroy_group(name)


def test_a_sub_group_of_two_ranks():
    """Each pair of ranks gathers and reduces among itself."""
    rank, n = world()
    with pair_group("fused_pair") as (group, mine):
        xs = {r: data(r, (2, 3)) for r in mine}
        ws = {r: data(r, (3, 4), salt=1) for r in mine}
        out, _ = ops.all_gather_matmul(Tensor(xs[rank]), Tensor(ws[rank]), group, 2)
        np.testing.assert_allclose(out.asnumpy(), np.concatenate([xs[r] for r in mine]) @ ws[rank],
                                   rtol=1e-5, atol=1e-5)
        got = ops.matmul_reduce_scatter(Tensor(xs[rank]), Tensor(ws[rank]), group, 2)
        total = sum(xs[r] @ ws[r] for r in mine)
        i = mine.index(rank)
        np.testing.assert_allclose(got.asnumpy(), total[i:i + 1], rtol=1e-5, atol=1e-5)


# -- backward ----------------------------------------------------------------------------------

@pytest.mark.parametrize("trans_x2", [False, True])
@pytest.mark.parametrize("gather_output", [True, False])
def test_all_gather_matmul_gradient_is_the_serial_math(trans_x2, gather_output, mode):
    """L = sum_r sum(W_r * (G @ op(w_r))) + sum_r sum(V_r * G), G = concat(x): dL/dx_r is
    rows r of sum_q W_q op(w_q)^T + sum_q V_q; dL/dw_r = G^T W_r (W_r^T G with trans_x2)."""
    rank, n = world()
    xs = [data(r, (3, 5)) for r in range(n)]
    ws = [data(r, (4, 5) if trans_x2 else (5, 4), salt=1) for r in range(n)]
    big_w = [data(r, (3 * n, 4), salt=2) for r in range(n)]
    big_v = [data(r, (3 * n, 5), salt=3) for r in range(n)]
    mat = [w.T if trans_x2 else w for w in ws]

    def loss(x, w):
        out, gathered = ops.all_gather_matmul(x, w, WORLD, n, gather_output=gather_output,
                                              trans_x2=trans_x2)
        total = (out * Tensor(big_w[rank])).sum()
        return total + (gathered * Tensor(big_v[rank])).sum() if gather_output else total

    dx, dw = ms.grad(loss, grad_position=(0, 1))(Tensor(xs[rank]), Tensor(ws[rank]))
    g = np.concatenate(xs).astype(np.float64)
    d_g = sum(big_w[q] @ mat[q].T for q in range(n))
    if gather_output:
        d_g = d_g + sum(big_v)
    np.testing.assert_allclose(dx.asnumpy(), d_g[3 * rank:3 * rank + 3], rtol=1e-5, atol=1e-5)
    want_dw = big_w[rank].T @ g if trans_x2 else g.T @ big_w[rank]
    np.testing.assert_allclose(dw.asnumpy(), want_dw, rtol=1e-5, atol=1e-5)


def test_all_gather_matmul_gradient_when_gather_out_is_unused(mode):
    """gather_out computed but not in the loss: d input is the fused MatmulReduceScatter of
    dout alone; the same serial math with V = 0."""
    rank, n = world()
    xs = [data(r, (2, 3)) for r in range(n)]
    ws = [data(r, (3, 4), salt=1) for r in range(n)]
    big_w = [data(r, (2 * n, 4), salt=2) for r in range(n)]

    def loss(x, w):
        return (ops.all_gather_matmul(x, w, WORLD, n)[0] * Tensor(big_w[rank])).sum()

    dx, dw = ms.grad(loss, grad_position=(0, 1))(Tensor(xs[rank]), Tensor(ws[rank]))
    d_g = sum(big_w[q] @ ws[q].T for q in range(n))
    np.testing.assert_allclose(dx.asnumpy(), d_g[2 * rank:2 * rank + 2], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dw.asnumpy(), np.concatenate(xs).T @ big_w[rank], rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("trans_x2", [False, True])
def test_matmul_reduce_scatter_gradient_is_the_serial_math(trans_x2, mode):
    """L = sum_r sum(W_r * S_r), S = sum_q x_q op(w_q), S_r its rank-r rows: with
    W = concat(W_r), dL/dx_r = W op(w_r)^T, dL/dw_r = x_r^T W (W^T x_r with trans_x2)."""
    rank, n = world()
    xs = [data(r, (2 * n, 5)) for r in range(n)]
    ws = [data(r, (4, 5) if trans_x2 else (5, 4), salt=1) for r in range(n)]
    big_w = [data(r, (2, 4), salt=2) for r in range(n)]

    def loss(x, w):
        out = ops.matmul_reduce_scatter(x, w, WORLD, n, trans_x2=trans_x2)
        return (out * Tensor(big_w[rank])).sum()

    dx, dw = ms.grad(loss, grad_position=(0, 1))(Tensor(xs[rank]), Tensor(ws[rank]))
    full_w = np.concatenate(big_w).astype(np.float64)
    mat = ws[rank].T if trans_x2 else ws[rank]
    np.testing.assert_allclose(dx.asnumpy(), full_w @ mat.T, rtol=1e-5, atol=1e-5)
    want_dw = full_w.T @ xs[rank] if trans_x2 else xs[rank].T @ full_w
    np.testing.assert_allclose(dw.asnumpy(), want_dw, rtol=1e-5, atol=1e-5)


def test_gradient_inside_ms_jit():
    """A tensor-parallel MLP step compiled whole: gather-matmul then matmul-reduce-scatter."""
    rank, n = world()
    xs = [data(r, (2, 6)) for r in range(n)]
    w1 = [data(r, (6, 3), salt=1) for r in range(n)]     # column shards
    w2 = [data(r, (3, 4), salt=2) for r in range(n)]     # row shards

    @ms.jit
    def step(x, a, b):
        def loss(x, a, b):
            h, _ = ops.all_gather_matmul(x, a, WORLD, n, gather_output=False)
            return (ops.matmul_reduce_scatter(h, b, WORLD, n) ** 2).sum()
        return ms.grad(loss, grad_position=(0, 1, 2))(x, a, b)

    dx, da, db = step(Tensor(xs[rank]), Tensor(w1[rank]), Tensor(w2[rank]))
    g = np.concatenate(xs).astype(np.float64)
    hs = [g @ a for a in w1]                             # every rank's h
    y = sum(h @ b for h, b in zip(hs, w2))               # the full (2n, 4) output
    d_y = 2 * y                                          # d(sum_r sum(y_r^2)) / dy
    d_h = [d_y @ b.T for b in w2]
    d_g = sum(dh @ a.T for dh, a in zip(d_h, w1))
    np.testing.assert_allclose(dx.asnumpy(), d_g[2 * rank:2 * rank + 2], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(da.asnumpy(), g.T @ d_h[rank], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db.asnumpy(), hs[rank].T @ d_y, rtol=1e-4, atol=1e-4)


# -- errors -------------------------------------------------------------------------------------

def _x(shape=(2, 4), dtype=np.float32):
    return Tensor(np.ones(shape, dtype))


@pytest.mark.parametrize("kwargs,error,text", [
    ({"bias": _x((4,))}, ValueError, "For 'all_gather_matmul', the 'bias' should be None"),
    ({"gather_index": 1}, ValueError, "For 'AllGatherMatmul', the 'gather_index' should be 0"),
    ({"comm_turn": 2}, ValueError, "For 'AllGatherMatmul', the 'comm_turn' should be 0"),
    ({"trans_input": True}, ValueError, "For 'AllGatherMatmul', the 'trans_input' should be "
                                        "False"),
    ({"gather_output": 1}, TypeError, "gather_output"),
])
def test_all_gather_matmul_refuses_what_mindspore_does_not_support(kwargs, error, text):
    n = get_group_size()
    with pytest.raises(error, match=text):
        ops.all_gather_matmul(_x(), _x((4, 3)), WORLD, n, **kwargs)


@pytest.mark.parametrize("kwargs,text", [
    ({"reduce_op": "max"}, "For 'MatmulReduceScatter', the 'reduce_op' should be 'sum'"),
    ({"bias": _x((3,))}, "For 'matmul_reduce_scatter', the 'bias' should be None"),
    ({"comm_turn": 1}, "For 'MatmulReduceScatter', the 'comm_turn' should be 0"),
    ({"trans_input": True}, "For 'MatmulReduceScatter', the 'trans_input' should be False"),
])
def test_matmul_reduce_scatter_refuses_what_mindspore_does_not_support(kwargs, text):
    n = get_group_size()
    with pytest.raises(ValueError, match=text):
        ops.matmul_reduce_scatter(_x((2 * n, 4)), _x((4, 3)), WORLD, n, **kwargs)


def test_world_size_must_be_the_groups_size():
    n = get_group_size()
    other = 2 if n != 2 else 4
    for fn, x in ((ops.all_gather_matmul, _x()), (ops.matmul_reduce_scatter, _x((8, 4)))):
        with pytest.raises(ValueError, match=f"'world_size' should be the size of group "
                                             f"'world_group': {n}, but got {other}"):
            fn(x, _x((4, 3)), WORLD, other)
        with pytest.raises(ValueError, match=r"'world_size' should be one of \[2, 4, 8\], but "
                                             r"got 3"):
            fn(x, _x((4, 3)), WORLD, 3)
        with pytest.raises(TypeError, match="world_size"):
            fn(x, _x((4, 3)), WORLD, 2.0)


def test_shapes_and_dtypes_are_checked_on_every_rank():
    n = get_group_size()
    with pytest.raises(ValueError, match=r"For 'AllGatherMatmul', the contraction dim of 'x2' "
                                         r"should be == input's dim 1: 4, but got 5"):
        ops.all_gather_matmul(_x(), _x((5, 3)), WORLD, n)
    with pytest.raises(ValueError, match=r"For 'MatmulReduceScatter', the rank of 'input' "
                                         r"should be 2"):
        ops.matmul_reduce_scatter(_x((2, 2, 4)), _x((4, 3)), WORLD, n)
    with pytest.raises(ValueError, match=r"For 'MatmulReduceScatter', the 'input' dim 0 should "
                                         rf"be divisible by world_size: {n}, but got {n + 1}"):
        ops.matmul_reduce_scatter(_x((n + 1, 4)), _x((4, 3)), WORLD, n)
    with pytest.raises(TypeError, match="For 'AllGatherMatmul', the 'input'.*Float64"):
        ops.all_gather_matmul(_x(dtype=np.float64), _x((4, 3), np.float64), WORLD, n)
    with pytest.raises(TypeError, match="For 'MatmulReduceScatter', the 'x2' should have the "
                                        "same dtype as 'input'"):
        ops.matmul_reduce_scatter(_x((n, 4)), _x((4, 3), np.float16), WORLD, n)
    with pytest.raises(TypeError, match="For 'all_gather_matmul', the 'input'"):
        ops.all_gather_matmul(np.ones((2, 4), np.float32), _x((4, 3)), WORLD, n)
    with pytest.raises(TypeError, match="For 'matmul_reduce_scatter', the 'group' should be a "
                                        "str"):
        ops.matmul_reduce_scatter(_x((n, 4)), _x((4, 3)), None, n)
    ok, _ = ops.all_gather_matmul(_x(), _x((4, 3)), WORLD, n)       # still in step
    np.testing.assert_array_equal(ok.asnumpy(), np.full((2 * n, 3), 4, np.float32))


# -- the cross-rank check -------------------------------------------------------------------------

def test_the_check_catches_ranks_calling_with_different_shapes():
    rank, n = world()
    rows = 3 if rank == 0 else 2
    raises_everywhere(lambda: ops.all_gather_matmul(_x((rows, 4)), _x((4, 3)), WORLD, n),
                       "AllGatherMatmul(", "[3, 4] Float32", "[2, 4] Float32")
    rows = 2 * n if rank == 0 else n
    raises_everywhere(lambda: ops.matmul_reduce_scatter(_x((rows, 4)), _x((4, 3)), WORLD, n),
                       "MatmulReduceScatter(", f"[{2 * n}, 4] Float32", f"[{n}, 4] Float32")
    ok = ops.matmul_reduce_scatter(_x((n, 4)), _x((4, 3)), WORLD, n)      # still in step
    np.testing.assert_array_equal(ok.asnumpy(), np.full((1, 3), 4 * n, np.float32))


def test_the_check_catches_ranks_calling_with_different_attributes():
    rank, n = world()
    raises_everywhere(lambda: ops.all_gather_matmul(_x(), _x((3, 4) if rank else (4, 3)),
                                                     WORLD, n, trans_x2=bool(rank)),
                       "trans_x2=False", "trans_x2=True")


def test_a_shape_error_on_one_rank_raises_on_every_rank():
    """Rank 0's own arguments fail inference; the others, already in the call, raise too."""
    rank, n = world()
    x2 = _x((5, 3)) if rank == 0 else _x((4, 3))
    with pytest.raises(ValueError) as err:
        ops.all_gather_matmul(_x(), x2, WORLD, n)
    assert "contraction dim of 'x2'" in str(err.value)
