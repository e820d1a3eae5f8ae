"""ops.moe_token_permute / ops.moe_token_unpermute against a numpy loop written here, their
gradients against finite differences of that loop, eager, in a compiled Cell and in ms.jit."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from numeric import finite_differences
from test_vmap import eager_and_compiled

RNG = np.random.default_rng(7)
TOKENS = RNG.standard_normal((6, 4)).astype(np.float32)
INDICES = np.array([[2, 0], [1, 2], [0, 0], [3, 1], [2, 2], [1, 0]], np.int32)
PROBS = RNG.uniform(0.1, 1.0, (6, 2)).astype(np.float32)


def permute_loop(tokens, indices, num_out=None):
    """Rows (token, choice) in order of expert, ties in (token, choice) order; the row of
    each (token, choice) in that order."""
    topk = indices.shape[1] if indices.ndim == 2 else 1
    flat = [(int(e), k) for k, e in enumerate(indices.reshape(-1))]
    order = [k for _, k in sorted(flat)]               # tuples: expert, then k
    where = np.empty(len(order), np.int32)
    for pos, k in enumerate(order):
        where[k] = pos
    keep = len(order) if num_out is None else min(num_out, len(order))
    return np.stack([tokens[k // topk] for k in order[:keep]]), where


def unpermute_loop(permuted, where, probs=None):
    topk = 1 if probs is None else probs.shape[1]
    out = np.zeros((len(where) // topk, permuted.shape[1]), np.float64)
    for k, pos in enumerate(where):
        row = permuted[pos] if pos < len(permuted) else 0
        out[k // topk] += row * (1 if probs is None else probs[k // topk, k % topk])
    return out


def three_ways(fn, *arrays):
    """fn's results on Tensors of `arrays`, named: eager, in a compiled Cell, in ms.jit."""
    return zip(("eager", "graph", "jit"), eager_and_compiled(fn, *arrays))


@pytest.mark.parametrize("num_out", [None, 12, 7, 0])
def test_permute_groups_rows_by_expert(num_out):
    want, where = permute_loop(TOKENS, INDICES, num_out) if num_out != 0 else \
        (np.zeros((0, 4), np.float32), permute_loop(TOKENS, INDICES)[1])
    for how, (got, got_where) in three_ways(
            lambda t, i: ops.moe_token_permute(t, i, num_out_tokens=num_out), TOKENS, INDICES):
        assert got.shape == want.shape and got.dtype == ms.float32, how
        np.testing.assert_array_equal(got.asnumpy(), want, err_msg=how)
        assert got_where.dtype == ms.int32, how
        np.testing.assert_array_equal(got_where.asnumpy(), where, err_msg=how)


def test_permute_of_one_expert_per_token_and_int64_indices():
    idx = np.array([3, 1, 3, 0, 1, 2], np.int64)
    got, where = ops.moe_token_permute(Tensor(TOKENS), Tensor(idx))
    want, want_where = permute_loop(TOKENS, idx)
    np.testing.assert_array_equal(got.asnumpy(), want)
    np.testing.assert_array_equal(where.asnumpy(), want_where)


@pytest.mark.parametrize("num_out", [None, 7])
def test_unpermute_restores_and_weights(num_out):
    permuted, where = permute_loop(TOKENS, INDICES, num_out)
    for how, got in three_ways(lambda p, w, pr: ops.moe_token_unpermute(p, w, pr),
                               permuted, where, PROBS):
        assert got.shape == (6, 4) and got.dtype == ms.float32, how
        np.testing.assert_allclose(got.asnumpy(), unpermute_loop(permuted, where, PROBS),
                                   rtol=1e-6, atol=1e-6, err_msg=how)
    if num_out is None:      # permute then unpermute with probs summing to 1: the tokens
        half = np.full((6, 2), 0.5, np.float32)
        back = ops.moe_token_unpermute(*ops.moe_token_permute(Tensor(TOKENS), Tensor(INDICES)),
                                       Tensor(half))
        np.testing.assert_allclose(back.asnumpy(), TOKENS, rtol=1e-6)


def test_unpermute_without_probs_is_the_inverse_permutation():
    idx = np.array([3, 1, 3, 0, 1, 2], np.int32)
    permuted, where = permute_loop(TOKENS, idx)
    got = ops.moe_token_unpermute(Tensor(permuted), Tensor(where))
    np.testing.assert_array_equal(got.asnumpy(), TOKENS)


@pytest.mark.parametrize("dtype", [ms.float16, ms.bfloat16])
def test_half_dtypes_keep_their_dtype(dtype):
    t = TOKENS.astype(dtype.np_dtype)
    got, where = ops.moe_token_permute(Tensor(t), Tensor(INDICES))
    assert got.dtype == dtype
    back = ops.moe_token_unpermute(got, where, Tensor(PROBS))
    assert back.dtype == dtype
    want = unpermute_loop(*permute_loop(t.astype(np.float32), INDICES), PROBS)
    np.testing.assert_allclose(back.asnumpy().astype(np.float32), want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
def test_gradients_are_finite_differences_of_the_loop(mode):
    weights = RNG.standard_normal((6, 4))
    out_weights = RNG.standard_normal((7, 4))
    ms.set_context(mode=mode)
    try:
        def loss(tokens, probs):
            permuted, where = ops.moe_token_permute(tokens, Tensor(INDICES), num_out_tokens=7)
            mixed = ops.moe_token_unpermute(permuted * 3.0, where, probs)
            return (mixed * Tensor(weights.astype(np.float32))).sum() + \
                (permuted * Tensor(out_weights.astype(np.float32))).sum()
        d_tokens, d_probs = ms.grad(loss, grad_position=(0, 1))(Tensor(TOKENS), Tensor(PROBS))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)

    def np_loss(tokens, probs):
        permuted, where = permute_loop(tokens, INDICES, 7)
        return (unpermute_loop(3.0 * permuted, where, probs) * weights).sum() + \
            (permuted * out_weights).sum()
    t64, p64 = TOKENS.astype(np.float64), PROBS.astype(np.float64)
    np.testing.assert_allclose(d_tokens.asnumpy(), finite_differences(
        lambda t: np_loss(t, p64), t64), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(d_probs.asnumpy(), finite_differences(
        lambda p: np_loss(t64, p), p64), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("call,error,text", [
    (lambda: ops.moe_token_permute(TOKENS, Tensor(INDICES)), TypeError,
     "For 'moe_token_permute', the 'tokens'"),
    (lambda: ops.moe_token_permute(Tensor(TOKENS), Tensor(INDICES.astype(np.float32))),
     TypeError, "For 'moe_token_permute', the 'indices'"),
    (lambda: ops.moe_token_permute(Tensor(TOKENS.astype(np.float64)), Tensor(INDICES)),
     TypeError, "For 'moe_token_permute', the 'tokens'"),
    (lambda: ops.moe_token_permute(Tensor(TOKENS[0]), Tensor(INDICES)), ValueError,
     "should be 2-D"),
    (lambda: ops.moe_token_permute(Tensor(TOKENS), Tensor(INDICES[:5])), ValueError,
     "the 'indices' dim 0 should be the number of tokens 6, but got 5"),
    (lambda: ops.moe_token_permute(Tensor(TOKENS), Tensor(np.zeros((6, 513), np.int32))),
     ValueError, "topk\\) should be <= 512, but got 513"),
    (lambda: ops.moe_token_permute(Tensor(TOKENS), Tensor(INDICES), num_out_tokens=-1),
     ValueError, "'num_out_tokens' should be >= 0"),
    (lambda: ops.moe_token_permute(Tensor(TOKENS), Tensor(INDICES), num_out_tokens=2.0),
     TypeError, "num_out_tokens"),
    (lambda: ops.moe_token_permute(Tensor(TOKENS), Tensor(INDICES), padded_mode=True),
     ValueError, "For 'moe_token_permute', the 'padded_mode' should be False"),
    (lambda: ops.moe_token_unpermute(Tensor(TOKENS), Tensor(np.arange(6, dtype=np.int64))),
     TypeError, "For 'moe_token_unpermute', the 'sorted_indices'"),
    (lambda: ops.moe_token_unpermute(Tensor(TOKENS), Tensor(np.arange(12, dtype=np.int32)),
                                     Tensor(np.ones((6, 3), np.float32))),
     ValueError, "the 'probs' should be 2-D \\(num_tokens, topk\\) with num_tokens \\* topk = "
                 "12"),
    (lambda: ops.moe_token_unpermute(Tensor(TOKENS), Tensor(np.arange(6, dtype=np.int32)),
                                     padded_mode=True),
     ValueError, "For 'moe_token_unpermute', the 'padded_mode' should be False"),
])
def test_errors_name_the_function(call, error, text):
    with pytest.raises(error, match=text):
        call()
