"""Optimizers with MindSpore's parameter groups, loss scale and learning-rate forms, fuzzed
against a numpy re-implementation of each update rule.

Hypothesis draws Parameters (1-D to 4-D, some named like normalisation's gamma/beta),
splits them into groups (each with or without its own lr: a number, a per-step list or
Tensor, or a schedule; its own weight decay; gradient centralization for 4-D weights), an
`order_params` permutation or none, a loss scale and the optimizer's hyperparameters;
then feeds the same random gradients for 3 steps to msops (eagerly and as a compiled
update) and to numpy, written from MindSpore's documented rules:
    g <- g + wd * p (all but AdamWeightDecay, Lamb and LARS; ungrouped, not for
    "beta"/"gamma" names),
    g <- g - mean(g over dims 1, 2, 3) (a centralized group),  g <- g / loss_scale,
then each optimizer's update with its group's rate of the step. LARS wraps a Momentum: it
unscales g, rescales it by the layer's trust ratio (with the Momentum's decay / scale)
for names without "bias", and the Momentum then centralizes and updates.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import msops as ms
from msops import Parameter, Tensor, nn

FUZZ = settings(max_examples=20, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])
STEPS = 3
NO_SCALE = ("AdamWeightDecay", "Lamb")                # MindSpore's take no loss_scale
DECOUPLED = ("AdamWeightDecay", "Lamb", "LARS")       # no weight decay added to g first
KINDS = ["SGD", "Momentum", "Adam", "AdamWeightDecay", "RMSProp", "Adagrad", "AdaMax", "Lamb",
         "LARS", "Adadelta", "ProximalAdagrad", "FTRL", "LazyAdam"]
ADAPTIVE = ("RMSProp", "Adagrad", "AdaMax", "Lamb", "Adadelta", "ProximalAdagrad", "FTRL")
SHAPES = [(3,), (2, 3), (2, 2, 3), (3, 2, 2, 2)]
NAMES = ["dense.weight", "dense.bias", "norm.gamma", "norm.beta", "conv.weight", "out.weight"]


def _rate(kind: str, base: float):
    """(the optimizer's argument, rate at step t) of a learning-rate form."""
    per_step = [base * 0.7 ** t for t in range(2)]          # shorter than STEPS: last repeats
    return {"number": (base, lambda t: base),
            "list": (per_step, lambda t: per_step[min(t, 1)]),
            "tensor": (Tensor(np.array(per_step)), lambda t: per_step[min(t, 1)]),
            "schedule": (lambda t: base / (1 + t), lambda t: base / (1 + t))}[kind]


rates = st.tuples(st.sampled_from(["number", "list", "tensor", "schedule"]),
                  st.sampled_from([0.0, 0.01, 0.1]))


@st.composite
def setups(draw, kind: str) -> dict:
    n = draw(st.integers(1, len(NAMES)))
    names = draw(st.permutations(NAMES))[:n]
    shapes = {name: draw(st.sampled_from(SHAPES)) for name in names}
    grouped = draw(st.booleans())
    setup = {"names": names, "shapes": shapes, "grouped": grouped,
             "lr": draw(rates), "weight_decay": draw(st.sampled_from([0.0, 0.05])),
             "loss_scale": draw(st.sampled_from([1.0, 8.0])) if kind not in NO_SCALE
             else 1.0}
    if grouped:
        cut = sorted(draw(st.lists(st.integers(1, n - 1), max_size=2, unique=True))) if n > 1 \
            else []
        bounds = [0] + cut + [n]
        setup["groups"] = [{
            "names": names[a:b],
            "lr": draw(st.one_of(st.none(), rates)),
            "weight_decay": draw(st.sampled_from([None, 0.0, 0.2])),
            "gc": kind != "AdamWeightDecay" and all(len(shapes[x]) == 4 for x in names[a:b])
            and draw(st.booleans())} for a, b in zip(bounds, bounds[1:])]
        setup["order"] = draw(st.one_of(st.none(), st.permutations(names)))
    setup["hyper"] = {
        "SGD": lambda: dict(momentum=draw(st.sampled_from([0.0, 0.9])),
                            dampening=draw(st.sampled_from([0.0, 0.1]))),
        "Momentum": lambda: dict(momentum=draw(st.sampled_from([0.0, 0.9])),
                                 use_nesterov=draw(st.booleans())),
        "Adam": lambda: dict(beta1=0.8, beta2=0.95, use_nesterov=False,
                             use_amsgrad=draw(st.booleans())),
        "AdamWeightDecay": lambda: dict(beta1=0.8, beta2=0.95),
        "RMSProp": lambda: dict(decay=0.8, momentum=draw(st.sampled_from([0.0, 0.5])),
                                epsilon=1e-6, centered=draw(st.booleans())),
        "Adagrad": lambda: dict(accum=draw(st.sampled_from([0.1, 0.5])),
                                update_slots=draw(st.booleans())),
        "AdaMax": lambda: dict(beta1=0.8, beta2=0.95),
        "Lamb": lambda: dict(beta1=0.8, beta2=0.95),
        "Adadelta": lambda: dict(rho=draw(st.sampled_from([0.5, 0.9])), epsilon=1e-4),
        "ProximalAdagrad": lambda: dict(accum=0.2, l1=draw(st.sampled_from([0.0, 0.05])),
                                        l2=draw(st.sampled_from([0.0, 0.1]))),
        "FTRL": lambda: dict(initial_accum=0.2, lr_power=draw(st.sampled_from([-0.5, 0.0])),
                             l1=draw(st.sampled_from([0.0, 0.05])), l2=0.1),
        "LazyAdam": lambda: dict(beta1=0.8, beta2=0.95, use_nesterov=draw(st.booleans())),
        "LARS": lambda: dict(coefficient=draw(st.sampled_from([0.01, 2.0])), epsilon=1e-5,
                             use_clip=draw(st.booleans()))}[kind]()
    if kind == "SGD" and setup["hyper"]["momentum"] and draw(st.booleans()):
        setup["hyper"].update(nesterov=True, dampening=0.0)
    if kind == "Adam" and not setup["hyper"]["use_amsgrad"]:
        setup["hyper"]["use_nesterov"] = draw(st.booleans())
    if kind == "FTRL":                # one fixed rate > 0: no schedule, no group rates
        setup["lr"] = ("number", draw(st.sampled_from([0.05, 0.2])))
        for g in setup.get("groups", []):
            g["lr"] = None
    return setup


def _build(kind: str, setup: dict):
    rng = np.random.default_rng(3)
    params = {n: Parameter(Tensor(rng.standard_normal(setup["shapes"][n])), name=n)
              for n in setup["names"]}
    lr_arg, lr_at = _rate(*setup["lr"])
    per_param = {}                                 # name -> (rate at t, weight decay, gc)
    if setup["grouped"]:
        arg = []
        for g in setup["groups"]:
            group = {"params": [params[n] for n in g["names"]]}
            rate_at = lr_at
            if g["lr"] is not None:
                group["lr"], rate_at = _rate(*g["lr"])
            decay = setup["weight_decay"] if g["weight_decay"] is None else g["weight_decay"]
            if g["weight_decay"] is not None:
                group["weight_decay"] = g["weight_decay"]
            if g["gc"]:
                group["grad_centralization"] = True
            arg.append(group)
            per_param.update({n: (rate_at, decay, g["gc"]) for n in g["names"]})
        order = setup["order"] or [n for g in setup["groups"] for n in g["names"]]
        if setup["order"]:
            arg.append({"order_params": [params[n] for n in setup["order"]]})
    else:
        arg, order = [params[n] for n in setup["names"]], list(setup["names"])
        for n in setup["names"]:
            decay = 0.0 if ("beta" in n or "gamma" in n) and kind != "FTRL" \
                else setup["weight_decay"]                  # MindSpore's FTRL decays all
            per_param[n] = (lr_at, decay, False)
    hyper = {} if kind == "LARS" else setup["hyper"]
    kwargs = dict(hyper, learning_rate=lr_arg, weight_decay=setup["weight_decay"])
    if kind not in NO_SCALE:
        kwargs["loss_scale"] = setup["loss_scale"]
    if kind in ("Momentum", "LARS"):
        kwargs.setdefault("momentum", 0.9)
    opt = getattr(nn, "Momentum" if kind == "LARS" else kind)(arg, **kwargs)
    if kind == "LARS":
        opt = nn.LARS(opt, **setup["hyper"])
    return opt, params, order, per_param


def _numpy_steps(kind: str, setup: dict, start: dict, order: list, per_param: dict,
                 grads: list) -> dict:
    h = setup["hyper"]
    p = {n: v.copy() for n, v in start.items()}
    state = {n: {} for n in p}
    for t, step_grads in enumerate(grads):
        for n, g in zip(order, step_grads):
            rate_at, decay, gc = per_param[n]
            lr = rate_at(t)
            if kind not in DECOUPLED:
                g = g + decay * p[n]
            if kind == "LARS":          # unscales first; the Momentum then centralizes
                g = _numpy_lars(h, p[n], g / setup["loss_scale"], decay / setup["loss_scale"],
                                lr, "bias" not in n)
            if gc:
                g = g - g.mean(axis=(1, 2, 3), keepdims=True)
            if kind != "LARS":
                g = g / setup["loss_scale"]
            s = state[n]
            if kind in ADAPTIVE:
                p[n] = _numpy_adaptive(kind, h, s, t, p[n], g, lr, decay)
            elif kind == "SGD":
                if h["momentum"]:
                    s["v"] = g.copy() if t == 0 else h["momentum"] * s["v"] + (1 - h["dampening"]) * g
                    d = g + h["momentum"] * s["v"] if h.get("nesterov") else s["v"]
                else:
                    d = g
                p[n] = p[n] - lr * d
            elif kind in ("Momentum", "LARS"):
                s["v"] = h.get("momentum", 0.9) * s.get("v", 0) + g
                nesterov = h.get("use_nesterov", False)
                p[n] = p[n] - lr * (g + h.get("momentum", 0.9) * s["v"] if nesterov else s["v"])
            else:
                b1, b2 = h["beta1"], h["beta2"]
                s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
                s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
                if kind == "AdamWeightDecay":
                    p[n] = p[n] - lr * (s["m"] / (np.sqrt(s["v"]) + 1e-6) + decay * p[n])
                    continue
                lr_t = lr * np.sqrt(1 - b2 ** (t + 1)) / (1 - b1 ** (t + 1))
                v = s["v"]
                if h.get("use_amsgrad"):
                    v = s["vhat"] = np.maximum(s.get("vhat", 0), s["v"])
                num = b1 * s["m"] + (1 - b1) * g if h["use_nesterov"] else s["m"]
                p[n] = p[n] - lr_t * num / (np.sqrt(v) + 1e-8)
    return p


def _numpy_lars(h: dict, p, g, wd: float, lr: float, applies: bool):
    """LARS's gradient (g already unscaled, wd the decay over the loss scale)."""
    if not applies:
        return g
    w_norm, g_norm = np.linalg.norm(p), np.linalg.norm(g)
    ratio = 1.0
    if w_norm > 0 and g_norm > 0:
        ratio = h["coefficient"] * w_norm / (g_norm + wd * w_norm + h["epsilon"])
    if h["use_clip"]:
        ratio = min(ratio / lr, 1.0) if lr > 0 else 1.0
    return ratio * (g + wd * p)


def _numpy_adaptive(kind: str, h: dict, s: dict, t: int, p, g, lr: float, decay: float):
    """p's new value by the rules of MindSpore's docs (RMSProp, Adagrad, AdaMax, Lamb,
    Adadelta, ProximalAdagrad, FTRL)."""
    return p - _numpy_step(kind, h, s, t, p, g, lr, decay) if kind not in PROXIMAL else \
        PROXIMAL[kind](h, s, p, g, lr)


def _numpy_proximal_adagrad(h: dict, s: dict, p, g, lr: float):
    s["h"] = s.get("h", h["accum"]) + g * g
    v = p - lr * g / np.sqrt(s["h"])
    return np.sign(v) / (1 + lr * h["l2"]) * np.maximum(np.abs(v) - lr * h["l1"], 0.0)


def _numpy_ftrl(h: dict, s: dict, p, g, lr: float):
    m = s.get("m", np.full_like(p, h["initial_accum"]))
    m_new, n = m + g * g, -h["lr_power"]
    s["u"] = s.get("u", 0.0) + g - (m_new ** n - m ** n) / lr * p
    s["m"] = m_new
    solved = (np.sign(s["u"]) * h["l1"] - s["u"]) / (m_new ** n / lr + 2 * h["l2"])
    return np.where(np.abs(s["u"]) > h["l1"], solved, 0.0)


PROXIMAL = {"ProximalAdagrad": _numpy_proximal_adagrad, "FTRL": _numpy_ftrl}


def _numpy_step(kind: str, h: dict, s: dict, t: int, p, g, lr: float, decay: float):
    """The step subtracted from p."""
    if kind == "Adadelta":
        rho, eps = h["rho"], h["epsilon"]
        s["a"] = rho * s.get("a", 0.0) + (1 - rho) * g * g
        update = np.sqrt(s.get("au", 0.0) + eps) / np.sqrt(s["a"] + eps) * g
        s["au"] = rho * s.get("au", 0.0) + (1 - rho) * update * update
        return lr * update
    if kind == "RMSProp":
        d = h["decay"]
        s["ms"] = d * s.get("ms", 1.0) + (1 - d) * g * g
        denom = s["ms"]
        if h["centered"]:
            s["mg"] = d * s.get("mg", 0.0) + (1 - d) * g
            denom = denom - s["mg"] ** 2
        s["mom"] = h["momentum"] * s.get("mom", 0.0) + lr * g / np.sqrt(denom + h["epsilon"])
        return s["mom"]
    if kind == "Adagrad":
        s["h"] = s.get("h", h["accum"]) + (g * g if h["update_slots"] else 0.0)
        return lr * g / np.sqrt(s["h"])
    b1, b2 = h["beta1"], h["beta2"]
    s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    if kind == "AdaMax":
        s["v"] = np.maximum(b2 * s.get("v", 0.0), np.abs(g))
        return lr / (1 - b1 ** (t + 1)) * s["m"] / (s["v"] + 1e-8)
    s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
    u = (s["m"] / (1 - b1 ** (t + 1))) / (np.sqrt(s["v"] / (1 - b2 ** (t + 1))) + 1e-6)
    u = u + decay * p
    w_norm, u_norm = np.linalg.norm(p), np.linalg.norm(u)
    return lr * (w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0) * u


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
@pytest.mark.parametrize("kind", KINDS)
@FUZZ
@given(data=st.data())
def test_grouped_updates_follow_numpy(kind, mode, data):
    setup = data.draw(setups(kind))
    ms.set_context(mode=mode)
    try:
        opt, params, order, per_param = _build(kind, setup)
        assert [p.name for p in opt.parameters] == order
        start = {n: p.asnumpy().copy() for n, p in params.items()}
        rng = np.random.default_rng(5)
        grads = [[rng.standard_normal(setup["shapes"][n]) for n in order]
                 for _ in range(STEPS)]
        for step_grads in grads:
            opt(tuple(Tensor(g) for g in step_grads))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    want = _numpy_steps(kind, setup, start, order, per_param, grads)
    for n, p in params.items():
        np.testing.assert_allclose(p.asnumpy(), want[n], rtol=1e-10, atol=1e-12, err_msg=n)
    rates = tuple(per_param[n][0](STEPS) for n in order)
    lr = opt.get_lr()
    if opt.is_group_lr:
        assert len(lr) == len(setup["groups"])
        for n, param in params.items():
            k = [i for i, g in enumerate(setup["groups"]) if n in g["names"]][0]
            assert np.isclose(lr[k], per_param[n][0](STEPS))
            assert opt.get_lr_parameter(param).name == f"learning_rate_group_{k}"
    else:
        assert np.isclose(lr, rates[0])


def _ps():
    return [Parameter(Tensor(np.ones(s)), name=n) for s, n in
            [((2, 3), "w"), ((3,), "b"), ((2, 2, 2, 2), "conv")]]


def test_group_errors_name_what_is_wrong():
    w, b, conv = _ps()
    cases = [
        (lambda: nn.SGD([{"params": [w]}, {"params": [w, b]}]), ValueError,
         r"For 'SGD', the Parameter 'w' should be in one group, but it is in two"),
        (lambda: nn.SGD([{"params": [w], "momentum": 0.9}]), ValueError,
         r"group 0 should have the key 'params' and only keys of \['params', 'lr', "
         r"'weight_decay', 'grad_centralization'\].*but got \['momentum', 'params'\]"),
        (lambda: nn.SGD([{"params": [w], "grad_centralization": True}]), ValueError,
         r"'grad_centralization' of group 0 applies to convolution weights \(4-D\) only, but "
         r"'w' has shape \[2, 3\]"),
        (lambda: nn.SGD([{"params": [w]}, {"params": [b]}, {"order_params": [w]}]),
         ValueError, r"'order_params' should list exactly the grouped Parameters, but \[\] are "
                     r"in no group and \['b'\] are not listed"),
        (lambda: nn.SGD([{"params": [w]}, {"order_params": [w, conv]}]), ValueError,
         r"but \['conv'\] are in no group"),
        (lambda: nn.SGD([{"params": [w], "lr": -1.0}]), TypeError,
         r"For 'SGD', the 'lr' of group 0' should be a number >= 0"),
        (lambda: nn.SGD([{"params": [w], "weight_decay": -0.1}]), ValueError,
         r"the 'weight_decay' of group 0' should be >= 0, but got -0.1"),
        (lambda: nn.Momentum([w], 0.1, 0.9, loss_scale=0.0), ValueError,
         r"For 'Momentum', the 'loss_scale' should be > 0, but got 0.0"),
        (lambda: nn.AdamWeightDecay([{"params": [conv], "grad_centralization": True}]),
         ValueError, r"AdamWeightDecay does not centralize gradients"),
        (lambda: nn.Adam([w], use_amsgrad=True, use_nesterov=True), ValueError,
         r"'use_amsgrad' and 'use_nesterov' should not both be True"),
        (lambda: nn.Adam([w], use_fused=True), TypeError,
         r"keyword arguments should be among \['use_lazy', 'use_offload'\], but got 'use_fused'"),
        (lambda: nn.SGD([w, b, w]), ValueError, r"should hold each Parameter once, but 'w'"),
        (lambda: nn.SGD([w], learning_rate=Tensor(np.ones((2, 2)))), TypeError,
         r"the 'learning_rate' should be a number >= 0, a non-empty list/tuple or 1-D Tensor"),
        (lambda: nn.RMSProp([w], epsilon=0.0), ValueError,
         r"For 'RMSProp', the 'epsilon' should be > 0, but got 0.0"),
        (lambda: nn.RMSProp([w], decay=-0.1), ValueError,
         r"For 'RMSProp', the 'decay' should be >= 0, but got -0.1"),
        (lambda: nn.RMSProp([w], centered=1), TypeError,
         r"For 'RMSProp', the type of 'centered' should be bool, but got int"),
        (lambda: nn.Adagrad([w], accum=-1.0), ValueError,
         r"For 'Adagrad', the 'accum' should be >= 0, but got -1.0"),
        (lambda: nn.Adagrad([w], update_slots="yes"), TypeError,
         r"For 'Adagrad', the type of 'update_slots' should be bool"),
        (lambda: nn.AdaMax([w], beta1=0.0), ValueError,
         r"For 'AdaMax', the 'beta1' and 'beta2' should be in \(0, 1\)"),
        (lambda: nn.Lamb([w], 0.1, beta2=1.0), ValueError,
         r"For 'Lamb', the 'beta1' and 'beta2' should be in \(0, 1\) and 'eps' > 0, but got "
         r"beta1=0.9, beta2=1.0"),
        (lambda: nn.Lamb([w], -0.1), TypeError, r"For 'Lamb', the 'learning_rate' should be"),
        (lambda: nn.LARS("sgd"), TypeError,
         r"For 'LARS', the 'optimizer' should be an Optimizer \(not a LARS\), but got str"),
        (lambda: nn.LARS(nn.LARS(nn.SGD([w]))), TypeError, r"but got LARS"),
        (lambda: nn.LARS(nn.SGD([w]), epsilon=0), ValueError,
         r"For 'LARS', the 'epsilon' should be > 0, but got 0"),
        (lambda: nn.Adadelta([w], rho=1.5), ValueError,
         r"For 'Adadelta', the 'rho' should be in \[0, 1\] and 'epsilon' >= 0, but got rho=1.5"),
        (lambda: nn.ProximalAdagrad([w], l1=-0.1), ValueError,
         r"For 'ProximalAdagrad', the 'l1' should be >= 0, but got -0.1"),
        (lambda: nn.FTRL([w], learning_rate=[0.1, 0.2]), TypeError,
         r"For 'FTRL', the type of 'learning_rate' should be one of \[int, float\], but got "
         r"list"),
        (lambda: nn.FTRL([w], learning_rate=0.0), ValueError,
         r"For 'FTRL', the 'learning_rate' should be a number > 0 \(no schedule"),
        (lambda: nn.FTRL([{"params": [w], "lr": 0.1}]), ValueError,
         r"For 'FTRL', group learning rates are not supported"),
        (lambda: nn.FTRL([w], lr_power=0.5), ValueError,
         r"For 'FTRL', the 'lr_power' should be <= 0, but got 0.5"),
        (lambda: nn.LARS(nn.SGD([w]), lars_filter="bias"), TypeError,
         r"For 'LARS', the 'lars_filter' should be a callable of a Parameter, but got str"),
    ]
    for make, error, message in cases:
        with pytest.raises(error, match=message):
            make()


def test_a_filter_of_get_parameters_is_accepted_and_mindspore_positions_hold():
    """MindSpore scripts pass `filter(..., net.get_parameters())` and position
    `loss_scale` fifth in Momentum."""
    w, b, _ = _ps()
    opt = nn.Momentum(filter(lambda p: p.name != "conv", [w, b]), 0.1, 0.9, 0.0, 4.0)
    assert [p.name for p in opt.parameters] == ["w", "b"] and opt.loss_scale == 4.0
    opt((Tensor(np.full((2, 3), 8.0)), Tensor(np.full(3, 8.0))))
    np.testing.assert_allclose(w.asnumpy(), 1 - 0.1 * 2.0)          # g / 4 = 2
