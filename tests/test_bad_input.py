"""Bad input names the op, everywhere (issue 16 §6): the listed cases, then a hypothesis
fuzzer over primitives' shapes, dtypes, arguments and strategies that accepts only a
result equal to numpy's or a TypeError / ValueError / IndexError naming the op."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import init, release

DOCUMENTED = (TypeError, ValueError, IndexError)


def names_the_op(err: Exception, name: str) -> None:
    assert str(err).startswith(f"For '{name}'"), f"{type(err).__name__}: {err}"


# -- the cases of the issue --------------------------------------------------------------------

def test_object_arrays_name_the_tensor_or_the_op():
    with pytest.raises(TypeError, match=r"^For 'Tensor', the 'input_data' should be numbers or "
                                        r"bools .* but got an array of dtype object\."):
        Tensor(np.array([1, "a"], dtype=object))
    with pytest.raises(TypeError, match=r"^For 'Add', the input 0 should be an array of bool, "
                                        r"int, uint, float or complex, but got dtype object\."):
        ops.Add()(np.array([1.0, None], dtype=object), Tensor(np.ones(2, np.float32)))


def test_non_native_byte_order_is_read_as_its_values():
    big = np.arange(4, dtype=">f4")
    np.testing.assert_array_equal(Tensor(big).asnumpy(), np.arange(4, dtype=np.float32))
    out = ops.Add()(big, Tensor(np.ones(4, np.float32))).asnumpy()
    np.testing.assert_array_equal(out, np.arange(4, dtype=np.float32) + 1)
    assert out.dtype.isnative


def test_softmax_cross_entropy_with_zero_classes():
    empty = Tensor(np.ones((2, 0), np.float32))
    msg = r"^For 'SoftmaxCrossEntropyWithLogits', the 'logits shape\[1\]' \(classes\) should be > 0"
    with pytest.raises(ValueError, match=msg):
        ops.SoftmaxCrossEntropyWithLogits()(empty, empty)
    with pytest.raises(ValueError, match=msg):
        nn.SoftmaxCrossEntropyWithLogits(sparse=True)(empty, Tensor(np.zeros(2, np.int32)))


def test_batchnorm_training_on_an_empty_batch():
    stats = [Tensor(np.ones(3, np.float32))] * 4
    with pytest.raises(ValueError, match=r"^For 'BatchNorm', the 'x' should hold at least one "
                                         r"value per channel in training, but got x shape "
                                         r"\[0, 3\]\."):
        ops.BatchNorm(is_training=True)(Tensor(np.ones((0, 3), np.float32)), *stats)
    y = ops.BatchNorm()(Tensor(np.ones((0, 3), np.float32)), *stats)[0]   # inference: empty
    assert y.shape == (0, 3)


def test_what_the_primitive_fuzzer_found():
    """tests/test_fuzz_primitives.py's findings, each pinned against numpy."""
    empty = Tensor(np.ones((0, 4), np.float32))
    for op in (ops.Softmax(-1), ops.LogSoftmax(-1)):          # nothing to normalise: empty
        assert op(empty).shape == (0, 4)
    assert ops.Flatten()(Tensor(np.ones(0, np.float32))).shape == (0, 1)
    erf = ops.Erf()(Tensor(np.array(0.3, np.float32)))                   # 0-d in, 0-d out
    assert erf.shape == ()
    np.testing.assert_allclose(erf.asnumpy(), math.erf(0.3), rtol=1e-6)
    got = ops.Gather()(Tensor(np.array([True, False, True])), Tensor(np.array([2, 7, 0])), 0)
    np.testing.assert_array_equal(got.asnumpy(), [True, False, True])     # 7: out of range, 0
    nothing_to_search = Tensor(np.ones((4, 0), np.float32))
    for op in (ops.Argmax(-1), ops.Argmin(-1), ops.ArgMaxWithValue(1), ops.ArgMinWithValue(1)):
        with pytest.raises(ValueError, match=rf"^For '{op.name}', x's dim 1 \(the 'axis' "
                                             r"searched\) should hold at least one element"):
            op(nothing_to_search)
        out = op(empty)                                    # no rows: nothing to search
        assert (out[0] if isinstance(out, tuple) else out).shape == (0,)
    index, value = ops.ArgMaxWithValue()(Tensor(np.array([0.5], np.float16)))
    assert index.shape == () and value.shape == () and int(index.asnumpy()) == 0
    with pytest.raises(ValueError, match=r"^For 'ReduceMin', the reduced dims of 'x' should "
                                         r"not be empty \(the minimum of no values"):
        ops.ReduceMin()(empty, 0)
    with pytest.raises(ValueError, match=r"^For 'Dropout', the 'keep_prob' should be >= "):
        ops.Dropout(1e-250)(Tensor(np.ones(3, np.float16)))


def test_a_0d_tensor_slices_to_0d():
    from msops.parallel import TensorLayout
    from msops.parallel.slices import local_slice
    got = local_slice(np.array(2.5), TensorLayout((2,), (), ()), 1)
    assert got.shape == () and got == 2.5


def test_empty_strategy():
    with pytest.raises(ValueError, match=r"^For 'MatMul', the 'in_strategy' should hold one "
                                         r"tuple per input, but got an empty tuple \(\)\."):
        ops.MatMul().shard(())


def test_context_keys_of_the_safety_nets():
    assert ms.get_context("check_collectives") is True
    assert ms.get_context("op_timeout") == 600.0
    try:
        ms.set_context(check_collectives=False, op_timeout=2)
        assert ms.get_context("check_collectives") is False
        assert ms.get_context("op_timeout") == 2.0
    finally:
        ms.set_context(check_collectives=True, op_timeout=600)
    with pytest.raises(TypeError, match="For 'set_context', the type of 'check_collectives' should be bool"):
        ms.set_context(check_collectives=1)
    with pytest.raises(ValueError, match="For 'set_context', the 'op_timeout' should be a number "
                                         "of seconds >= 0"):
        ms.set_context(op_timeout=-1)


# -- the fuzzer --------------------------------------------------------------------------------

FUZZ = settings(max_examples=25, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_, np.float16]
dims = st.lists(st.integers(0, 3), min_size=0, max_size=3)
dtypes = st.sampled_from(DTYPES)


def array(shape, dtype, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).integers(-3, 4, size=shape)
    return v.astype(dtype)


BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}


@FUZZ
@given(name=st.sampled_from(sorted(BINARY)), a=dims, b=dims, ta=dtypes, tb=dtypes)
def test_fuzz_binary(name, a, b, ta, tb):
    x, y = array(a, ta, 1), array(b, tb, 2)
    try:
        got = getattr(ops, name)()(Tensor(x), Tensor(y)).asnumpy()
    except DOCUMENTED as err:
        names_the_op(err, name)
        return
    with np.errstate(all="ignore"):
        want = BINARY[name](x, y)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-3)


REDUCE = {"ReduceSum": np.sum, "ReduceMax": np.max, "ReduceMean": np.mean}


@FUZZ
@given(name=st.sampled_from(sorted(REDUCE)), shape=dims, dtype=dtypes,
       axis=st.one_of(st.just(()), st.integers(-4, 4), st.tuples(st.integers(-4, 4))),
       keep=st.booleans())
def test_fuzz_reductions(name, shape, dtype, axis, keep):
    x = array(shape, dtype, 3)
    try:
        got = getattr(ops, name)(keep)(Tensor(x), axis).asnumpy()
    except DOCUMENTED as err:
        names_the_op(err, name)
        return
    ax = None if axis == () or x.ndim == 0 else axis     # a scalar takes axis 0 / -1 (as MindSpore)
    with np.errstate(all="ignore"):
        want = REDUCE[name](x.astype(np.float64), axis=ax, keepdims=keep)
    assert got.shape == np.shape(want)
    assert not np.isnan(got.astype(np.float64)).any() or np.isnan(want).any()
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-2, atol=1e-2)


@FUZZ
@given(shape=dims, perm=st.lists(st.integers(-1, 3), max_size=4), target=dims)
def test_fuzz_transpose_and_reshape(shape, perm, target):
    x = array(shape, np.float32, 4)
    try:
        got = ops.Transpose()(Tensor(x), tuple(perm)).asnumpy()
    except DOCUMENTED as err:
        names_the_op(err, "Transpose")
    else:
        np.testing.assert_array_equal(got, np.transpose(x, perm))
    try:
        got = ops.Reshape()(Tensor(x), tuple(target)).asnumpy()
    except DOCUMENTED as err:
        names_the_op(err, "Reshape")
    else:
        np.testing.assert_array_equal(got, x.reshape(target))


strategies = st.one_of(st.none(), st.tuples(), st.integers(), st.lists(st.integers()),
                       st.tuples(st.tuples(st.integers(-1, 4), st.integers(-1, 4)),
                                 st.tuples(st.integers(-1, 4), st.integers(-1, 4))),
                       st.tuples(st.tuples(st.integers(1, 2)), st.just("x")))


@FUZZ
@given(in_s=strategies, out_s=strategies)
def test_fuzz_shard(in_s, out_s):
    mm = ops.MatMul()
    try:
        mm.shard(in_s, out_s)
    except DOCUMENTED as err:
        names_the_op(err, "MatMul")
        return
    assert mm.in_strategy == in_s and mm.out_strategy == out_s


@FUZZ
@given(world=st.integers(1, 8), shape=dims, split=st.integers(-4, 4), concat=st.integers(-4, 4),
       count=st.integers(0, 9), dtype=dtypes)
def test_fuzz_collective_inference(world, shape, split, concat, count, dtype):
    """Collectives infer (no data moves) on a simulated world: the formula or an error."""
    init("simulation", world_size=world, rank=0)
    try:
        _collective_inference(world, shape, split, concat, count, dtype)
    finally:
        release()


def _collective_inference(world, shape, split, concat, count, dtype):
    t = ms.common.dtype.from_numpy(np.dtype(dtype))
    for make, name in ((lambda: ops.AllGather(), "AllGather"),
                       (lambda: ops.ReduceScatter(), "ReduceScatter"),
                       (lambda: ops.AlltoAll(count, split, concat), "AlltoAll")):
        try:
            out, _ = make().infer([list(shape)], [t])
        except DOCUMENTED as err:
            names_the_op(err, name)
            continue
        want = list(shape)
        if name == "AllGather":
            want[0] *= world
        elif name == "ReduceScatter":
            assert shape[0] % world == 0
            want[0] //= world
        else:
            assert count == world and shape[split] % world == 0
            want[concat] *= world
            want[split] //= world
        assert list(out) == want


def test_what_the_layer_fuzzer_found():
    """tests/test_fuzz_layers.py: a NaN slope made NaN outputs; LayerNorm(epsilon=None)
    leaked float()'s TypeError; a sparse softmax cross-entropy of 0-d logits an
    IndexError."""
    from msops import nn
    with pytest.raises(ValueError, match=r"For 'LeakyReLU', the 'alpha' should be a finite "
                                         r"number, but got nan"):
        nn.LeakyReLU(float("nan"))
    with pytest.raises(ValueError, match=r"For 'PReLU', the 'w' should be a finite number, "
                                         r"but got inf"):
        nn.PReLU(3, float("inf"))
    with pytest.raises(TypeError, match=r"For 'LayerNorm', the type of 'epsilon' should be"):
        nn.LayerNorm((4,), epsilon=None)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True)
    with pytest.raises(ValueError, match=r"For 'SoftmaxCrossEntropyWithLogits', the 'logits' "
                                         r"should be 2-D \(N, C\), but got shape \[\]"):
        loss(Tensor(np.float32(1.0)), Tensor(np.array([0], np.int32)))
