"""Primitive base: attrs from __init__, strategies, eager dispatch (infer, then kernel)."""
import re

import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from msops.common import validator
from msops.primitives import Primitive, PrimitiveWithInfer, prim_attr_register
from msops.primitives.primitive import set_trace_hook


def exactly(exc: type, message: str):
    return pytest.raises(exc, match="^" + re.escape(message) + "$")


class Scale(PrimitiveWithInfer):
    """y = x * factor (+ bias); a test op that records how often infer and kernel run."""

    @prim_attr_register
    def __init__(self, factor=2, mode="fast"):
        self.calls = []

    def infer_shape(self, x_shape, bias_shape=None):
        self.calls.append(("infer_shape", x_shape, bias_shape))
        validator.check_positive_int(len(x_shape), "x rank", self.name)
        return list(x_shape)

    def infer_dtype(self, x_dtype, bias_dtype=None):
        self.calls.append(("infer_dtype", x_dtype, bias_dtype))
        return validator.check_tensor_dtype_valid("x", x_dtype, [ms.float32, ms.int32,
                                                                  ms.float16], self.name)

    def kernel(self, x, bias=None):
        self.calls.append(("kernel", x.dtype, None if bias is None else bias.dtype))
        out = x * np.asarray(self.factor, x.dtype)
        return out if bias is None else out + bias


class SplitHalves(PrimitiveWithInfer):
    """Two outputs; the split axis is a constant input (position 1)."""

    const_inputs = (1,)

    @prim_attr_register
    def __init__(self):
        self.seen = []

    def infer_shape(self, x_shape, axis):
        self.seen.append(axis)
        half = list(x_shape)
        half[axis] //= 2
        return half, list(half)

    def infer_dtype(self, x_dtype, axis):
        return x_dtype, x_dtype

    def kernel(self, x, axis):
        return tuple(np.ascontiguousarray(p) for p in np.split(x, 2, axis))


class Total(PrimitiveWithInfer):
    """Sum of a tuple of tensors: a tuple input arrives at infer as a list of shapes."""

    @prim_attr_register
    def __init__(self):
        self.shapes = None

    def infer_shape(self, shapes):
        self.shapes = shapes
        return list(shapes[0])

    def infer_dtype(self, dtypes):
        return dtypes[0]

    def kernel(self, xs):
        return np.sum(xs, axis=0).astype(xs[0].dtype)


def test_prim_attr_register_records_arguments_and_defaults():
    s = Scale(3)
    assert s.name == "Scale"
    assert s.attrs == {"factor": 3, "mode": "fast"} == s.get_attr_dict()
    assert s.init_attrs == {"factor": 3, "mode": "fast"}
    assert s.factor == 3 and s.mode == "fast"              # attrs read as attributes
    assert vars(s)["factor"] == 3                          # real ones, not a lookup hook
    assert "__getattr__" not in vars(Primitive)
    assert Scale(mode="slow", factor=0.5).attrs == {"factor": 0.5, "mode": "slow"}


def test_add_and_del_prim_attr():
    s = Scale()
    assert s.add_prim_attr("fusion", 1) is s
    assert s.attrs["fusion"] == 1 and s.fusion == 1
    assert s.get_attr_dict() is s.attrs
    s.del_prim_attr("fusion")
    with exactly(AttributeError, "'Scale' object has no attribute 'fusion'"):
        s.fusion
    assert "fusion" not in s.init_attrs


def test_subclass_init_calling_parent_keeps_both_attrs():
    class Scale3(Scale):
        @prim_attr_register
        def __init__(self, offset=1):
            super().__init__(factor=3)

    p = Scale3()
    assert p.name == "Scale3"
    assert p.attrs == {"offset": 1, "factor": 3, "mode": "fast"}


def test_primitive_without_register():
    p = Primitive("Custom")
    assert p.name == "Custom" and p.attrs == {}
    with exactly(NotImplementedError, "'Custom' does not define infer_shape."):
        p.infer_shape([1])
    with exactly(NotImplementedError, "'Custom' does not define infer_dtype."):
        p.infer_dtype(ms.float32)
    with exactly(NotImplementedError, "'Custom' has no kernel."):
        p.kernel(np.ones(1))
    assert repr(p) == "Prim[Custom]"
    assert repr(Scale(4)) == "Prim[Scale]<factor=4, mode='fast'>"


def test_allgather_attrs_as_in_api(sim):
    sim(8, 3)
    ag = ops.AllGather()
    assert ag.name == "AllGather"
    assert ag.attrs["rank_size"] == 8 and ag.rank_size == 8
    assert ag.attrs["group"] == ag.group == "world_group"
    assert ag.attrs["fusion"] == 0 and ag.attrs["mean_flag"] is False
    assert ag.infer_shape([2, 8]) == [16, 8] and ag.infer_dtype(ms.float32) == ms.float32


def test_shard_stores_strategies_and_returns_the_primitive():
    s = Scale()
    assert s.in_strategy is None and s.out_strategy is None
    assert s.shard(((2, 1), (1, 4))) is s
    assert s.in_strategy == ((2, 1), (1, 4)) and s.attrs["in_strategy"] == ((2, 1), (1, 4))
    assert s.out_strategy is None and "out_strategy" not in s.attrs
    assert s.shard(((2, 4),), ((8, 1),)) is s
    assert s.in_strategy == ((2, 4),) and s.out_strategy == ((8, 1),)
    assert s.attrs["out_strategy"] == ((8, 1),)
    assert s.set_strategy(((1, 1),)) is s                     # the older spelling
    assert s.in_strategy == ((1, 1),) and s.out_strategy is None
    assert issubclass(ops.AllGather, Primitive)                # every op has shard
    assert repr(s) == "Prim[Scale]<factor=2, mode='fast'>"    # strategies are not shown


def test_shard_format_errors():
    s = Scale()
    with exactly(TypeError, "For 'Scale', the 'in_strategy' should be a tuple of tuples of "
                            "ints, but got list: [[1, 2]]."):
        s.shard([[1, 2]])
    with exactly(TypeError, "For 'Scale', the 'in_strategy[1]' should be a tuple of ints, "
                            "but got list: [1]."):
        s.shard(((1,), [1]))
    with exactly(TypeError, "For 'Scale', every value of 'in_strategy[0]' should be an int, "
                            "but got float: 2.0 in (1, 2.0)."):
        s.shard(((1, 2.0),))
    with exactly(TypeError, "For 'Scale', every value of 'out_strategy[0]' should be an int, "
                            "but got bool: True in (True,)."):
        s.shard(((1,),), ((True,),))
    with exactly(ValueError, "For 'Scale', the 'out_strategy' needs an 'in_strategy', "
                             "but got in_strategy=None, out_strategy=((1,),)."):
        s.shard(None, ((1,),))
    with exactly(TypeError, "For 'Scale', the 'in_strategy' should be a tuple of tuples of "
                            "ints, but got int: 4."):
        s.set_strategy(4)
    assert s.in_strategy is None                               # a failed shard changes nothing


def test_eager_call_runs_infer_then_kernel():
    s = Scale(3)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = s(Tensor(x))
    assert isinstance(y, Tensor) and y.dtype == ms.float32
    np.testing.assert_array_equal(y.asnumpy(), x * 3)
    assert [c[0] for c in s.calls] == ["infer_shape", "infer_dtype", "kernel"]
    assert s.calls[0][1] == [2, 3] and s.calls[1][1] == ms.float32


def test_infer_errors_stop_the_kernel():
    s = Scale()
    with exactly(TypeError, "For 'Scale', the 'x' should be a Tensor with dtype in "
                            "[Float32, Int32, Float16], but got Int8."):
        s(Tensor(np.ones(3, np.int8)))
    with exactly(ValueError, "For 'Scale', the 'x rank' should be a positive int, but got 0."):
        s(Tensor(np.float32(1.0)))
    assert "kernel" not in [c[0] for c in s.calls]


def test_infer_is_cached_per_signature():
    s = Scale()
    a = Tensor(np.ones((2, 3), np.float32))
    for _ in range(3):
        s(a)
    s(Tensor(np.zeros((2, 3), np.float32)))                    # same shape and dtype
    assert [c[0] for c in s.calls].count("infer_shape") == 1
    assert [c[0] for c in s.calls].count("kernel") == 4
    s(Tensor(np.ones((4,), np.float32)))                       # new shape
    s(Tensor(np.ones((2, 3), np.float16)))                     # new dtype
    assert [c[0] for c in s.calls].count("infer_shape") == 3


class Plus(PrimitiveWithInfer):
    """x + y with numpy broadcasting; records the dtypes its kernel receives."""

    @prim_attr_register
    def __init__(self):
        self.kernel_dtypes = None

    def infer_shape(self, x_shape, y_shape):
        return list(np.broadcast_shapes(tuple(x_shape), tuple(y_shape)))

    def infer_dtype(self, x_dtype, y_dtype):
        return x_dtype

    def kernel(self, x, y):
        self.kernel_dtypes = (x.dtype, y.dtype)
        return x + y


@pytest.mark.parametrize("tensor_first", [True, False])
@pytest.mark.parametrize("np_dtype,scalar", [(np.float16, 2), (np.float16, 0.5),
                                             (np.int32, 3), (np.float32, 1.5),
                                             (np.uint8, 7), (np.complex64, 2.5)])
def test_python_scalars_take_the_tensor_dtype(tensor_first, np_dtype, scalar):
    plus = Plus()
    x = np.arange(4).astype(np_dtype)
    y = plus(Tensor(x), scalar) if tensor_first else plus(scalar, Tensor(x))
    assert plus.kernel_dtypes == (np.dtype(np_dtype), np.dtype(np_dtype))
    np.testing.assert_array_equal(y.asnumpy(), x + np.asarray(scalar, np_dtype))
    assert y.asnumpy().dtype == np.dtype(np_dtype)


def test_a_scalar_that_does_not_fit_keeps_its_own_type():
    plus = Plus()
    y = plus(Tensor(np.array([1, 2], np.int32)), 0.5)          # a float beside ints: float32
    assert plus.kernel_dtypes == (np.dtype(np.int32), np.dtype(np.float32))
    np.testing.assert_array_equal(y.asnumpy(), np.array([1.5, 2.5]))
    plus(Tensor(np.array([1.0], np.float32)), 1j)              # complex beside floats
    assert plus.kernel_dtypes == (np.dtype(np.float32), np.dtype(np.complex128))
    plus(2, 3.5)                                               # no tensor: int64 and float32
    assert plus.kernel_dtypes == (np.dtype(np.int64), np.dtype(np.float32))


def test_const_inputs_arrive_as_values_and_tuple_outputs():
    p = SplitHalves()
    x = np.arange(12, dtype=np.int32).reshape(2, 6)
    left, right = p(Tensor(x), 1)
    np.testing.assert_array_equal(left.asnumpy(), x[:, :3])
    np.testing.assert_array_equal(right.asnumpy(), x[:, 3:])
    p(Tensor(x), Tensor(np.asarray(0)))                        # a Tensor constant -> its value
    assert p.seen == [1, 0]
    assert p.infer_shape([4, 6], 0) == ([2, 6], [2, 6])


def test_tuple_input_arrives_as_list_of_shapes():
    t = Total()
    xs = [np.full((2,), i, np.float32) for i in range(3)]
    y = t((Tensor(xs[0]), Tensor(xs[1]), Tensor(xs[2])))
    assert t.shapes == [[2], [2], [2]]
    np.testing.assert_array_equal(y.asnumpy(), xs[0] + xs[1] + xs[2])


def test_non_tensor_input_is_type_error():
    with exactly(TypeError, "For 'Scale', the input 0 should be a Tensor, but got str."):
        Scale()("abc")


def test_trace_hook_intercepts_calls():
    seen = []
    prev = set_trace_hook(lambda prim, args: seen.append((prim.name, len(args))) or "traced")
    try:
        assert Scale()(Tensor([1.0])) == "traced"
    finally:
        assert set_trace_hook(prev) is not None
    assert seen == [("Scale", 1)]
    np.testing.assert_array_equal(Scale()(Tensor([1.0])).asnumpy(), [2.0])


# -- eager dispatch: signatures cached, kernels lowered once per signature ---------------------

class Pick(PrimitiveWithInfer):
    """x[indices]: a constant list input (position 1) that a caller may change in place."""

    const_inputs = (1,)

    @prim_attr_register
    def __init__(self):
        self.seen = []

    def infer_shape(self, x_shape, indices):
        self.seen.append(list(indices))
        for i in indices:
            validator.check_int_range(i, 0, x_shape[0], validator.Rel.INC_LEFT, "index",
                                      self.name)
        return [len(indices)] + list(x_shape[1:])

    def infer_dtype(self, x_dtype, indices):
        return x_dtype

    def kernel(self, x, indices):
        return x[list(indices)]


class Lowered(Scale):
    """Scale whose lower() records what it was given and returns a marked kernel."""

    @prim_attr_register
    def __init__(self):
        super().__init__()
        self.lowered = []

    def lower(self, in_abstracts, out_abstract):
        self.lowered.append(([(a.kind, a.shape, a.dtype) for a in in_abstracts],
                             (out_abstract.shape, out_abstract.dtype)))
        factor = len(self.lowered) * 10
        return lambda x: x * np.asarray(factor, x.dtype)


def test_alternating_signatures_infer_once_each():
    s = Scale()
    a, b = Tensor(np.ones((2, 3), np.float32)), Tensor(np.ones(4, np.int32))
    for _ in range(3):
        np.testing.assert_array_equal(s(a).asnumpy(), np.full((2, 3), 2, np.float32))
        np.testing.assert_array_equal(s(b).asnumpy(), np.full(4, 2, np.int32))
    names = [c[0] for c in s.calls]
    assert names.count("infer_shape") == 2 and names.count("kernel") == 6


def test_an_invalid_signature_raises_on_every_call():
    s = Scale()
    good, bad = Tensor(np.ones(2, np.float32)), Tensor(np.ones(2, np.int8))
    for _ in range(2):
        s(good)
        with exactly(TypeError, "For 'Scale', the 'x' should be a Tensor with dtype in "
                                "[Float32, Int32, Float16], but got Int8."):
            s(bad)
    assert [c[0] for c in s.calls].count("kernel") == 2


def test_eager_calls_run_the_kernel_lowered_for_their_signature():
    p = Lowered()
    x = np.arange(3, dtype=np.float32)
    for _ in range(2):
        np.testing.assert_array_equal(p(Tensor(x)).asnumpy(), x * 10)
    np.testing.assert_array_equal(p(Tensor(x.reshape(3, 1))).asnumpy(), x.reshape(3, 1) * 20)
    np.testing.assert_array_equal(p(Tensor(x)).asnumpy(), x * 10)      # the first one's kernel
    assert p.lowered == [([("input", (3,), ms.float32)], ((3,), ms.float32)),
                         ([("input", (3, 1), ms.float32)], ((3, 1), ms.float32))]


def test_constant_inputs_are_part_of_the_signature():
    p = SplitHalves()
    x = Tensor(np.arange(24, dtype=np.int32).reshape(4, 6))
    for axis in (1, 1, 0, 1, 0):
        left, _ = p(x, axis)
        np.testing.assert_array_equal(left.asnumpy(), np.split(x.asnumpy(), 2, axis)[0])
    assert p.seen == [1, 0]


def test_a_constant_list_changed_in_place_is_a_new_signature():
    p = Pick()
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    idx = [0, 1]
    for _ in range(2):
        np.testing.assert_array_equal(p(Tensor(x), idx).asnumpy(), x[[0, 1]])
    idx[0] = 4
    np.testing.assert_array_equal(p(Tensor(x), idx).asnumpy(), x[[4, 1]])
    idx[1] = 5                                           # out of range: inference says so
    with exactly(ValueError, "For 'Pick', the 'index' should be in [0, 5), but got 5."):
        p(Tensor(x), idx)
    assert p.seen == [[0, 1], [4, 1], [4, 5]]
    idx = (3, 3)                                         # a tuple: the same signature as a list
    np.testing.assert_array_equal(p(Tensor(x), idx).asnumpy(), x[[3, 3]])
    np.testing.assert_array_equal(p(Tensor(x), [3, 3]).asnumpy(), x[[3, 3]])
    assert p.seen[-1] == [3, 3] and len(p.seen) == 4


def test_tuple_inputs_are_cached_per_shapes_and_length():
    t = Total()
    a, b = np.ones(2, np.float32), np.full(2, 3, np.float32)
    for _ in range(2):
        np.testing.assert_array_equal(t((Tensor(a),)).asnumpy(), a)
        np.testing.assert_array_equal(t((Tensor(a), Tensor(b))).asnumpy(), a + b)
        np.testing.assert_array_equal(t([Tensor(b)]).asnumpy(), b)     # a list: as a tuple
    np.testing.assert_array_equal(t((Tensor(b.reshape(1, 2)),)).asnumpy(), b.reshape(1, 2))
    assert t.shapes == [[1, 2]]


def test_trace_hook_intercepts_a_signature_already_seen():
    s = Scale()
    x = Tensor([1.0])
    s(x)
    prev = set_trace_hook(lambda prim, args: "traced")
    try:
        assert s(x) == "traced"
    finally:
        set_trace_hook(prev)
    np.testing.assert_array_equal(s(x).asnumpy(), [2.0])


def test_eager_signature_cache_is_bounded():
    from msops.primitives.primitive import CACHE_LIMIT
    s = Scale()
    for n in range(1, CACHE_LIMIT + 20):
        s(Tensor(np.ones(n, np.float32)))
    assert len(s._kernels) == CACHE_LIMIT
    np.testing.assert_array_equal(s(Tensor(np.ones(1, np.float32))).asnumpy(), [2.0])


def test_a_repeated_call_with_constants_of_another_kind_takes_their_values(sim):
    """The last signature's shortcut compares constants by value; arrays and lists among
    them (which could compare ambiguously or change in place) take the general path."""
    sim(1, 0)
    reshape = ops.Reshape()
    x = Tensor(np.arange(6, dtype=np.float32))
    assert reshape(x, (2, 3)).shape == (2, 3)
    assert reshape(x, (3, 2)).shape == (3, 2)
    assert reshape(x, Tensor(np.array([6, 1]))).shape == (6, 1)
    shape = [1, 6]
    assert reshape(x, shape).shape == (1, 6)
    shape[:] = [2, 3]
    assert reshape(x, shape).shape == (2, 3)
    np.testing.assert_array_equal(reshape(x, (2, 3)).asnumpy(), np.arange(6).reshape(2, 3))
