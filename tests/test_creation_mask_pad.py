"""The creation, mask, slicing and padding functional forms (creation_func, mask_func,
slice_func, pad_func): values against numpy written here, eagerly and inside a compiled
Cell; gradients of the differentiable ones against float64 finite differences; argument
errors naming the function."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from numeric import finite_differences
from test_functional_forms import Call
from test_functional_forms import eager_and_compiled as _both

RNG = np.random.default_rng(2024)
A = RNG.standard_normal((2, 3, 4)).astype(np.float32)
M = RNG.standard_normal((5, 3)).astype(np.float32)
V = RNG.standard_normal(7).astype(np.float32)
I = RNG.integers(-9, 9, (3, 4)).astype(np.int32)
BOOLS = RNG.random((3, 4)) > 0.5
MASK = RNG.random((3, 1)) > 0.5
E = np.zeros((0, 3), np.float32)


def np_repeat_flat(x, r):
    return np.repeat(x.ravel(), r)


def np_chunk(x, chunks, axis):
    n = x.shape[axis]
    step = -(-n // chunks)
    return [np.take(x, range(b, min(b + step, n)), axis) for b in range(0, n, step)]


# (name, call on Tensors, inputs, numpy reference: an array or a list of arrays)
FORMS = [
    ("arange", lambda x: x + ops.arange(4, dtype=ms.float32), (A,), A + np.arange(4)),
    ("arange_float", lambda x: x + ops.arange(-1, 1, 0.5), (A,), A + np.arange(-1, 1, 0.5)),
    ("arange_down", lambda x: x + ops.arange(3, -5, -2, dtype=ms.int32), (I,),
     I + np.arange(3, -5, -2)),
    ("linspace", lambda x: x + ops.linspace(-2, 3, 4), (A,), A + np.linspace(-2, 3, 4)),
    ("eye", lambda x: x + ops.eye(3, 4), (I.astype(np.float32),),
     I + np.eye(3, 4)),
    ("eye_square_int", lambda x: x * ops.eye(4, dtype=ms.int32), (I[:, :4].repeat(2, 0)[:4],),
     I[:, :4].repeat(2, 0)[:4] * np.eye(4, dtype=np.int32)),
    ("full", lambda x: x + ops.full((3, 4), 2.5), (A,), A + 2.5),
    ("full_tensor", lambda s: ops.full((2, 3), s), (np.float32(1.5),), np.full((2, 3), 1.5)),
    ("full_like", lambda x: ops.full_like(x, 7), (I,), np.full_like(I, 7)),
    ("meshgrid_xy", lambda a, b: ops.meshgrid(a, b), (V[:3], V[:5]),
     list(np.meshgrid(V[:3], V[:5]))),
    ("meshgrid_ij", lambda a, b, c: ops.meshgrid(a, b, c, indexing="ij"), (V[:2], V[:3], V[:4]),
     list(np.meshgrid(V[:2], V[:3], V[:4], indexing="ij"))),
    ("masked_fill", lambda x, m: ops.masked_fill(x, m, -1.0), (A, BOOLS),
     np.where(BOOLS, -1, A)),
    ("masked_fill_bcast_mask", lambda x, m: ops.masked_fill(x, m, 3), (I, MASK),
     np.where(MASK, 3, I)),
    ("masked_fill_tensor_value", lambda x, m, v: ops.masked_fill(x, m, v),
     (A[0], BOOLS, np.float32(-4)), np.where(BOOLS, -4, A[0])),
    ("masked_fill_bcast_out", lambda x, m: ops.masked_fill(x, m, 0.0), (V[:4], BOOLS),
     np.where(BOOLS, 0, V[:4])),
    ("tril", lambda x: ops.tril(x), (A,), np.tril(A)),
    ("tril_diag", lambda x: ops.tril(x, 1), (M,), np.tril(M, 1)),
    ("tril_beyond", lambda x: ops.tril(x, -9), (M,), np.tril(M, -9)),
    ("tril_int", lambda x: ops.tril(x, -1), (I,), np.tril(I, -1)),
    ("tril_bool", lambda x: ops.tril(x), (BOOLS,), np.tril(BOOLS)),
    ("triu", lambda x: ops.triu(x), (A,), np.triu(A)),
    ("triu_neg", lambda x: ops.triu(x, -2), (M,), np.triu(M, -2)),
    ("triu_beyond", lambda x: ops.triu(x, 7), (I,), np.triu(I, 7)),
    ("chunk_even", lambda x: ops.chunk(x, 2, -1), (A,), np.split(A, 2, -1)),
    ("chunk_uneven", lambda x: ops.chunk(x, 3), (V,), np_chunk(V, 3, 0)),
    ("chunk_fewer", lambda x: ops.chunk(x, 4, 0), (M,), np_chunk(M, 4, 0)),
    ("chunk_more_than_size", lambda x: ops.chunk(x, 9, 1), (M,), np_chunk(M, 9, 1)),
    ("narrow", lambda x: ops.narrow(x, 1, 1, 2), (A,), A[:, 1:3]),
    ("narrow_neg", lambda x: ops.narrow(x, -1, -3, 3), (A,), A[..., 1:]),
    ("narrow_empty", lambda x: ops.narrow(x, 0, 5, 0), (M,), M[5:5]),
    ("index_select", lambda x, i: ops.index_select(x, 1, i), (A, np.array([2, 0, 2], np.int32)),
     A[:, [2, 0, 2]]),
    ("index_select_neg", lambda x, i: ops.index_select(x, -1, i), (I, np.array([3, 1], np.int64)),
     I[:, [3, 1]]),
    ("repeat_interleave", lambda x: ops.repeat_interleave(x, 2, 1), (A,), np.repeat(A, 2, 1)),
    ("repeat_interleave_flat", lambda x: ops.repeat_interleave(x, 3), (I,),
     np_repeat_flat(I, 3)),
    ("repeat_interleave_list", lambda x: ops.repeat_interleave(x, [1, 0, 2, 1], -1), (I,),
     np.repeat(I, [1, 0, 2, 1], -1)),
    ("repeat_interleave_zero", lambda x: ops.repeat_interleave(x, 0, 0), (M,), M[:0]),
    ("flip", lambda x: ops.flip(x, (0, 2)), (A,), np.flip(A, (0, 2))),
    ("flip_neg", lambda x: ops.flip(x, [-1]), (I,), np.flip(I, -1)),
    ("roll", lambda x: ops.roll(x, 2, 1), (A,), np.roll(A, 2, 1)),
    ("roll_multi", lambda x: ops.roll(x, (-1, 5), (0, -1)), (A,), np.roll(A, (-1, 5), (0, -1))),
    ("roll_flat", lambda x: ops.roll(x, 3), (M,), np.roll(M, 3)),
    ("pad_constant", lambda x: ops.pad(x, (1, 2)), (A,), np.pad(A, ((0, 0), (0, 0), (1, 2)))),
    ("pad_constant_value", lambda x: ops.pad(x, (0, 1, 2, 0, 1, 1), value=-3.0), (A,),
     np.pad(A, ((1, 1), (2, 0), (0, 1)), constant_values=-3)),
    ("pad_crop", lambda x: ops.pad(x, (-1, 2, 1, -2)), (A,),
     np.pad(A[:, :1, 1:], ((0, 0), (1, 0), (0, 2)))),
    ("pad_int", lambda x: ops.pad(x, (2, 1), value=7), (I,),
     np.pad(I, ((0, 0), (2, 1)), constant_values=7)),
    ("pad_reflect", lambda x: ops.pad(x, (3, 2, 1, 2), "reflect"), (A,),
     np.pad(A, ((0, 0), (1, 2), (3, 2)), "reflect")),
    ("pad_replicate", lambda x: ops.pad(x, (2, 3, 1, 0), "replicate"), (A,),
     np.pad(A, ((0, 0), (1, 0), (2, 3)), "edge")),
    ("pad_circular", lambda x: ops.pad(x, (4, 1), "circular"), (A,),
     np.pad(A, ((0, 0), (0, 0), (4, 1)), "wrap")),
    ("pad_empty_dim", lambda x: ops.pad(x, (1, 1, 2, 0)), (E,), np.pad(E, ((2, 0), (1, 1)))),
]


def eager_and_compiled(fn, inputs):
    """fn's results on Tensors of `inputs`, called eagerly and inside a compiled Cell."""
    return _both(fn, *[Tensor(np.asarray(x)) for x in inputs])


def _same(out, want):
    outs = list(out) if isinstance(out, tuple) else [out]
    wants = want if isinstance(want, list) else [want]
    assert len(outs) == len(wants)
    for o, w in zip(outs, wants):
        assert o.shape == np.shape(w)
        np.testing.assert_allclose(o.asnumpy(), w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,fn,inputs,want", FORMS, ids=[f[0] for f in FORMS])
def test_form_matches_numpy_eager_and_compiled(name, fn, inputs, want):
    for out in eager_and_compiled(fn, inputs):
        _same(out, want)


def test_dtypes_follow_mindspore():
    assert ops.arange(3).dtype == ms.int64
    assert ops.arange(3.0).dtype == ms.float32
    assert ops.arange(0, 3, 1, dtype=ms.float16).dtype == ms.float16
    assert ops.linspace(0, 1, 3).dtype == ms.float32
    assert ops.eye(2).dtype == ms.float32
    assert ops.full((2,), 1).dtype == ms.int64
    assert ops.full((2,), True).dtype == ms.bool_
    assert ops.full((2,), 1, dtype=ms.float64).dtype == ms.float64
    assert ops.full_like(Tensor(A), 1).dtype == ms.float32
    assert ops.full_like(Tensor(A), 1, dtype=ms.int32).dtype == ms.int32
    half = Tensor(A.astype(np.float16))
    assert ops.masked_fill(half, Tensor(BOOLS), 1.0).dtype == ms.float16
    assert ops.pad(half, (1, 1)).dtype == ms.float16
    assert ops.tril(Tensor(A).astype(ms.bfloat16)).dtype == ms.bfloat16
    assert ops.arange(Tensor(np.int32(4))).shape == (4,)
    assert ops.repeat_interleave(Tensor(V[:3]), Tensor(np.array([2, 0, 1]))).shape == (3,)


X64 = RNG.standard_normal((3, 4))
W64 = RNG.standard_normal((3, 4))       # weights the output so each element's gradient differs


@pytest.mark.parametrize("fn", [
    lambda x: ops.masked_fill(x, Tensor(BOOLS), 2.0),
    lambda x: ops.tril(x, 1), lambda x: ops.triu(x, -1),
    lambda x: ops.pad(x, (1, 2, 1, 0)), lambda x: ops.pad(x, (-1, 2, 0, -1), value=1.0),
    lambda x: ops.pad(x, (2, 1), "reflect"), lambda x: ops.pad(x, (1, 2, 2, 0), "replicate"),
    lambda x: ops.pad(x, (1, 3), "circular"),
    lambda x: ops.index_select(x, 1, Tensor(np.array([3, 0, 3], np.int32))),
    lambda x: ops.repeat_interleave(x, 2, 0), lambda x: ops.flip(x, (0, 1)),
    lambda x: ops.roll(x, (1, -1), (0, 1)), lambda x: ops.narrow(x, 1, 1, 2),
    lambda x: ops.chunk(x, 3, 1)[1], lambda x: ops.full((2, 2), ops.sum(x)),
], ids=["masked_fill", "tril", "triu", "pad", "pad_crop", "pad_reflect", "pad_replicate",
        "pad_circular", "index_select", "repeat_interleave", "flip", "roll", "narrow",
        "chunk", "full_tensor"])
def test_gradients_match_finite_differences(fn):
    def weighted(x):
        out = fn(x)
        w = Tensor(np.resize(W64, out.shape))
        return out * w

    grad = ms.grad(lambda x: ops.ReduceSum()(weighted(x), ()))(Tensor(X64))
    want = finite_differences(lambda a: weighted(Tensor(a)).asnumpy(), X64)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-8)


def test_masked_fill_tensor_value_gets_the_masked_gradient():
    grad = ms.grad(lambda v: ops.ReduceSum()(ops.masked_fill(Tensor(X64), Tensor(BOOLS), v),
                                            ()))(Tensor(np.float64(0.5)))
    assert grad.asnumpy() == BOOLS.sum()


@pytest.mark.parametrize("make,err,match", [
    (lambda: ops.arange(0, 3, 0), ValueError, r"For 'arange', the 'step' should not be 0"),
    (lambda: ops.arange(3, 0, 1), ValueError, r"For 'arange', the 'step' should go from"),
    (lambda: ops.arange("3"), TypeError, r"For 'arange', the 'start' should be a number"),
    (lambda: ops.linspace(0, 1, 0), ValueError, r"For 'linspace', the 'steps' should be a posi"),
    (lambda: ops.eye(-1), ValueError, r"For 'eye', the 'n' should be an int >= 0"),
    (lambda: ops.full((2, -1), 1), TypeError, r"For 'full', the 'size' should be"),
    (lambda: ops.full((2,), "a"), TypeError, r"For 'full', the 'fill_value' should be"),
    (lambda: ops.meshgrid(Tensor(V), Tensor(M)), ValueError,
     r"For 'meshgrid', every input should be a 1-D Tensor, but input 1 is shape \[5, 3\]"),
    (lambda: ops.meshgrid(Tensor(V), Tensor(V), indexing="xx"), ValueError,
     r"For 'meshgrid', the 'indexing' should be 'xy' or 'ij'"),
    (lambda: ops.masked_fill(Tensor(A), Tensor(I), 1.0), TypeError,
     r"For 'masked_fill', the 'mask' should be a bool Tensor, but got Int32"),
    (lambda: ops.masked_fill(Tensor(A), Tensor(BOOLS), Tensor(V)), ValueError,
     r"For 'masked_fill', the 'value' should be a number or a 0-d Tensor"),
    (lambda: ops.masked_fill(Tensor(A), Tensor(BOOLS[:2]), 1.0), ValueError,
     r"For 'masked_fill', the 'mask' shape \[2, 4\] should broadcast with the 'input_x' shape"),
    (lambda: ops.tril(Tensor(V)), ValueError, r"For 'tril', the 'input' should have rank >= 2"),
    (lambda: ops.triu(Tensor(M), 1.5), TypeError, r"For 'triu', the 'diagonal' should be an int"),
    (lambda: ops.chunk(Tensor(M), 0), ValueError, r"For 'chunk', the 'chunks' should be a posi"),
    (lambda: ops.chunk(Tensor(M), 2, 2), ValueError, r"For 'chunk', the 'axis' should be in"),
    (lambda: ops.narrow(Tensor(M), 0, 3, 3), ValueError, r"For 'narrow', the 'length' should be"),
    (lambda: ops.narrow(Tensor(M), 0, 6, 0), ValueError, r"For 'narrow', the 'start' should be"),
    (lambda: ops.index_select(Tensor(M), 0, Tensor(np.array([[0]], np.int32))), ValueError,
     r"For 'index_select', the 'index' should be 1-D"),
    (lambda: ops.index_select(Tensor(M), 0, Tensor(np.array([0.0]))), TypeError,
     r"For 'index_select', the 'index' should be an int32 or int64"),
    (lambda: ops.repeat_interleave(Tensor(M), [1, 2], 0), ValueError,
     r"For 'repeat_interleave', the 'repeats' should hold 1 or 5"),
    (lambda: ops.repeat_interleave(Tensor(M), -1), ValueError,
     r"For 'repeat_interleave', the 'repeats' should be >= 0"),
    (lambda: ops.flip(Tensor(M), (0, -2)), ValueError, r"For 'flip', the 'dims' should not rep"),
    (lambda: ops.roll(Tensor(M), (1, 2), 0), ValueError, r"For 'roll', the 'shifts' should hold"),
    (lambda: ops.pad(Tensor(M), (1,)), ValueError, r"For 'pad', the length of 'padding' should"),
    (lambda: ops.pad(Tensor(V), (1, 1, 1, 1)), ValueError, r"For 'pad', the 'padding' should pad"),
    (lambda: ops.pad(Tensor(M), (1, 1), "edge"), ValueError, r"For 'pad', the 'mode' should be"),
    (lambda: ops.pad(Tensor(M), (1, 1), "reflect", 0.0), ValueError,
     r"For 'pad', the 'value' should be None unless"),
    (lambda: ops.pad(Tensor(M), (3, 0), "reflect"), ValueError,
     r"For 'pad', a 'reflect' padding should be smaller than the size 3"),
    (lambda: ops.pad(Tensor(M), (-2, -2)), ValueError, r"For 'pad', the padding \(-2, -2\)"),
])
def test_argument_errors_name_the_function_and_argument(make, err, match):
    with pytest.raises(err, match=match):
        make()


def test_tensor_repeats_inside_a_compiled_graph_is_refused_clearly():
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with pytest.raises(Exception, match=r"For 'repeat_interleave', the 'repeats' should be "
                                            r"an int, a list of ints or a Tensor whose values"):
            Call(lambda x, r: ops.repeat_interleave(x, r, 0))(
                Tensor(V[:3]), Tensor(np.array([1, 2, 0])))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
