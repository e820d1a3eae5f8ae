"""The random draws of ops.normal, laplace, standard_laplace, gamma, random_gamma, poisson,
random_poisson, multinomial, multinomial_with_replacement, random_categorical, shuffle and
choice_with_mask: shapes and dtypes; each distribution's mean and variance against its
formula, the tolerance 6 standard errors of the sample size; the gamma and Laplace CDFs by
a Kolmogorov-Smirnov distance; category frequencies by a chi-square bound; determinism
(same global seed and op seed -> same numbers, eagerly and compiled; each call new ones)."""
import math

import numpy as np
import pytest
from scipy import stats

import msops as ms
from msops import Tensor, ops
from compiled import compiled

M = 20000          # draws per moment check


def f32(x):
    return Tensor(np.asarray(x, np.float32))


def check_moments(x, mean, var, kurtosis_excess):
    """The sample mean and variance of x against mean and var: 6 standard errors, the
    variance's from the fourth moment (var**2 (kurtosis_excess + 2) / n)."""
    n = x.size
    assert abs(x.mean() - mean) < 6 * math.sqrt(var / n), (x.mean(), mean)
    se_var = math.sqrt(var ** 2 * (kurtosis_excess + 2) / n)
    assert abs(x.var() - var) < 6 * se_var, (x.var(), var)


def ks_distance_bound(n):
    """The Kolmogorov-Smirnov distance a correct sampler exceeds with probability ~1e-6."""
    return math.sqrt(-0.5 * math.log(1e-6 / 2) / n)


def test_normal_moments_shape_and_broadcast():
    ms.set_seed(1)
    out = ops.normal((M, 1), f32([[-2.0, 3.0]]), f32([0.5, 2.0]), seed=4)
    assert out.shape == (M, 2) and out.dtype == ms.float32
    x = out.asnumpy().astype(np.float64)
    check_moments(x[:, 0], -2.0, 0.25, 0.0)
    check_moments(x[:, 1], 3.0, 4.0, 0.0)


def test_laplace_and_standard_laplace():
    ms.set_seed(2)
    x = ops.laplace((M,), f32(1.5), f32(0.5), seed=7).asnumpy().astype(np.float64)
    check_moments(x, 1.5, 2 * 0.25, 3.0)
    d = stats.kstest(x, stats.laplace(1.5, 0.5).cdf).statistic
    assert d < ks_distance_bound(M)
    z = ops.standard_laplace((M // 2, 2)).asnumpy().astype(np.float64)
    assert z.dtype == np.float64 and z.shape == (M // 2, 2)
    check_moments(z.ravel(), 0.0, 2.0, 3.0)
    assert np.isfinite(z).all()


@pytest.mark.parametrize("alpha,beta", [(0.3, 1.0), (2.5, 4.0), (40.0, 0.5)])
def test_gamma_moments_and_cdf(alpha, beta):
    ms.set_seed(3)
    out = ops.gamma((M,), f32(alpha), f32(beta), seed=1)
    assert out.dtype == ms.float32
    x = out.asnumpy().astype(np.float64)
    assert (x >= 0).all()
    check_moments(x, alpha / beta, alpha / beta ** 2, 6 / alpha)
    assert stats.kstest(x, stats.gamma(alpha, scale=1 / beta).cdf).statistic < \
        ks_distance_bound(M)


def test_gamma_and_random_gamma_shapes():
    alpha = f32([[3, 4], [5, 6]])
    assert ops.gamma((3, 1, 2), alpha, f32([1.0]), seed=3).shape == (3, 2, 2)
    g = ops.random_gamma((M // 4,), Tensor(np.array([0.5, 7.0])), seed=2)
    assert g.shape == (M // 4, 2) and g.dtype == ms.float64
    x = g.asnumpy()
    check_moments(x[:, 0], 0.5, 0.5, 12.0)
    check_moments(x[:, 1], 7.0, 7.0, 6 / 7)


@pytest.mark.parametrize("mean", [0.4, 6.0, 250.0])
def test_poisson_moments_and_support(mean):
    ms.set_seed(4)
    out = ops.poisson((M, 1), f32([mean]), seed=5)
    assert out.shape == (M, 1) and out.dtype == ms.float32
    x = out.asnumpy().astype(np.float64).ravel()
    assert (x == np.round(x)).all() and (x >= 0).all()
    check_moments(x, mean, mean, 1 / mean)
    # the frequency of each of the most likely counts: 6 binomial standard errors
    for k in np.unique(x)[:5]:
        p = stats.poisson.pmf(k, mean)
        assert abs((x == k).mean() - p) < 6 * math.sqrt(p * (1 - p) / M) + 1e-12


def test_random_poisson_shape_and_dtypes():
    shape = Tensor(np.array([2, 2], np.int64))
    out = ops.random_poisson(shape, Tensor(np.array([[5.0, 10.0], [5.0, 1.0]], np.float32)),
                             seed=5, dtype=ms.float64)
    assert out.shape == (2, 2, 2, 2) and out.dtype == ms.float64
    ints = ops.random_poisson((M,), Tensor(np.array(3.0)), seed=1, dtype=ms.int64)
    assert ints.dtype == ms.int64
    check_moments(ints.asnumpy().astype(np.float64), 3.0, 3.0, 1 / 3)


def chi_square_ok(counts, probs):
    """Pearson's statistic below the chi-square quantile at 1 - 1e-6."""
    n = counts.sum()
    keep = probs > 0
    assert counts[~keep].sum() == 0
    expected = n * probs[keep]
    stat = ((counts[keep] - expected) ** 2 / expected).sum()
    assert stat < stats.chi2.ppf(1 - 1e-6, keep.sum() - 1), stat


def test_multinomial_with_replacement_frequencies():
    w = np.array([[0.0, 3.0, 1.0, 6.0], [1.0, 1.0, 0.0, 2.0]], np.float32)
    out = ops.multinomial(Tensor(w), M, seed=3)
    assert out.shape == (2, M) and out.dtype == ms.int32
    for row, weights in zip(out.asnumpy(), w):
        chi_square_ok(np.bincount(row, minlength=4), weights / weights.sum())
    flat = ops.multinomial(Tensor(w[0]), 7, seed=3)
    assert flat.shape == (7,)


def test_multinomial_without_replacement():
    w = np.array([0.0, 5.0, 1.0, 2.0, 2.0], np.float32)
    draws = ops.multinomial(Tensor(np.tile(w, (M // 4, 1))), 4, replacement=False,
                            seed=9).asnumpy()
    assert all(len(set(r)) == 4 for r in draws)
    assert (draws != 0).all()                        # weight 0 is never drawn while others remain
    # the first draw of each row follows the weights; the second the renormalised rest
    chi_square_ok(np.bincount(draws[:, 0], minlength=5), w / w.sum())
    second = draws[draws[:, 0] == 1, 1]
    rest = w.copy()
    rest[1] = 0
    chi_square_ok(np.bincount(second, minlength=5), rest / rest.sum())
    with pytest.raises(ValueError, match="the 'num_samples' should be at most the 5"):
        ops.multinomial(Tensor(w), 6, replacement=False)


def test_multinomial_with_replacement_function_and_random_categorical():
    w = np.array([[2.0, 1.0, 1.0]], np.float32)
    out = ops.multinomial_with_replacement(Tensor(w), 5, 1, M, True)
    assert out.dtype == ms.int64 and out.shape == (1, M)
    chi_square_ok(np.bincount(out.asnumpy()[0], minlength=3), w[0] / w.sum())
    other = ops.multinomial_with_replacement(Tensor(w), 5, 2, M, True).asnumpy()
    assert (other != out.asnumpy()).any()            # the offset keys a different draw
    logits = np.array([[0.0, 1.0, -1.0, 2.0]], np.float32)
    cat = ops.random_categorical(Tensor(logits), M, seed=2, dtype=ms.int32)
    assert cat.dtype == ms.int32 and cat.shape == (1, M)
    p = np.exp(logits[0]) / np.exp(logits[0]).sum()
    chi_square_ok(np.bincount(cat.asnumpy()[0], minlength=4), p)


def test_shuffle_is_a_permutation_of_rows():
    x = np.arange(40).reshape(20, 2)
    out = ops.shuffle(Tensor(x), seed=1).asnumpy()
    assert sorted(map(tuple, out)) == sorted(map(tuple, x))
    assert (out != x).any()
    # every position takes every row about equally often
    ms.set_seed(8)
    firsts = [int(ops.shuffle(Tensor(np.arange(4)), seed=1).asnumpy()[0]) for _ in range(800)]
    chi_square_ok(np.bincount(firsts, minlength=4), np.full(4, 0.25))


def test_choice_with_mask_picks_true_positions():
    rng = np.random.default_rng(3)
    x = rng.random((3, 4, 2)) < 0.4
    trues = set(map(tuple, np.argwhere(x)))
    index, mask = ops.choice_with_mask(Tensor(x), 30, seed=2)
    assert index.dtype == ms.int32 and index.shape == (30, 3) and mask.shape == (30,)
    idx, m = index.asnumpy(), mask.asnumpy()
    assert m.sum() == len(trues) and m[:len(trues)].all()
    assert set(map(tuple, idx[m])) == trues
    assert (idx[~m] == 0).all()
    few_index, few_mask = ops.choice_with_mask(Tensor(x), 3, seed=2)
    assert few_mask.asnumpy().all() and set(map(tuple, few_index.asnumpy())) <= trues
    # the first pick is uniform over the True positions
    ms.set_seed(0)
    line = np.array([True, False, True, True, False, True])
    picks = [int(ops.choice_with_mask(Tensor(line), 1)[0].asnumpy()[0, 0]) for _ in range(800)]
    chi_square_ok(np.bincount(picks, minlength=6), line / line.sum())


DRAWS = [
    lambda: ops.normal((3, 4), f32(0.0), f32(1.0), seed=3),
    lambda: ops.laplace((5,), f32(0.0), f32(1.0)),
    lambda: ops.standard_laplace((2, 3), seed=1),
    lambda: ops.gamma((4,), f32(2.0), f32(1.0), seed=2),
    lambda: ops.random_gamma((3,), f32([1.0, 2.0])),
    lambda: ops.poisson((4,), f32(3.0)),
    lambda: ops.random_poisson((3,), f32(2.0), dtype=ms.int32),
    lambda: ops.multinomial(f32([[1.0, 2.0, 3.0]]), 4),
    lambda: ops.multinomial(f32([1.0, 2.0, 3.0]), 3, False, seed=1),
    lambda: ops.multinomial_with_replacement(f32([1.0, 2.0]), 1, 0, 5, True),
    lambda: ops.random_categorical(f32([[0.0, 1.0]]), 5),
    lambda: ops.shuffle(Tensor(np.arange(6)), seed=2),
    lambda: ops.choice_with_mask(Tensor(np.array([True, True, False, True])), 3)[0],
]


@pytest.mark.parametrize("draw", DRAWS, ids=range(len(DRAWS)))
def test_seeded_draws_repeat_eagerly_and_compiled(draw):
    ms.set_seed(12)
    first, second = draw().asnumpy(), draw().asnumpy()
    ms.set_seed(12)
    again = draw().asnumpy()
    ms.set_seed(12)
    in_graph = compiled(draw).asnumpy()
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, in_graph)
    ms.set_seed(13)
    other_seed = draw().asnumpy()
    # a later call, or another global seed, draws anew (a size-1 choice may repeat by chance)
    assert (second != first).any() or (other_seed != first).any()


def test_errors():
    with pytest.raises(TypeError, match="For 'gamma', the 'shape' should be a tuple"):
        ops.gamma([2, 0], f32(1.0), f32(1.0))
    with pytest.raises(ValueError, match="For 'normal', the 'shape' .* should broadcast"):
        ops.normal((3,), f32([1.0, 2.0]), f32(1.0))
    with pytest.raises(TypeError, match="For 'choice_with_mask', the 'input_x'"):
        ops.choice_with_mask(f32([1.0]))
    with pytest.raises(ValueError, match="For 'random_categorical', the 'logits' should be 2-D"):
        ops.random_categorical(f32([1.0]), 2)
    with pytest.raises(TypeError, match="For 'laplace', the 'seed'"):
        ops.laplace((2,), 0.0, 1.0, seed=-1)
    with pytest.raises(ValueError, match="For 'shuffle', the 'x' should have rank >= 1"):
        ops.shuffle(f32(1.0))
