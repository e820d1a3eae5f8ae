"""ASGD, Rprop and AdaFactor: several updates from given gradients (eager, and the
optimizer's compiled update in GRAPH_MODE) equal numpy re-implementations of MindSpore's
documented rules, with groups (own rates: a list and a schedule; own weight decay), the
loss scale and the state's names; a training step (compiled: the update traced into the
step's graph) equals the eager one and learns; bad arguments are refused by name."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn
from test_optimizers_train import data, net

STEPS = 5
SHAPES = {"w": (4, 3), "b": (3,), "conv.gamma": (2, 3, 2)}


def params():
    rng = np.random.default_rng(7)
    return [Parameter(Tensor(rng.standard_normal(s).astype(np.float32)), n)
            for n, s in SHAPES.items()]


def gradients():
    rng = np.random.default_rng(11)
    # each gradient's sign flips now and then (Rprop's three cases), some entries exact 0
    out = []
    for _ in range(STEPS):
        gs = [rng.standard_normal(s) * rng.choice([-1.0, 1.0, 0.0], size=s, p=[.3, .6, .1])
              for s in SHAPES.values()]
        out.append([g.astype(np.float32) for g in gs])
    return out


def run(make, mode):
    """`STEPS` updates of the optimizer `make(params)` from `gradients()`: the final
    parameters (float64) and the optimizer."""
    ms.set_context(mode=mode)
    try:
        ps = params()
        opt = make(ps)
        for gs in gradients():
            opt(tuple(Tensor(g) for g in gs))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    return [p.asnumpy().astype(np.float64) for p in ps], opt


def start():
    return [p.asnumpy().astype(np.float64) for p in params()]


def schedule(t):                                     # a callable of the global step
    return 0.05 / (1.0 + t)


LISTED = [0.04, 0.02, 0.01]                          # one per step, the last repeated


def lr_of(form, t):
    """The rate of 0-based step t for a learning-rate form."""
    if callable(form):
        return form(t)
    if isinstance(form, list):
        return form[min(t, len(form) - 1)]
    return form


# -- numpy rules (MindSpore's documented formulas) ---------------------------------------
def numpy_asgd(lrs, decays, lambd, alpha, t0):
    ps = start()
    eta = [None] * len(ps)
    mu = [1.0] * len(ps)
    ax = [np.zeros_like(p) for p in ps]
    for t, gs in enumerate(gradients(), start=1):
        for k, g in enumerate(gs):
            lr = lr_of(lrs[k], t - 1)
            if t == 1:
                eta[k] = lr
            g = g + decays[k] * ps[k]
            ps[k] = ps[k] * (1 - lambd * eta[k]) - eta[k] * g
            ax[k] = ax[k] + (ps[k] - ax[k]) * mu[k]
            eta[k] = lr / (1 + lambd * lr * t) ** alpha
            mu[k] = 1 / max(1.0, t - t0)
    return ps, ax


def numpy_rprop(lrs, decays, etas, sizes, loss_scale=1.0):
    ps = start()
    prev = [np.zeros_like(p) for p in ps]
    size = [np.zeros_like(p) for p in ps]
    for t, gs in enumerate(gradients(), start=1):
        for k, g in enumerate(gs):
            g = (g + decays[k] * ps[k]) / loss_scale
            if t == 1:
                size[k] = np.full_like(ps[k], lr_of(lrs[k], 0))
            prod = g * prev[k]
            f = np.where(prod > 0, etas[1], np.where(prod < 0, etas[0], 1.0))
            size[k] = np.clip(size[k] * f, sizes[0], sizes[1])
            g = np.where(prod < 0, 0.0, g)
            ps[k] = ps[k] - np.sign(g) * size[k]
            prev[k] = g
    return ps


def rms(x):
    return np.sqrt(np.mean(x * x))


def numpy_adafactor(lrs, decays, eps=(1e-30, 1e-3), clip=1.0, decay_rate=0.8, beta1=0.9,
                    scale_parameter=True, relative_step=True, warmup_init=False,
                    loss_scale=1.0):
    ps = start()
    m = [np.zeros_like(p) for p in ps]
    v = [np.zeros_like(p) for p in ps]
    row = [np.zeros(p.shape[:-1]) for p in ps]
    col = [np.zeros(p.shape[:-2] + p.shape[-1:]) for p in ps]
    for t, gs in enumerate(gradients(), start=1):
        for k, g in enumerate(gs):
            g = g / loss_scale
            p = ps[k]
            if relative_step:
                lr = min(1e-6 * t if warmup_init else 1e-2, 1 / np.sqrt(t))
            else:
                lr = lr_of(lrs[k], t - 1)
            if scale_parameter:
                lr = lr * max(eps[1], rms(p))
            b = 1 - t ** (-decay_rate)
            u = g * g + eps[0]
            if p.ndim >= 2:
                row[k] = b * row[k] + (1 - b) * u.mean(-1)
                col[k] = b * col[k] + (1 - b) * u.mean(-2)
                vhat = (row[k] / row[k].mean(-1, keepdims=True))[..., :, None] * \
                    col[k][..., None, :]
                upd = g / np.sqrt(vhat)
            else:
                v[k] = b * v[k] + (1 - b) * u
                upd = g / np.sqrt(v[k])
            upd = lr * upd / max(1.0, rms(upd) / clip)
            if beta1 > 0:
                m[k] = beta1 * m[k] + (1 - beta1) * upd
                upd = m[k]
            ps[k] = p - decays[k] * lr * p - upd
    return ps


MODES = {"pynative": ms.PYNATIVE_MODE, "graph": ms.GRAPH_MODE}


def grouped(ps, wd_w=0.01):
    """w: a per-step list and its own decay; b and gamma: a schedule (gamma: no decay)."""
    return [{"params": [ps[0]], "lr": LISTED, "weight_decay": wd_w},
            {"params": ps[1:], "lr": schedule}]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_asgd_follows_numpy(mode):
    got, opt = run(lambda ps: nn.ASGD(ps, 0.05, lambd=0.3, alpha=0.75, t0=2.0,
                                      weight_decay=0.02), MODES[mode])
    # ungrouped: the decay skips names holding "gamma"
    want, ax = numpy_asgd([0.05] * 3, [0.02, 0.02, 0.0], 0.3, 0.75, 2.0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)
    for p, a in zip(params(), ax):
        np.testing.assert_allclose(opt.ax[[q.name for q in opt.parameters].index(p.name)]
                                   .asnumpy(), a, rtol=2e-5, atol=1e-6)
    names = {p.name for p in opt.get_parameters()}
    assert {"ax.w", "eta.w", "mu.w", "ax.b", "global_step"} <= names
    assert int(opt.global_step.asnumpy()[0]) == STEPS


@pytest.mark.parametrize("mode", sorted(MODES))
def test_asgd_groups_with_list_and_schedule_rates(mode):
    got, _ = run(lambda ps: nn.ASGD(grouped(ps), 0.1, lambd=0.5, t0=1.0), MODES[mode])
    want, _ = numpy_asgd([LISTED, schedule, schedule], [0.01, 0.0, 0.0], 0.5, 0.75, 1.0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_rprop_follows_numpy(mode):
    got, opt = run(lambda ps: nn.Rprop(ps, 0.05, etas=(0.4, 1.5), step_sizes=(0.01, 0.08),
                                       weight_decay=0.1), MODES[mode])
    want = numpy_rprop([0.05] * 3, [0.1, 0.1, 0.0], (0.4, 1.5), (0.01, 0.08))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    names = {p.name for p in opt.get_parameters()}
    assert {"prev.w", "step_size.w", "prev.conv.gamma"} <= names
    # the learning rate is the first step size only: the rest follow the signs
    grouped_got, _ = run(lambda ps: nn.Rprop(grouped(ps)), MODES[mode])
    grouped_want = numpy_rprop([LISTED, schedule, schedule], [0.01, 0.0, 0.0], (0.5, 1.2),
                               (1e-6, 50.0))
    for g, w in zip(grouped_got, grouped_want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


ADAFACTOR = {   # (constructor kwargs, numpy kwargs)
    "default": ({}, {}),
    "warmup_no_first_moment": (dict(warmup_init=True, beta1=None, clip_threshold=0.5),
                               dict(warmup_init=True, beta1=0.0, clip=0.5)),
    "manual_lr_decay": (dict(learning_rate=0.03, relative_step=False, weight_decay=0.1,
                             decay_rate=0.6, loss_scale=8.0),
                        dict(relative_step=False, decay_rate=0.6, loss_scale=8.0)),
    "unscaled": (dict(scale_parameter=False, eps=(1e-8, 1e-3)),
                 dict(scale_parameter=False, eps=(1e-8, 1e-3))),
}


@pytest.mark.parametrize("case", sorted(ADAFACTOR))
@pytest.mark.parametrize("mode", sorted(MODES))
def test_adafactor_follows_numpy(case, mode):
    kwargs, ref = ADAFACTOR[case]
    got, opt = run(lambda ps: nn.AdaFactor(ps, **kwargs), MODES[mode])
    wd = kwargs.get("weight_decay", 0.0)
    want = numpy_adafactor([kwargs.get("learning_rate")] * 3, [wd, wd, 0.0], **ref)
    for g, w, name in zip(got, want, SHAPES):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6, err_msg=name)
    names = {p.name for p in opt.get_parameters()}
    assert {"exp_avg_sq_row.w", "exp_avg_sq_col.w", "exp_avg_sq.b",
            "exp_avg_sq_row.conv.gamma"} <= names
    assert opt.exp_avg_sq_col[2].shape == (2, 2)       # (2, 3, 2): dims [:-2] + [-1:]
    assert ("exp_avg.w" in names) == (kwargs.get("beta1", 0.9) is not None)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_adafactor_groups_with_list_and_schedule_rates(mode):
    # a list or a schedule keeps its rates: no RMS(p) scaling (MindSpore's scale_lr)
    got, opt = run(lambda ps: nn.AdaFactor(grouped(ps, 0.2), learning_rate=LISTED,
                                           relative_step=False), MODES[mode])
    assert not opt.scale_parameter
    want = numpy_adafactor([LISTED, schedule, schedule], [0.2, 0.0, 0.0],
                           relative_step=False, scale_parameter=False)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)


def test_adafactor_compression_keeps_a_float16_second_moment():
    got, opt = run(lambda ps: nn.AdaFactor(ps, compression=True), ms.GRAPH_MODE)
    assert opt.exp_avg_sq[1].dtype == ms.float16
    assert opt.exp_avg_sq_row[0].dtype == ms.float32
    want = numpy_adafactor([None] * 3, [0.0] * 3)
    np.testing.assert_allclose(got[1], want[1], rtol=2e-3, atol=1e-5)   # float16 rounding
    np.testing.assert_allclose(got[0], want[0], rtol=2e-5, atol=1e-6)


MAKERS = {
    "ASGD": lambda ps: nn.ASGD(ps, 0.05, lambd=0.1, t0=2.0, weight_decay=0.01),
    "Rprop": lambda ps: nn.Rprop(ps, 0.01, weight_decay=0.01),
    "AdaFactor": lambda ps: nn.AdaFactor(ps, 0.05, relative_step=False, weight_decay=0.01),
}


def train_steps(kind, mode):
    ms.set_context(mode=mode)
    try:
        model = net()
        step = nn.TrainOneStepCell(nn.WithLossCell(model, nn.MSELoss()),
                                   MAKERS[kind](model.trainable_params()))
        x, y = data()
        losses = [float(step(Tensor(x[i:i + 8]), Tensor(y[i:i + 8])).asnumpy())
                  for i in (0, 8, 16, 0, 8, 16)]
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    return model, losses


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_compiled_step_equals_eager_and_learns(kind):
    eager, eager_losses = train_steps(kind, ms.PYNATIVE_MODE)
    graph, graph_losses = train_steps(kind, ms.GRAPH_MODE)
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5)
    for a, b in zip(eager.trainable_params(), graph.trainable_params()):
        np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), rtol=1e-5, atol=1e-6)
    assert graph_losses[3] < graph_losses[0]            # the same batch, 3 steps on


def test_bad_arguments_are_refused_by_name():
    ps = params()
    with pytest.raises(TypeError, match="For 'ASGD', the type of 'lambd' should be float"):
        nn.ASGD(ps, lambd=1)
    with pytest.raises(TypeError, match="For 'Rprop', the 'etas' should be a tuple"):
        nn.Rprop(ps, etas=[0.5, 1.2])
    with pytest.raises(ValueError, match="For 'Rprop', the 'etas'.*etaplus > 1"):
        nn.Rprop(ps, etas=(0.5, 1.0))
    with pytest.raises(ValueError, match="For 'Rprop', the 'step_sizes'.*min <= max"):
        nn.Rprop(ps, step_sizes=(1.0, 0.5))
    with pytest.raises(ValueError, match="For 'AdaFactor', the 'learning_rate' should be None"):
        nn.AdaFactor(ps, learning_rate=0.1)
    with pytest.raises(ValueError, match="For 'AdaFactor', the 'learning_rate' should be given"):
        nn.AdaFactor(ps, relative_step=False)
    with pytest.raises(ValueError, match="'warmup_init' True requires"):
        nn.AdaFactor(ps, learning_rate=0.1, relative_step=False, warmup_init=True)
    with pytest.raises(ValueError, match="For 'AdaFactor', the 'decay_rate'"):
        nn.AdaFactor(ps, decay_rate=1.0)
    with pytest.raises(ValueError, match="For 'AdaFactor', the 'weight_decay' should be in"):
        nn.AdaFactor(ps, weight_decay=1.0)


def test_adafactor_refuses_a_matrix_split_along_both_its_dims():
    """A gradient slice of a matrix split along both dims: its row means would reduce one
    split dim while keeping the other, which a step cannot combine; refused by name (one
    split dim is supported: tests/ranks/test_opt_shard_asgd_rprop_adafactor.py)."""
    from msops.parallel.layout import TensorLayout
    w = Parameter(Tensor(np.ones((4, 6), np.float32)), "w")
    g = Tensor(np.ones((2, 3), np.float32))
    g.layout = TensorLayout((2, 2), (1, 0), (4, 6))
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with pytest.raises(NotImplementedError, match="For 'AdaFactor', the parameter 'w' is "
                                                      "held split along dims \\[0, 1\\]"):
            nn.AdaFactor([w])((g,))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
