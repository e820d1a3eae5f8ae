"""A fuzzer over every compute primitive's inputs and attributes (issue 16 §6–7).

Each op of tests/test_compute_contract.py's CASES (one valid call of every compute
primitive) is called with its inputs perturbed by hypothesis (a tensor takes another
shape and/or dtype, a constant another value), or is made again with one constructor
argument changed (made: a TypeError / ValueError naming the op, or an op). Accepted
outcomes of the call only:
* a TypeError / ValueError / IndexError whose message starts with "For '<op>'": raised
  by inference (then by the eager call too), or by the kernel for what only values show
  (an index out of range; then by the compiled graph too);
* outputs of exactly the shapes and dtypes the op inferred for those inputs, inputs
  unchanged, and the compiled graph's outputs equal to the eager call's (the executor
  runs the kernels into planned buffers: a second path to the same numbers).
Never a numpy/Python error leaking through, a kernel disagreeing with its own
inference, a NaN made from finite inputs (but by the ops whose math has one: log of a
negative, 0 / 0, …), or graph mode returning something else.
"""
import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import msops as ms
from msops import Tensor, nn
from msops.primitives.primitive import _abstract, _dtype_of, _shape_of
from test_compute_contract import CASES, _as_call_arg

DOCUMENTED = (TypeError, ValueError, IndexError)
DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float16, np.float32,
          np.float64]
FUZZ = settings(max_examples=25, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
#: ops whose math gives NaN for some finite inputs, as in numpy and MindSpore
NAN_DOMAIN = {"Log", "Sqrt", "Rsqrt", "Pow", "RealDiv", "FloorDiv", "Reciprocal",
              "Log1p", "Asin", "ACos", "Acosh", "Atanh", "Mod", "FloorMod"}
# the special functions outside their domains (scipy.special's NaNs), 0 / 0 and 0 * inf
NAN_DOMAIN |= {"Digamma", "Polygamma", "Zeta", "Erfinv", "BesselY0", "BesselY1", "BesselK0",
               "BesselK0e", "BesselK1", "BesselK1e", "Igamma", "Igammac", "TruncateDiv",
               "TruncateMod", "Inv", "Addcdiv"}


def _nan_allowed(name: str, args: tuple) -> bool:
    if name == "BatchNorm":           # inference divides by the square root of `variance`
        return len(args) > 4 and bool((np.asarray(args[4]) < 0).any())
    return name in NAN_DOMAIN

shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)
ints = st.integers(-5, 6)
constants = st.one_of(ints, st.tuples(ints), st.tuples(ints, ints), st.tuples(ints, ints, ints),
                      st.just(()), st.none())


def _array(shape: tuple, dtype: type, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.asarray(rng.standard_normal(shape) * 3).astype(dtype)


@st.composite
def perturbed(draw, args: tuple, const_inputs: tuple) -> tuple:
    """`args` with one or two of its inputs changed: a tensor's shape and/or dtype, or a
    constant's value."""
    args = list(args)
    for i in draw(st.lists(st.integers(0, len(args) - 1), min_size=1, max_size=2, unique=True)):
        a = args[i]
        if i in const_inputs or not isinstance(a, (np.ndarray, tuple)):
            args[i] = draw(constants)
            continue
        items = list(a) if isinstance(a, tuple) else [a]
        k = draw(st.integers(0, len(items) - 1))
        shape = draw(st.one_of(st.just(items[k].shape), shapes))
        dtype = draw(st.one_of(st.just(items[k].dtype.type), st.sampled_from(DTYPES)))
        items[k] = _array(shape, dtype, seed=i + 7 * k)
        args[i] = tuple(items) if isinstance(a, tuple) else items[0]
    return tuple(args)


def _inferred(prim, args: tuple):
    shapes_, dtypes_ = [], []
    for i, a in enumerate(args):
        value = list(a) if isinstance(a, tuple) and i not in prim.const_inputs else a
        shapes_.append(_abstract(value, i in prim.const_inputs, _shape_of))
        dtypes_.append(_abstract(value, i in prim.const_inputs, _dtype_of))
    return prim.infer(shapes_, dtypes_)


class _One(nn.Cell):
    """A Cell running one primitive on its tensor inputs (constants fixed)."""

    def __init__(self, prim, args: tuple) -> None:
        super().__init__()
        self.prim, self.args = prim, args
        self.tensor_at = [i for i, a in enumerate(args) if isinstance(a, Tensor)]

    def construct(self, *tensors):
        args = list(self.args)
        for i, t in zip(self.tensor_at, tensors):
            args[i] = t
        return self.prim(*args)


def _flat(outs) -> list:
    return list(outs) if isinstance(outs, tuple) else [outs]


attribute_values = st.one_of(
    ints, st.booleans(), st.floats(-1.5, 2.5), st.just(float("nan")), st.none(),
    st.tuples(ints), st.tuples(ints, ints), st.tuples(ints, ints, ints, ints),
    st.sampled_from(["same", "valid", "pad", "NCHW", "NHWC", "sum", "max", "bogus", ""]),
    st.sampled_from([ms.float16, ms.float32, ms.int32, ms.int64, ms.bool_]))


@pytest.mark.parametrize("prim,args", CASES, ids=[p.name for p, _ in CASES])
@FUZZ
@given(data=st.data())
def test_fuzz_primitive(prim, args, data):
    _check_call(prim, data.draw(perturbed(args, prim.const_inputs)))


@pytest.mark.parametrize("prim,args", [(p, a) for p, a in CASES if p.init_attrs],
                         ids=[p.name for p, _ in CASES if p.init_attrs])
@FUZZ
@given(data=st.data())
def test_fuzz_attributes(prim, args, data):
    name = data.draw(st.sampled_from(sorted(prim.init_attrs)))
    value = data.draw(attribute_values)
    try:
        made = type(prim)(**{**prim.init_attrs, name: value})
    except DOCUMENTED as err:
        assert str(err).startswith(f"For '{prim.name}'"), f"{type(err).__name__}: {err}"
        return
    _check_call(made, args)


def _check_call(prim, new: tuple) -> None:
    """Call `prim` on `new` (arrays, tuples of arrays, constants): only the outcomes the
    module's docstring accepts."""
    saved = copy.deepcopy(new)
    call_args = tuple(_as_call_arg(a) for a in new)
    # a call without tensors has no graph; random ops draw alike from a restarted seed
    graph_check = any(isinstance(a, Tensor) for a in call_args)
    try:
        out_shape, out_dtype = _inferred(prim, new)
    except DOCUMENTED as err:
        assert str(err).startswith(f"For '{prim.name}'"), f"{type(err).__name__}: {err}"
        with pytest.raises(type(err)) as eager:
            prim(*call_args)
        assert str(eager.value).startswith(f"For '{prim.name}'"), str(eager.value)
        return
    try:
        ms.set_seed(0)
        outs = _flat(prim(*call_args))
    except DOCUMENTED as err:                     # what only the values show
        assert str(err).startswith(f"For '{prim.name}'"), f"{type(err).__name__}: {err}"
        if graph_check:
            with pytest.raises(type(err)):
                _graph(prim, call_args)
        return
    want = list(zip(*(_flat(out_shape), _flat(out_dtype))))
    assert len(outs) == len(want)
    for t, (shape, dtype) in zip(outs, want):
        assert list(t.shape) == list(shape) and t.dtype == dtype, (new, t.shape, t.dtype)
    finite = all(np.isfinite(x).all() for a in new for x in _flat(a)
                 if isinstance(x, np.ndarray) and x.dtype.kind in "fc")
    if finite and not _nan_allowed(prim.name, new):
        for t in outs:
            v = t.asnumpy()
            assert v.dtype.kind not in "fc" or not np.isnan(v).any(), (new, v)
    for a, b in zip(new, saved):                  # inputs are never modified
        for x, y in zip(_flat(a), _flat(b)):
            if isinstance(x, np.ndarray):
                np.testing.assert_array_equal(x, y)
    if not graph_check:
        return
    for g, e in zip(_graph(prim, call_args), outs):
        np.testing.assert_array_equal(g.asnumpy(), e.asnumpy())


def _graph(prim, call_args: tuple) -> list:
    """The outputs of `prim` on `call_args` run as a compiled one-op Cell."""
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        cell = _One(prim, call_args)
        ms.set_seed(0)
        return _flat(cell(*(call_args[i] for i in cell.tensor_at)))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
