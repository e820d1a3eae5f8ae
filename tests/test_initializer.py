"""msops.common.initializer (MindSpore's module path; msops.nn re-exports it) and the
top-level `set_seed`: values against numpy drawn from the same seeded Generator."""
import sys

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn
from msops.common import initializer as init_module
from msops.common.initializer import (Constant, Normal, One, Uniform, Zero, initializer,
                                      set_seed)


def test_module_paths_and_spellings():
    assert ms.set_seed is set_seed is nn.set_seed
    assert nn.initializer is initializer
    # `msops.nn.initializer` is the function (as before); its module re-exports the classes
    nn_module = sys.modules["msops.nn.initializer"]
    assert nn_module.Normal is Normal and nn_module.One is One


@pytest.mark.parametrize("init,want", [
    (Normal(), lambda g: g.normal(0.0, 0.01, (3, 4))),
    (Normal(sigma=2.0, mean=1.0), lambda g: g.normal(1.0, 2.0, (3, 4))),
    ("normal", lambda g: g.normal(0.0, 0.01, (3, 4))),
    (Uniform(0.5), lambda g: g.uniform(-0.5, 0.5, (3, 4))),
    ("uniform", lambda g: g.uniform(-0.07, 0.07, (3, 4))),
    (One(), lambda g: np.ones((3, 4))), ("ones", lambda g: np.ones((3, 4))),
    (Zero(), lambda g: np.zeros((3, 4))), ("zeros", lambda g: np.zeros((3, 4))),
    (Constant(2.5), lambda g: np.full((3, 4), 2.5)), (2.5, lambda g: np.full((3, 4), 2.5)),
])
def test_initializers_follow_numpy(init, want):
    ms.set_seed(5)
    got = initializer(init, (3, 4), ms.float64)
    assert isinstance(got, Tensor) and got.dtype == ms.float64
    np.testing.assert_array_equal(got.asnumpy(), want(np.random.default_rng(5)))


def test_set_seed_repeats_a_dense_layers_weights():
    ms.set_seed(11)
    a = nn.Dense(3, 2, weight_init=Normal(0.1)).weight.asnumpy()
    ms.set_seed(11)
    b = nn.Dense(3, 2, weight_init=Normal(0.1)).weight.asnumpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, np.random.default_rng(11).normal(0, 0.1, (2, 3)), rtol=1e-6)


def test_initializer_errors():
    with pytest.raises(ValueError, match=r"For 'Dense', the 'weight_init' should be a Tensor, "
                                         r"a numpy array, a number, an Initializer or one of "
                                         r"\['dirac', .*'xavier_uniform', .*\], but got "
                                         r"'xavier'"):
        nn.Dense(3, 2, weight_init="xavier")
    assert repr(Normal(0.5)) == "Normal(sigma=0.5, mean=0.0)"
    assert init_module.__all__[:2] == ["initializer", "set_seed"]


# -- the fan-scaled and structured initializers: statistics of large draws, against the
# -- formulas (Glorot, He, a truncated normal's variance) worked out here
from msops.common.initializer import (Dirac, HeNormal, HeUniform, Identity,  # noqa: E402
                                      Orthogonal, TruncatedNormal, VarianceScaling,
                                      XavierNormal, XavierUniform, calculate_gain)

SHAPE = (300, 100, 2, 2)                       # fan_in 400, fan_out 1200: 120,000 values


def _truncated_std(sigma, a, b):
    """The standard deviation of N(0, sigma**2) restricted to [a, b] (closed form)."""
    pdf = lambda z: np.exp(-z * z / 2) / np.sqrt(2 * np.pi)            # noqa: E731
    cdf = lambda z: 0.5 * (1 + np.vectorize(__import__("math").erf)(z / np.sqrt(2)))  # noqa
    al, be = a / sigma, b / sigma
    mass = cdf(be) - cdf(al)
    mean = (pdf(al) - pdf(be)) / mass
    return sigma * np.sqrt(1 + (al * pdf(al) - be * pdf(be)) / mass - mean ** 2)


@pytest.mark.parametrize("init,kind,scale", [
    (XavierUniform(), "uniform", np.sqrt(6 / 1600)),
    (XavierUniform(gain=2), "uniform", 2 * np.sqrt(6 / 1600)),
    ("xavier_uniform", "uniform", np.sqrt(6 / 1600)),
    (XavierNormal(), "normal", np.sqrt(2 / 1600)),
    (HeUniform(), "uniform", np.sqrt(2) * np.sqrt(3 / 400)),          # leaky_relu slope 0
    (HeUniform(np.sqrt(5)), "uniform", np.sqrt(2 / 6) * np.sqrt(3 / 400)),
    (HeUniform(mode="fan_out", nonlinearity="relu"), "uniform", np.sqrt(2) * np.sqrt(3 / 1200)),
    ("he_normal", "normal", np.sqrt(2) / np.sqrt(400)),
    (HeNormal(nonlinearity="tanh"), "normal", 5 / 3 / np.sqrt(400)),
    (VarianceScaling(2.0, "fan_avg", "uniform"), "uniform", np.sqrt(3 * 2.0 / 800)),
    (VarianceScaling(mode="fan_out", distribution="untruncated_normal"), "normal",
     np.sqrt(1 / 1200)),
    (VarianceScaling(), "normal", np.sqrt(1 / 400)),     # truncated, variance kept
])
def test_fan_scaled_initializers_have_their_formulas_spread(init, kind, scale):
    v = initializer(init, SHAPE, ms.float64).asnumpy()
    assert abs(v.mean()) < 0.02 * scale * 10
    if kind == "uniform":                       # U(-b, b): every |v| <= b, std b / sqrt(3)
        assert np.abs(v).max() <= scale and np.abs(v).max() > 0.999 * scale
        np.testing.assert_allclose(v.std(), scale / np.sqrt(3), rtol=0.02)
    else:
        np.testing.assert_allclose(v.std(), scale, rtol=0.02)


def test_truncated_normal_stays_in_its_bounds_with_the_truncated_spread():
    v = initializer(TruncatedNormal(sigma=1.0, mean=0.0, a=-0.5, b=1.5), (200, 300),
                    ms.float64).asnumpy()
    assert v.min() >= -0.5 and v.max() <= 1.5 and v.min() < -0.49 and v.max() > 1.49
    np.testing.assert_allclose(v.std(), _truncated_std(1.0, -0.5, 1.5), rtol=0.02)
    w = initializer("truncatedNormal", (100, 100), ms.float32).asnumpy()   # sigma 0.01
    assert np.abs(w).max() <= 2.0 and 0.009 < w.std() < 0.011 and w.dtype == np.float32


def test_structured_initializers():
    np.testing.assert_array_equal(initializer(Identity(), (3, 5), ms.float32).asnumpy(),
                                  np.eye(3, 5))
    for shape in [(4, 6), (6, 4), (3, 2, 2)]:
        q = initializer(Orthogonal(gain=2.0), shape, ms.float64).asnumpy().reshape(shape[0], -1)
        small = q @ q.T if q.shape[0] <= q.shape[1] else q.T @ q
        np.testing.assert_allclose(small, 4.0 * np.eye(len(small)), atol=1e-12)
    # a Dirac weight makes a 'same' convolution the identity on its channels
    x = np.random.default_rng(1).standard_normal((2, 3, 5, 5))
    w = initializer(Dirac(), (3, 3, 3, 3), ms.float64)
    y = ms.ops.Conv2D(3, 3, pad_mode="same")(Tensor(x), w).asnumpy()
    np.testing.assert_allclose(y, x, atol=1e-12)
    grouped = initializer(Dirac(groups=2), (4, 1, 3), ms.float32).asnumpy()
    assert grouped.sum() == 2 and grouped[0, 0, 1] == 1 and grouped[2, 0, 1] == 1


def test_calculate_gain_and_the_errors_name_the_initializer():
    assert calculate_gain("relu") == np.sqrt(2) and calculate_gain("tanh") == 5 / 3
    assert calculate_gain("leaky_relu") == np.sqrt(2 / (1 + 0.01 ** 2))
    assert calculate_gain("conv2d") == 1.0 and calculate_gain("selu") == 0.75
    cases = [
        (lambda: initializer(XavierUniform(), (5,)), r"For 'XavierUniform', 'fan_in' and "
         r"'fan_out' can not be computed for a tensor with fewer than 2 dimensions"),
        (lambda: initializer(HeNormal(mode="fan_mid"), (2, 2)), r"For 'HeNormal', the 'mode' "
         r"should be one of \['fan_in', 'fan_out', 'fan_avg'\], but got 'fan_mid'"),
        (lambda: calculate_gain("swish"), r"the 'nonlinearity' should be one of"),
        (lambda: initializer(TruncatedNormal(1.0, 0.0, 8.0, 9.0), (2,)),
         r"For 'TruncatedNormal', \[a, b\] = \[8.0, 9.0\] should hold a fair share"),
        (lambda: initializer(Identity(), (2, 2, 2)), r"For 'Identity', the shape should be 2-D"),
        (lambda: initializer(HeUniform(), (3, 0)), r"For 'HeUniform', the fan of shape \[3, 0\]"),
        (lambda: VarianceScaling(distribution="normal"), r"'distribution' should be one of"),
    ]
    for make, message in cases:
        with pytest.raises(ValueError, match=message):
            make()


def test_the_same_seed_draws_the_same_weights():
    set_seed(5)
    a = initializer("he_uniform", (4, 3)).asnumpy()
    b = initializer(TruncatedNormal(0.5), (4, 3)).asnumpy()
    set_seed(5)
    np.testing.assert_array_equal(initializer(HeUniform(), (4, 3)).asnumpy(), a)
    np.testing.assert_array_equal(initializer(TruncatedNormal(0.5), (4, 3)).asnumpy(), b)
