"""Learning-rate schedules (nn.*LR Cells) and lists (nn.*_lr): values against the formulas
written out in numpy / MindSpore's documented examples, 10 SGD steps with each schedule
against a numpy re-run of the update, every optimizer with a schedule, argument errors."""
import math

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn

STEPS = 10


def formula(kind: str, t: int) -> float:
    """The learning rate of step t, in float64, as MindSpore's code computes it."""
    if kind == "exponential":
        return 0.1 * 0.9 ** (t / 4)
    if kind == "exponential_stair":
        return 0.1 * 0.9 ** (t // 4)
    if kind == "natural_exp":
        return 0.1 * math.exp(-0.05 * t)
    if kind == "natural_exp_stair":
        return 0.1 * math.exp(-0.05 * (t // 4) * 4)
    if kind == "inverse":
        return 0.1 / (1 + 0.5 * t / 4)
    if kind == "cosine":
        return 0.01 + 0.5 * (0.1 - 0.01) * (1 + math.cos(math.pi * min(t, 6) / 6))
    if kind == "polynomial":
        return (0.1 - 0.01) * (1 - min(t, 6) / 6) ** 0.5 + 0.01
    if kind == "polynomial_update":
        d = 4 * max(math.ceil(t / 4), 1)
        return (0.1 - 0.01) * (1 - t / d) ** 2.0 + 0.01
    if kind == "warmup":
        return 0.1 * min(t, 5) / 5
    raise KeyError(kind)


SCHEDULES = {
    "exponential": lambda: nn.ExponentialDecayLR(0.1, 0.9, 4),
    "exponential_stair": lambda: nn.ExponentialDecayLR(0.1, 0.9, 4, is_stair=True),
    "natural_exp": lambda: nn.NaturalExpDecayLR(0.1, 0.05, 4),
    "natural_exp_stair": lambda: nn.NaturalExpDecayLR(0.1, 0.05, 4, True),
    "inverse": lambda: nn.InverseDecayLR(0.1, 0.5, 4),
    "cosine": lambda: nn.CosineDecayLR(0.01, 0.1, 6),
    "polynomial": lambda: nn.PolynomialDecayLR(0.1, 0.01, 6, 0.5),
    "polynomial_update": lambda: nn.PolynomialDecayLR(0.1, 0.01, 4, 2.0,
                                                      update_decay_steps=True),
    "warmup": lambda: nn.WarmUpLR(0.1, 5),
}

RNG = np.random.default_rng(15)
X = RNG.standard_normal((8, 3))
Y = RNG.standard_normal((8, 1))


def test_schedules_follow_their_formulas():
    """Every step (an int, or an int32 Tensor as MindSpore passes it) gives a 0-d float32
    Tensor equal to the formula."""
    for kind, make in SCHEDULES.items():
        schedule = make()
        assert isinstance(schedule, nn.LearningRateSchedule) and isinstance(schedule, nn.Cell)
        for t in range(14):
            lr = schedule(Tensor(np.array(t, np.int32)) if t % 2 else t)
            assert lr.shape == () and lr.dtype == ms.float32, kind
            np.testing.assert_allclose(lr.asnumpy(), formula(kind, t), rtol=2e-6,
                                       err_msg=f"{kind} at step {t}")


def test_schedules_run_eagerly_in_graph_mode():
    ms.set_context(mode=ms.GRAPH_MODE)
    schedule = nn.CosineDecayLR(0.01, 0.1, 6)
    np.testing.assert_allclose(schedule(3).asnumpy(), formula("cosine", 3), rtol=2e-6)
    assert len(schedule._compile_cache) == 0


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE])
@pytest.mark.parametrize("kind", sorted(SCHEDULES))
def test_sgd_steps_with_a_schedule_follow_numpy(kind, mode):
    """10 steps of SGD on a linear least-squares model; numpy does the same updates with
    the float64 formula."""
    ms.set_context(mode=mode)
    net = nn.Dense(3, 1, dtype=ms.float64)
    w, b = net.weight.asnumpy().copy(), net.bias.asnumpy().copy()
    opt = nn.SGD(net.trainable_params(), learning_rate=SCHEDULES[kind]())
    train = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    for t in range(STEPS):
        loss = train(Tensor(X), Tensor(Y)).asnumpy()
        err = X @ w.T + b - Y
        np.testing.assert_allclose(loss, (err ** 2).mean(), rtol=1e-6)  # lr is float32
        d = 2 * err / err.size
        lr = formula(kind, t)
        w, b = w - lr * (d.T @ X), b - lr * d.sum(0)
    np.testing.assert_allclose(net.weight.asnumpy(), w, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(net.bias.asnumpy(), b, rtol=1e-6, atol=1e-9)
    assert int(opt.global_step.asnumpy()[0]) == STEPS
    np.testing.assert_allclose(opt.get_lr(), formula(kind, STEPS), rtol=2e-6)


@pytest.mark.parametrize("make_opt", [
    lambda ps, lr: nn.SGD(ps, lr, momentum=0.9),
    lambda ps, lr: nn.Momentum(ps, lr, 0.9),
    lambda ps, lr: nn.Adam(ps, lr),
    lambda ps, lr: nn.AdamWeightDecay(ps, lr, weight_decay=0.01),
], ids=["SGD", "Momentum", "Adam", "AdamWeightDecay"])
def test_every_optimizer_takes_a_schedule(make_opt):
    """A schedule gives the same parameters as the list of its values (one rate a step)."""
    schedule = nn.PolynomialDecayLR(0.1, 0.01, 6, 0.5)
    rates = [float(schedule(t).asnumpy()) for t in range(STEPS)]
    finals = []
    for lr in (schedule, rates):
        ms.set_seed(1)
        net = nn.Dense(3, 1, dtype=ms.float64)
        train = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                    make_opt(net.trainable_params(), lr))
        for _ in range(STEPS):
            train(Tensor(X), Tensor(Y))
        finals.append(net.weight.asnumpy())
    np.testing.assert_array_equal(finals[0], finals[1])


def test_lists_follow_mindspore_examples():
    """The examples of MindSpore's docstrings."""
    assert nn.piecewise_constant_lr([2, 5, 10], [0.1, 0.05, 0.01]) == \
        [0.1, 0.1, 0.05, 0.05, 0.05, 0.01, 0.01, 0.01, 0.01, 0.01]
    np.testing.assert_allclose(nn.exponential_decay_lr(0.1, 0.9, 6, 2, 1),
                               [0.1, 0.1, 0.09, 0.09, 0.081, 0.081])
    np.testing.assert_allclose(nn.natural_exp_decay_lr(0.1, 0.9, 6, 2, 2, True),
                               [0.1, 0.1, 0.1, 0.1, 0.016529888822158657,
                                0.016529888822158657])
    np.testing.assert_allclose(nn.inverse_decay_lr(0.1, 0.5, 6, 1, 1, True),
                               [0.1, 0.1 / 1.5, 0.05, 0.04, 0.1 / 3, 0.1 / 3.5])
    np.testing.assert_allclose(nn.cosine_decay_lr(0.01, 0.1, 6, 2, 2),
                               [0.1, 0.1, 0.055, 0.055, 0.01, 0.01])
    np.testing.assert_allclose(nn.polynomial_decay_lr(0.1, 0.01, 6, 2, 2, 0.5),
                               [0.1, 0.1, 0.07363961030678928, 0.07363961030678928, 0.01, 0.01])
    np.testing.assert_allclose(nn.warmup_lr(0.1, 6, 2, 2), [0.0, 0.0, 0.05, 0.05, 0.1, 0.1])


def test_lists_follow_their_formulas():
    """Per epoch e = i // step_per_epoch, against the formulas (not-stair and updated forms)."""
    epochs = [i // 3 for i in range(20)]
    np.testing.assert_allclose(nn.exponential_decay_lr(0.2, 0.8, 20, 3, 2),
                               [0.2 * 0.8 ** (e / 2) for e in epochs])
    np.testing.assert_allclose(nn.natural_exp_decay_lr(0.2, 0.3, 20, 3, 2),
                               [0.2 * math.exp(-0.3 * e) for e in epochs])
    np.testing.assert_allclose(nn.inverse_decay_lr(0.2, 0.3, 20, 3, 2),
                               [0.2 / (1 + 0.3 * e / 2) for e in epochs])
    np.testing.assert_allclose(
        nn.polynomial_decay_lr(0.2, 0.02, 20, 3, 2, 2.0, update_decay_epoch=True),
        [0.18 * (1 - e / (2 * max(math.ceil(e / 2), 1))) ** 2 + 0.02 for e in epochs])
    np.testing.assert_allclose(nn.warmup_lr(0.2, 20, 3, 4), [0.2 * min(e, 4) / 4 for e in epochs])
    # a list drives an optimizer: rate i at step i
    rates = nn.cosine_decay_lr(0.01, 0.1, 5, 1, 4)
    opt = nn.SGD([ms.Parameter(Tensor(np.zeros(1)), name="p")], rates)
    seen = []
    for _ in range(5):
        seen.append(opt.get_lr())
        opt([Tensor(np.zeros(1))])
    assert seen == rates


@pytest.mark.parametrize("make, error, words", [
    (lambda: nn.ExponentialDecayLR(0.1, 0.9, 0), ValueError, "'decay_steps'"),
    (lambda: nn.ExponentialDecayLR(-0.1, 0.9, 4), ValueError, "'learning_rate'"),
    (lambda: nn.NaturalExpDecayLR(0.1, "0.9", 4), TypeError, "'decay_rate'"),
    (lambda: nn.InverseDecayLR(0.1, 0.9, 4, is_stair=1), TypeError, "'is_stair'"),
    (lambda: nn.CosineDecayLR(0.1, 0.1, 4), ValueError, "'max_lr' should be > 'min_lr'"),
    (lambda: nn.CosineDecayLR(-0.1, 0.1, 4), ValueError, "'min_lr'"),
    (lambda: nn.PolynomialDecayLR(0.1, 0.01, 4, 0.0), ValueError, "'power'"),
    (lambda: nn.WarmUpLR(0.1, 2.5), TypeError, "'warmup_steps'"),
    (lambda: nn.WarmUpLR(0.1, 4)(-1), ValueError, "'global_step' should be >= 0"),
    (lambda: nn.WarmUpLR(0.1, 4)(1.5), TypeError, "'global_step'"),
    (lambda: nn.piecewise_constant_lr([2, 1], [0.1, 0.2]), ValueError, "'milestone[1]'"),
    (lambda: nn.piecewise_constant_lr([2], [0.1, 0.2]), ValueError, "size of 'milestone'"),
    (lambda: nn.exponential_decay_lr(0.1, 0.9, 0, 1, 1), ValueError, "'total_step'"),
    (lambda: nn.cosine_decay_lr(0.2, 0.1, 4, 1, 1), ValueError, "'max_lr'"),
    (lambda: nn.polynomial_decay_lr(0.1, 0.01, 4, 1, 1, 1.0, update_decay_epoch=None),
     TypeError, "'update_decay_epoch'"),
    (lambda: nn.warmup_lr(0.1, 4, 1, 0), ValueError, "'warmup_epoch'"),
])
def test_schedule_errors_name_the_argument(make, error, words):
    with pytest.raises(error, match=f"For '.*', .*{__import__('re').escape(words)}"):
        make()
