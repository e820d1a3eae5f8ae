"""A fuzzer over every compute primitive's backward rule (the autodiff issue, with issue 16's
fuzzer): the calls of tests/test_fuzz_primitives.py (each CASES row with its inputs
perturbed, or its op made again with one attribute changed) whose forward is valid, on
float64 inputs drawn away from the ops' kinks, differentiated eagerly (on the tape) and
compiled (on the graph) against central finite differences of the eager forward.

The loss is sum_k sum(out_k * r_k) over the op's float outputs (but the outputs MindSpore
does not differentiate: BatchNorm's statistics, softmax cross-entropy's backprop, flash
attention's softmax statistics), so every element of every gradient is
checked, including the empty ones' shapes and the broadcast, negative-axis, keep_dims and
transposed forms the fixed cases of tests/test_grad_ops.py do not reach.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import msops as ms
from msops import Tensor, ops
from msops.primitives.rules import reason_without
from test_compute_contract import CASES
from test_grad_ops import finite_differences
from test_fuzz_primitives import DOCUMENTED, FUZZ, _flat, _inferred, attribute_values, perturbed

#: differentiated through some outputs only, as in MindSpore
DIFFERENTIATED_OUTPUTS = {"BatchNorm": (0,), "SoftmaxCrossEntropyWithLogits": (0,),
                          "FlashAttentionScore": (3,)}
#: gradient zero by definition
STOPPED = {"StopGradient"}
#: random forward (tests/test_grad_ops.py checks it with a fixed mask)
RANDOM = {"Dropout"}
#: ops whose domain is the positive reals (their float inputs are drawn there)
POSITIVE = {"Log", "Sqrt", "Rsqrt", "Pow", "BatchNorm"}
#: backward rules that refuse some attributes and shapes with a ValueError naming the op and
#: saying so (the complete factorisations' extra columns are not functions of x): skipped
REFUSED = {"Qr": "the gradient needs", "Svd": "the gradient needs"}
MAX_ELEMENTS = 120
EPS = 1e-6


def _float64(args: tuple, const_inputs: tuple, positive: bool, every: bool, seed: int) -> tuple:
    """`args` with every float array (`every`: every array) replaced by float64 values of
    its shape, drawn away from 0 (|v| >= 0.3), or in [0.5, inf) for `positive` ops."""
    rng = np.random.default_rng(seed)

    def value(a):
        if not isinstance(a, np.ndarray) or not (every or a.dtype.kind == "f"):
            return a
        v = np.abs(rng.standard_normal(a.shape)) + 0.3
        return np.asarray(v + 0.2 if positive else v * rng.choice([-1.0, 1.0], a.shape))

    return tuple(a if i in const_inputs else
                 tuple(value(x) for x in a) if isinstance(a, tuple) else value(a)
                 for i, a in enumerate(args))


def _differentiated(args: tuple, const_inputs: tuple) -> list:
    """(i, k) of every float64 array among the tensor inputs (k: the place in a tuple)."""
    return [(i, k) for i, a in enumerate(args) if i not in const_inputs
            for k, x in enumerate(a if isinstance(a, tuple) else (a,))
            if isinstance(x, np.ndarray) and x.dtype == np.float64]


def _loss(prim, args: tuple, where: list, weights: dict):
    """loss(*xs): `prim` on `args` with the arrays at `where` taken from xs."""
    reduce_sum, mul = ops.ReduceSum(), ops.Mul()

    def loss(*xs):
        call = [list(a) if isinstance(a, tuple) else a for a in args]
        for (i, k), x in zip(where, xs):
            if isinstance(call[i], list):
                call[i][k] = x
            else:
                call[i] = x
        call = [tuple(Tensor(x) if isinstance(x, np.ndarray) else x for x in a)
                if isinstance(a, list) else Tensor(a) if isinstance(a, np.ndarray) else a
                for a in call]
        outs = _flat(prim(*call))
        total = None
        for k, w in weights.items():
            term = reduce_sum(mul(outs[k], Tensor(w)), ())
            total = term if total is None else total + term
        return total
    return loss


def _check_gradient(prim, args: tuple, every: bool, seed: int) -> None:
    if reason_without("bprop", prim) is not None:
        return              # declared without a gradient: its refusal is tested with the op
    args = _float64(args, prim.const_inputs, prim.name in POSITIVE, every, seed)
    try:
        _inferred(prim, args)
        outs = _flat(prim(*(tuple(Tensor(x) for x in a) if isinstance(a, tuple) and a
                            and all(isinstance(x, np.ndarray) for x in a)
                            else Tensor(a) if isinstance(a, np.ndarray) else a for a in args)))
    except DOCUMENTED:
        return                                    # not a valid call: the other fuzzer's part
    where = _differentiated(args, prim.const_inputs)
    floats = [k for k, t in enumerate(outs) if t.dtype in (ms.float16, ms.float32, ms.float64)]
    floats = [k for k in floats if k in DIFFERENTIATED_OUTPUTS.get(prim.name, floats)]
    xs = [args[i][k] if isinstance(args[i], tuple) else args[i] for i, k in where]
    if (not where or not floats or sum(x.size for x in xs) > MAX_ELEMENTS
            or any(outs[k].dtype != ms.float64 for k in floats)
            or not all(np.isfinite(outs[k].asnumpy()).all() for k in floats)):
        return
    rng = np.random.default_rng(seed + 1)
    weights = {k: rng.standard_normal(outs[k].shape) for k in floats}
    loss = _loss(prim, args, where, weights)
    f = ms.grad(loss, tuple(range(len(xs))))
    try:
        eager = f(*[Tensor(x) for x in xs])
    except ValueError as e:
        if f"For '{prim.name}', {REFUSED.get(prim.name)}" in str(e):
            return
        raise
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = f(*[Tensor(x) for x in xs])
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    want = finite_differences(loss, xs, EPS) if prim.name not in STOPPED else [0 * x for x in xs]
    for g, c, w, x in zip(eager, compiled, want, xs):
        assert g.shape == x.shape and g.dtype == ms.float64, (prim.name, g.shape, x.shape)
        np.testing.assert_allclose(g.asnumpy(), c.asnumpy(), rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{prim.name} {prim.init_attrs} on {args}")


@pytest.mark.parametrize("prim,args", [(p, a) for p, a in CASES if p.name not in RANDOM],
                         ids=[p.name for p, _ in CASES if p.name not in RANDOM])
@FUZZ
@given(data=st.data())
def test_fuzz_backward_of_perturbed_inputs(prim, args, data):
    _check_gradient(prim, data.draw(perturbed(args, prim.const_inputs)),
                    data.draw(st.booleans()), data.draw(st.integers(0, 2 ** 16)))


@pytest.mark.parametrize("prim,args", [(p, a) for p, a in CASES
                                       if p.init_attrs and p.name not in RANDOM],
                         ids=[p.name for p, _ in CASES if p.init_attrs and p.name not in RANDOM])
@FUZZ
@given(data=st.data())
def test_fuzz_backward_of_changed_attributes(prim, args, data):
    name = data.draw(st.sampled_from(sorted(prim.init_attrs)))
    try:
        made = type(prim)(**{**prim.init_attrs, name: data.draw(attribute_values)})
    except DOCUMENTED:
        return
    _check_gradient(made, args, data.draw(st.booleans()), data.draw(st.integers(0, 2 ** 16)))
