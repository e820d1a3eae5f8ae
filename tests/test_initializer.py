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
                                         r"\['normal', 'ones', 'uniform', 'zeros'\], but got "
                                         r"'xavier'"):
        nn.Dense(3, 2, weight_init="xavier")
    assert repr(Normal(0.5)) == "Normal(sigma=0.5, mean=0.0)"
    assert init_module.__all__[:2] == ["initializer", "set_seed"]
