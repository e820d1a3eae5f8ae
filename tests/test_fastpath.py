"""The C fast path (msops._fastpath) and its pure-Python twins behave alike.

Each twin is tested on its own here (both are importable in one process); the whole
suite runs on whichever msops selected, and tests/ranks files run under both
(`PURE_PYTHON_RANKS`).
"""
import gc
import os

import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor
from msops.primitives import buffer_call, gather_check, outputs, primitive
from msops.primitives.native import fastpath
from msops.primitives.primitive import set_trace_hook

F32 = np.dtype(np.float32)
CALL_BASES = [primitive._PyCall] + ([fastpath.FastCall] if fastpath else [])
BUFFER_CALLS = [buffer_call._py_buffer_call] + ([fastpath.BufferCall] if fastpath else [])
GATHER_CHECKS = [gather_check._py_gather_check] + ([fastpath.GatherCheck] if fastpath else [])


def test_the_extension_is_built_and_used():
    if os.environ.get("MSOPS_PURE_PYTHON", "") not in ("", "0"):
        assert fastpath is None and primitive.Primitive.__mro__[1] is primitive._PyCall
        return
    assert fastpath is not None, "msops._fastpath was not built: pip install -e . needs a C compiler"
    assert issubclass(ms.ops.AllGather, fastpath.FastCall)


def caller(base):
    class Caller(base):
        def __init__(self):
            self.slow = []

        def _call(self, *args):
            self.slow.append(args)
            return "slow"
    return Caller()


def doubled(v):
    return v * 2


@pytest.fixture(params=CALL_BASES, ids=lambda b: b.__name__)
def c(request):
    return caller(request.param)


def test_the_last_one_tensor_signature_runs_its_kernel_at_once(c):
    x = np.arange(3, dtype=np.float32)
    assert c(Tensor(x)) == "slow"                         # nothing remembered yet
    c._set_last((3,), F32, doubled, ms.float32)
    for arg in (Tensor(x), Parameter(Tensor(x), "p")):
        got = c(arg)
        assert type(got) is Tensor and got.dtype == ms.float32
        np.testing.assert_array_equal(got.asnumpy(), x * 2)
    assert len(c.slow) == 1
    for other in (Tensor(x[:2]), Tensor(x.astype(np.float64)), Tensor(x.reshape(1, 3)), x):
        assert c(other) == "slow"                          # another signature, or no Tensor
    assert c(Tensor(x), Tensor(x)) == "slow" and c() == "slow"
    assert len(c.slow) == 7


def test_results_that_are_not_one_array_are_wrapped_as_tensor_does(c):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    c._set_last((2, 3), x.dtype, lambda v: (v, v.T), None)
    a, b = c(Tensor(x))
    assert b.asnumpy().flags.c_contiguous and b.dtype == ms.int32
    np.testing.assert_array_equal(b.asnumpy(), x.T)
    c._set_last((2, 3), x.dtype, lambda v: None, None)
    assert c(Tensor(x)) is None
    c._set_last((2, 3), x.dtype, lambda v: v.T, None)      # not contiguous: made so
    got = c(Tensor(x))
    assert got.asnumpy().flags.c_contiguous
    np.testing.assert_array_equal(got.asnumpy(), x.T)


def test_a_kernel_error_propagates(c):
    def fails(v):
        raise ValueError("boom")
    c._set_last((1,), F32, fails, ms.float32)
    with pytest.raises(ValueError, match="^boom$"):
        c(Tensor(np.ones(1, np.float32)))


def test_the_last_tensor_and_constants_signature(c):
    x = np.arange(4, dtype=np.float32)
    seen = []

    def kernel(v, *rest):
        seen.append(rest)
        flat = [r for c in rest for r in (c if isinstance(c, tuple) else (c,))]
        return (v[0] if isinstance(v, list) else v) + sum(flat)
    c._set_last_with((4,), F32, True, (2,), kernel)           # prim((t,), 2)
    np.testing.assert_array_equal(c((Tensor(x),), 2).asnumpy(), x + 2)
    assert seen == [(2,)]
    for args in [((Tensor(x),), 3), (Tensor(x), 2), ((Tensor(x), Tensor(x)), 2),
                 ((Tensor(x[:2]),), 2), ((Tensor(x),),)]:
        assert c(*args) == "slow"
    c._set_last_with((4,), F32, False, ((1, 2), 5), kernel)   # prim(t, (1, 2), 5)
    np.testing.assert_array_equal(c(Tensor(x), (1, 2), 5).asnumpy(), x + 8)
    assert c(Tensor(x), [1, 2], 5) == "slow"                  # a list is not the tuple
    assert len(seen) == 2 and len(c.slow) == 6


def test_while_a_graph_is_traced_every_call_takes_the_python_path(c):
    x = Tensor(np.ones(2, np.float32))
    c._set_last((2,), F32, doubled, ms.float32)
    prev = set_trace_hook(lambda prim, args: "traced")
    try:
        assert c(x) == "slow"
    finally:
        set_trace_hook(prev)
    np.testing.assert_array_equal(c(x).asnumpy(), [2, 2])


# -- the buffer-call kernel --------------------------------------------------------------------

class Recorder:
    """Stands in for an mpi4py buffer method (the kernel's plumbing, not MPI, is tested):
    writes the send array's sum into every element of the output."""

    def __init__(self):
        self.calls = []

    def __call__(self, send, recv, *extra):
        self.calls.append((send, recv, extra))
        recv[0][...] = send[0].sum()


def reraise(prim, err):
    raise RuntimeError(f"For '{prim}', {err}")


@pytest.fixture(params=BUFFER_CALLS, ids=lambda f: f.__name__)
def make(request):
    return request.param


def test_buffer_call_passes_the_specs_and_reuses_a_dropped_output(make):
    method = Recorder()
    kernel = make(method, ("S",), ("R", (1, 2)), ("op",), (2, 3), np.dtype(np.float64), None,
                  "Op", reraise)
    x = np.arange(4.0)
    out = kernel(x)
    (send, recv, extra), = method.calls
    assert send[0] is x and send[1:] == ["S"] and recv[0] is out and recv[1:] == ["R", (1, 2)]
    assert extra == ("op",) and out.shape == (2, 3) and out.dtype == np.float64
    np.testing.assert_array_equal(out, np.full((2, 3), 6.0))
    address = out.ctypes.data
    del out, send, recv, method.calls[:]
    again = kernel(x + 1, "ignored", 3)                      # constants after x are ignored
    assert again.ctypes.data == address                       # nothing referred to it
    kept = kernel(x)                                          # `again` is held: a new one
    assert kept.ctypes.data != address
    np.testing.assert_array_equal(again, np.full((2, 3), 10.0))
    np.testing.assert_array_equal(kept, np.full((2, 3), 6.0))
    view = kept[1:]
    del kept, method.calls[:]
    assert kernel(x).ctypes.data not in (address, view.ctypes.data - 24)   # a view holds it


def test_buffer_call_with_a_maker_takes_each_output_from_it(make):
    made = []

    def maker():
        made.append(np.empty(2, np.int32))
        return made[-1]
    kernel = make(Recorder(), (), (), (), (2,), np.dtype(np.int32), maker, "Op", reraise)
    a, b = kernel(np.array([1, 2], np.int32)), kernel(np.array([3, 4], np.int32))
    assert a is made[0] and b is made[1]
    np.testing.assert_array_equal(a, [3, 3])
    np.testing.assert_array_equal(b, [7, 7])


def test_buffer_call_errors_go_through_reraise(make):
    def fails(send, recv):
        raise OSError("link down")
    kernel = make(fails, (), (), (), (1,), F32, None, "AllGather", reraise)
    with pytest.raises(RuntimeError, match="^For 'AllGather', link down$"):
        kernel(np.ones(1, np.float32))

    def returns(prim, err):                                  # a reraise that does not raise
        return None
    kernel = make(fails, (), (), (), (1,), F32, None, "AllGather", returns)
    with pytest.raises(OSError, match="^link down$"):
        kernel(np.ones(1, np.float32))


def test_buffer_call_runs_before_ahead_and_its_errors_go_through_reraise(make):
    order = []

    def reraise(prim, err):                     # as comm_ops': MPI errors only, others pass
        if isinstance(err, OSError):
            raise RuntimeError(f"For '{prim}', {err}")

    def method(send, recv):
        order.append("method")
        recv[0][...] = send[0]
    kernel = make(method, (), (), (), (2,), F32, None, "AllToAllV", reraise, False,
                  lambda: order.append("before"))
    out = kernel(np.array([1, 2], np.float32))
    assert order == ["before", "method"]
    np.testing.assert_array_equal(out, [1, 2])

    def refuses():
        raise ValueError("counts disagree")
    kernel = make(method, (), (), (), (2,), F32, None, "AllToAllV", reraise, False, refuses)
    with pytest.raises(ValueError, match="^counts disagree$"):       # passed on as it is
        kernel(np.ones(2, np.float32))

    def link_down():
        raise OSError("link down")
    kernel = make(method, (), (), (), (2,), F32, None, "AllToAllV", reraise, False, link_down)
    with pytest.raises(RuntimeError, match="^For 'AllToAllV', link down$"):
        kernel(np.ones(2, np.float32))
    assert order == ["before", "method"]                             # no data moved


@pytest.mark.parametrize("make", GATHER_CHECKS, ids=lambda f: f.__name__)
def test_gather_check_compares_the_cells_the_gather_filled(make):
    table = np.zeros((2, 3), np.int64)
    left, right = np.array([0, 1, 2], np.intp), np.array([3, 4, 5], np.intp)
    seen = []

    def gather(row):                            # as an Allgather of one row: fills the table
        table[...] = row

    def mismatch():
        seen.append(table.copy())
        raise ValueError(f"rows differ: {table.tolist()}")
    check = make(gather, ([7, 8, 9],), table, left, right, mismatch)
    assert check() is None and not seen
    check = make(gather, ([[7, 8, 9], [7, 8, 1]],), table, left, right, mismatch)
    with pytest.raises(ValueError, match=r"^rows differ: \[\[7, 8, 9\], \[7, 8, 1\]\]$"):
        check()
    assert len(seen) == 1                       # called once, after the gather
    check = make(gather, ([[7, 8, 9], [7, 8, 1]],), table, left, right, lambda: None)
    with pytest.raises(RuntimeError, match="mismatch\\(\\) should raise"):
        check()

    def link_down(row):
        raise OSError("link down")
    with pytest.raises(OSError, match="^link down$"):       # the gather's error, unchanged
        make(link_down, ([1, 2, 3],), table, left, right, mismatch)()
    assert len(seen) == 1


@pytest.mark.parametrize("make", GATHER_CHECKS, ids=lambda f: f.__name__)
def test_gather_check_refuses_what_it_cannot_read(make):
    table, idx = np.zeros(4, np.int64), np.array([0, 1], np.intp)
    with pytest.raises(IndexError, match=r"^right\[1\] = 4 is outside the table of 4 cells$"):
        make(print, (), table, idx, np.array([0, 4], np.intp), print)
    with pytest.raises(ValueError, match="^left and right should have the same size$"):
        make(print, (), table, idx, idx[:1], print)
    with pytest.raises(TypeError, match="table should be an aligned C-contiguous int64"):
        make(print, (), table.astype(np.int32), idx, idx, print)
    with pytest.raises(TypeError, match="table should be an aligned C-contiguous int64"):
        make(print, (), np.zeros((2, 2), np.int64).T, idx, idx, print)


def test_held_outputs_stay_within_their_limit_and_are_given_back(monkeypatch):
    monkeypatch.setattr(outputs, "HELD_LIMIT", outputs._Held.nbytes + 100)
    before = outputs._Held.nbytes

    def kernel():
        return buffer_call.buffer_call("Op", Recorder(), (), (), (), (10,), np.dtype(np.float64),
                                       reraise)
    first = kernel()                                          # 80 bytes: held
    assert outputs._Held.nbytes == before + 80
    second = kernel()                                         # no room: new arrays each call
    assert outputs._Held.nbytes == before + 80
    x = np.ones(1)
    a = second(x)
    del a
    b = second(x)
    assert b.base is None and second(x) is not b
    del first
    gc.collect()
    assert outputs._Held.nbytes == before                     # given back with the kernel


def test_outputs_of_changing_length_are_held_within_the_limit_and_given_back(monkeypatch):
    monkeypatch.setattr(outputs, "HELD_LIMIT", outputs._Held.nbytes + 100)
    before = outputs._Held.nbytes
    take = outputs.length_maker(np.dtype(np.float64))
    a = take(4)
    address = a.ctypes.data
    assert a.shape == (4,) and outputs._Held.nbytes == before + 32
    b = take(4)                                               # `a` is referred to: a new one
    assert b.ctypes.data != address and outputs._Held.nbytes == before + 32
    del a
    address = b.ctypes.data
    del b
    assert take(4).ctypes.data == address                     # dropped, the same length
    c = take(5)                                               # another length
    assert c.shape == (5,) and outputs._Held.nbytes == before + 40
    assert take(20).shape == (20,) and outputs._Held.nbytes == before   # over the limit
    take(3)
    del take
    gc.collect()
    assert outputs._Held.nbytes == before                     # given back with the maker


def test_buffer_call_with_one_spec_and_tupled_io(make):
    seen = []

    def bcast(spec, root):
        seen.append((spec, root))
        spec[0][...] = 7
    x = np.zeros(3, np.int64)
    send_only = make(bcast, ("T",), None, (0,), (3,), x.dtype, None, "Broadcast", reraise, True)
    got = send_only([x])                                     # a root: x itself is the result
    assert type(got) is tuple and len(got) == 1 and got[0] is x
    assert seen[-1][0][0] is x and seen[-1][0][1:] == ["T"] and seen[-1][1] == 0
    recv_only = make(bcast, None, ("T",), (0,), (3,), x.dtype, None, "Broadcast", reraise, True)
    out, = recv_only((x,))                                   # another rank: a new output
    assert out is not x and seen[-1][0][0] is out
    np.testing.assert_array_equal(out, [7, 7, 7])
    with pytest.raises(TypeError):
        recv_only([x, x])


def test_constants_that_cannot_be_compared_take_the_python_path(c):
    x = np.arange(4, dtype=np.float32)
    c._set_last_with((4,), F32, False, ((2, 2),), lambda v, counts: v)
    assert c(Tensor(x), np.array([2, 2])) == "slow"        # array == tuple has no truth value


def test_buffer_call_keeps_no_input_alive(make):
    import weakref

    def fill(send, recv):
        recv[0][...] = send[0].sum()
    kernel = make(fill, ("S",), ("R",), (), (2,), np.dtype(np.float64), None, "Op", reraise)
    kernel(np.zeros(2))
    x = np.arange(2.0)
    ref = weakref.ref(x)
    out = kernel(x)
    del x
    gc.collect()
    assert ref() is None                                     # neither the kernel nor a spec
    np.testing.assert_array_equal(out, [1.0, 1.0])


@pytest.mark.parametrize("make", BUFFER_CALLS, ids=lambda f: f.__name__)
def test_a_remembered_buffer_call_runs_as_any_kernel(c, make):
    # (the C FastCall runs a C BufferCall's core at once: it must not show)
    x = np.arange(3, dtype=np.float32)

    def fill(send, recv):
        recv[0][...] = send[0].sum()
    kernel = make(fill, ("S",), ("R",), (), (2,), F32, None, "Op", reraise)
    c._set_last((3,), F32, kernel, ms.float32)
    got = c(Tensor(x))
    assert type(got) is Tensor and got.dtype == ms.float32
    np.testing.assert_array_equal(got.asnumpy(), [3, 3])
    address = got.asnumpy().ctypes.data
    del got
    assert c(Tensor(x + 1)).asnumpy().ctypes.data == address          # dropped: reused

    def bcast(spec, root):
        spec[0][...] = 7
    for send, recv, expect_x in (("T", None, True), (None, "T", False)):   # root, other ranks
        kernel = make(bcast, send and (send,), recv and (recv,), (0,), (3,), F32, None,
                      "Broadcast", reraise, True)
        c._set_last_with((3,), F32, True, (), kernel)
        y = x.copy()
        got = c((Tensor(y),))
        assert type(got) is tuple and len(got) == 1 and type(got[0]) is Tensor
        assert (got[0].asnumpy() is y) == expect_x and got[0].dtype == ms.float32
        np.testing.assert_array_equal(got[0].asnumpy(), [7, 7, 7])
    assert c.slow == []

    def fails(send, recv):
        raise OSError("link down")
    c._set_last((3,), F32, make(fails, (), (), (), (1,), F32, None, "AllGather", reraise), None)
    with pytest.raises(RuntimeError, match="^For 'AllGather', link down$"):
        c(Tensor(x))


# -- results -----------------------------------------------------------------------------------

def test_an_output_that_is_the_input_is_the_input_itself(c):
    x = np.arange(3, dtype=np.float32)
    t, p = Tensor(x), Parameter(Tensor(x.copy()), "p")
    c._set_last((3,), F32, lambda v: v, ms.float32)
    assert c(t) is t
    got = c(p)                                  # a Parameter's data: a new, plain Tensor
    assert type(got) is Tensor and got.asnumpy() is p.asnumpy()
    c._set_last_with((3,), F32, True, (), lambda v: (v[0],))   # Broadcast's root, in Python
    args = (t,)
    assert c(args) is args
    got = c((p,))
    assert type(got) is tuple and type(got[0]) is Tensor and got[0].asnumpy() is p.asnumpy()
    assert c.slow == []
    identity = ms.ops.Identity()
    assert identity(t) is t and identity(t) is t               # the first call and the next
    assert type(identity(p)) is Tensor


@pytest.mark.parametrize("make", BUFFER_CALLS, ids=lambda f: f.__name__)
def test_a_result_someone_still_refers_to_is_never_handed_out_again(c, make):
    import weakref

    def fill(send, recv):
        recv[0][...] = send[0].sum()
    x = np.arange(3, dtype=np.float32)
    c._set_last((3,), F32, make(fill, ("S",), ("R",), (), (3,), F32, None, "Op", reraise),
                ms.float32)
    first = c(Tensor(x))
    second = c(Tensor(x + 1))                                  # `first` is still referred to
    assert second is not first
    np.testing.assert_array_equal(first.asnumpy(), [3, 3, 3])
    np.testing.assert_array_equal(second.asnumpy(), [6, 6, 6])
    again = c(second)                                          # its own result as the input
    assert again is not second
    np.testing.assert_array_equal(second.asnumpy(), [6, 6, 6])
    np.testing.assert_array_equal(again.asnumpy(), [18, 18, 18])
    again.tag = "mine"                                         # an attribute, then dropped
    del first, second, again
    assert not hasattr(c(Tensor(x)), "tag")
    ref = weakref.ref(c(Tensor(x)))                            # only a weak reference left
    np.testing.assert_array_equal(c(Tensor(x + 2)).asnumpy(), [9, 9, 9])
    gc.collect()
    assert ref() is None                                       # not kept, not refilled
    array = c(Tensor(x)).asnumpy()                             # its array outlives the Tensor
    np.testing.assert_array_equal(c(Tensor(x + 1)).asnumpy(), [6, 6, 6])
    np.testing.assert_array_equal(array, [3, 3, 3])

    def bcast(spec, root):
        spec[0][...] = spec[0].size + root
    c._set_last_with((3,), F32, True, (), make(bcast, None, ("T",), (1,), (3,), F32, None,
                                                "Broadcast", reraise, True))
    kept = c((Tensor(x),))[0]                                  # the Tensor outlives its tuple
    other = c((Tensor(x),))
    assert other[0] is not kept and other[0].asnumpy() is not kept.asnumpy()
    np.testing.assert_array_equal(kept.asnumpy(), [4, 4, 4])
    assert c.slow == []


@pytest.mark.parametrize("make", BUFFER_CALLS, ids=lambda f: f.__name__)
def test_results_keep_alive_no_output_the_kernel_does_not(c, make):
    import weakref

    def fill(send, recv):
        recv[0][...] = send[0].sum()
    x = Tensor(np.arange(3, dtype=np.float32))
    fresh = make(fill, ("S",), ("R",), (), (3,), F32, lambda: np.empty(3, F32), "Op", reraise)
    for kernel in (fresh, lambda v: v * 2):                   # a new output every call
        c._set_last((3,), F32, kernel, ms.float32)
        c(x)
        ref = weakref.ref(c(x).asnumpy())
        gc.collect()
        assert ref() is None
