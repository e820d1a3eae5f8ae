"""ops.uniform_candidate_sampler and ops.log_uniform_candidate_sampler: sampled classes
follow the distribution (chi-square bounds), are distinct when unique and avoid the true
classes when asked; the expected counts follow TensorFlow's formulas (p * num_sampled when
every draw was kept, else 1 - (1 - p) ** tries for one tries shared by every class);
determinism eagerly and compiled; errors."""
import numpy as np
import pytest
from scipy import stats

import msops as ms
from msops import Tensor, ops
from compiled import compiled

TRUE = Tensor(np.array([[1, 3], [4, 6], [3, 0]], np.int64))


def log_uniform_p(k, range_max):
    k = np.asarray(k, np.float64)
    return (np.log(k + 2) - np.log(k + 1)) / np.log(range_max + 1)


def chi_square_ok(counts, probs):
    expected = counts.sum() * probs
    stat = ((counts - expected) ** 2 / expected).sum()
    assert stat < stats.chi2.ppf(1 - 1e-6, len(probs) - 1), stat


def test_uniform_with_replacement_frequencies_and_counts():
    ms.set_seed(3)
    sampled, true_count, sampled_count = ops.uniform_candidate_sampler(TRUE, 2, 20000, False, 10)
    assert sampled.dtype == ms.int64 and sampled.shape == (20000,)
    assert true_count.shape == (3, 2) and true_count.dtype == ms.float32
    chi_square_ok(np.bincount(sampled.asnumpy(), minlength=10), np.full(10, 0.1))
    np.testing.assert_allclose(true_count.asnumpy(), 2000.0)
    np.testing.assert_allclose(sampled_count.asnumpy(), 2000.0)


def solve_tries(count, p):
    """The number of draws t with 1 - (1 - p) ** t == count."""
    return np.log1p(-count) / np.log1p(-p)


@pytest.mark.parametrize("remove", [False, True])
def test_uniform_unique_distinct_avoiding_and_tries(remove):
    ms.set_seed(5)
    for _ in range(20):
        sampled, true_count, sampled_count = ops.uniform_candidate_sampler(
            TRUE, 2, 6, True, 12, remove_accidental_hits=remove)
        s = sampled.asnumpy()
        assert len(set(s.tolist())) == 6 and ((0 <= s) & (s < 12)).all()
        if remove:
            assert not set(s.tolist()) & {0, 1, 3, 4, 6}
        counts = np.concatenate([true_count.asnumpy().ravel(), sampled_count.asnumpy()])
        if np.allclose(counts, 6 / 12):           # every draw kept
            continue
        tries = solve_tries(counts.astype(np.float64), 1 / 12)
        np.testing.assert_allclose(tries, np.round(tries[0]), rtol=1e-4)
        assert np.round(tries[0]) > 6


def test_log_uniform_first_draw_follows_the_distribution_and_counts_agree():
    ms.set_seed(7)
    firsts = []
    for _ in range(1500):
        sampled, true_count, sampled_count = ops.log_uniform_candidate_sampler(
            TRUE, 2, 4, True, 12, seed=3)
        s = sampled.asnumpy()
        firsts.append(s[0])
        assert len(set(s.tolist())) == 4
        p_true = log_uniform_p(TRUE.asnumpy(), 12)
        p_s = log_uniform_p(s, 12)
        tc, sc = true_count.asnumpy().astype(np.float64), sampled_count.asnumpy()
        if np.allclose(sc, 4 * p_s, rtol=1e-5):                  # every draw kept
            np.testing.assert_allclose(tc, 4 * p_true, rtol=1e-5)
            continue
        tries = np.round(solve_tries(sc[0], p_s[0]))
        np.testing.assert_allclose(sc, -np.expm1(tries * np.log1p(-p_s)), rtol=1e-5)
        np.testing.assert_allclose(tc, -np.expm1(tries * np.log1p(-p_true)), rtol=1e-5)
    chi_square_ok(np.bincount(firsts, minlength=12), log_uniform_p(np.arange(12), 12))


def test_seeded_draws_repeat_eagerly_and_compiled():
    def draw(t):
        return ops.log_uniform_candidate_sampler(t, 2, 5, True, 30, seed=4)[0]
    ms.set_seed(11)
    first, second = draw(TRUE).asnumpy(), draw(TRUE).asnumpy()
    ms.set_seed(11)
    np.testing.assert_array_equal(draw(TRUE).asnumpy(), first)
    ms.set_seed(11)
    np.testing.assert_array_equal(compiled(draw, TRUE).asnumpy(), first)
    assert (second != first).any()


def test_errors():
    with pytest.raises(ValueError, match="For 'uniform_candidate_sampler', the 'num_sampled' "
                                         "should be at most 'range_max' 4"):
        ops.uniform_candidate_sampler(TRUE, 2, 5, True, 4)
    with pytest.raises(ValueError, match="For 'uniform_candidate_sampler', the 'true_classes' "
                                         "should be \\(batch_size, num_true\\)"):
        ops.uniform_candidate_sampler(TRUE, 1, 2, True, 9)
    with pytest.raises(ValueError, match="classes of range_max 7 are left to sample"):
        ops.uniform_candidate_sampler(TRUE, 2, 3, True, 7, remove_accidental_hits=True)
    with pytest.raises(TypeError, match="'true_classes'"):
        ops.log_uniform_candidate_sampler(Tensor(np.zeros((2, 1), np.float32)))
