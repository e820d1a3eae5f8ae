"""comm_func and mint.distributed in one process: an MPI world of 1 (values, return
conventions, in-place writes, handles, graph mode) and a simulated world (what it refuses),
and every argument error. Values on 2 and 4 ranks: tests/ranks/test_comm_func.py."""
import re

import numpy as np
import pytest

import msops as ms
from msops import Tensor
from msops.communication import (SimulationError, comm_func, create_group, init,
                                 is_initialized, release)
from msops.mint import distributed as dist


def exactly(exc: type, message: str):
    return pytest.raises(exc, match="^" + re.escape(message) + "$")


@pytest.fixture
def world1():
    """An MPI world of one process, released afterwards."""
    init()
    yield
    release()


def arange(*shape, dtype=np.float32):
    return np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)


# -- comm_func in a world of 1: the group's only rank -----------------------------------------

def test_comm_func_return_conventions_and_values(world1):
    x = arange(4, 3)
    for async_op in (False, True):
        for out, h in (comm_func.all_reduce(Tensor(x), async_op=async_op),
                       comm_func.all_gather_into_tensor(Tensor(x), async_op=async_op),
                       comm_func.reduce_scatter_tensor(Tensor(x), "max", async_op=async_op),
                       comm_func.all_to_all_single_with_output_shape((4, 3), Tensor(x),
                                                                     async_op=async_op)):
            np.testing.assert_array_equal(out.asnumpy(), x)
            if async_op:
                assert isinstance(h, comm_func.CommHandle) and h.wait() is None
            else:
                assert h is None
    for out in (comm_func.reduce(Tensor(x), 0, "min"), comm_func.broadcast(Tensor(x), 0),
                comm_func.gather_into_tensor(Tensor(x), 0), comm_func.scatter_tensor(Tensor(x))):
        assert isinstance(out, Tensor)
        np.testing.assert_array_equal(out.asnumpy(), x)
    outs, h = comm_func.all_to_all_with_output_shape([(3, 4)], [Tensor(x)], async_op=True)
    assert isinstance(outs, tuple) and h.wait() is None
    np.testing.assert_array_equal(outs[0].asnumpy(), x.reshape(3, 4))
    assert comm_func.barrier() is None and comm_func.barrier("hccl_world_group") is None


def test_comm_func_results_are_new_tensors(world1):
    x = Tensor(arange(2, 2))
    out, _ = comm_func.all_reduce(x)
    out.asnumpy()[...] = 7
    np.testing.assert_array_equal(x.asnumpy(), arange(2, 2))


def test_comm_func_reduce_ops_and_dtypes(world1):
    for dtype, op in ((np.int32, "bxor"), (np.bool_, "lor"), (np.float16, "prod")):
        x = (arange(6) % 3).astype(dtype)
        np.testing.assert_array_equal(comm_func.all_reduce(Tensor(x), op)[0].asnumpy(), x)


def test_comm_func_compiled(world1):
    x = arange(4, 2)

    @ms.jit
    def f(t):
        a, _ = comm_func.all_reduce(t)
        b, _ = comm_func.all_gather_into_tensor(t)
        c = comm_func.broadcast(t * 2, 0)
        d, _ = comm_func.all_to_all_single_with_output_shape((4, 2), t, [4], [4])
        (e,), _ = comm_func.all_to_all_with_output_shape([(8,)], [t])
        return a + b + c + d + ms.ops.reshape(e, (4, 2))
    np.testing.assert_array_equal(f(Tensor(x)).asnumpy(), 6 * x)


# -- mint.distributed in a world of 1 ---------------------------------------------------------

def test_mint_process_group(world1):
    dist.init_process_group()                       # a running MPI world is kept
    assert dist.is_initialized() and dist.is_available()
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "mpi")
    assert dist.new_group() == dist.new_group([0]) == "world_group"
    assert dist.get_process_group_ranks() == [0]
    assert dist.get_global_rank(None, 0) == 0 and dist.get_group_rank("world_group", 0) == 0
    dist.destroy_process_group()
    assert not is_initialized()
    dist.init_process_group("mpi", world_size=1, rank=0)
    assert dist.get_backend() == "mpi"


def test_mint_writes_in_place(world1):
    x = arange(4, 3)
    t = Tensor(x.copy())
    buffer = t.asnumpy()
    other = Tensor(x.copy())
    assert dist.all_reduce(t) is None
    assert t.asnumpy() is buffer                    # the caller's own buffer, overwritten
    np.testing.assert_array_equal(t.asnumpy(), x)
    h = dist.all_reduce(t, "max", async_op=True)
    assert isinstance(h, dist.CommHandle) and h.wait() is None and h.is_completed()
    out = Tensor(np.zeros((4, 3), np.float32))
    dist.all_gather_into_tensor(out, Tensor(x * 2))
    np.testing.assert_array_equal(out.asnumpy(), x * 2)
    stacked = Tensor(np.zeros((1, 4, 3), np.float32))
    dist.all_gather_into_tensor(stacked, Tensor(x))
    np.testing.assert_array_equal(stacked.asnumpy(), x[None])
    lst = [Tensor(np.zeros((4, 3), np.float32))]
    dist.all_gather(lst, Tensor(x + 1))
    np.testing.assert_array_equal(lst[0].asnumpy(), x + 1)
    dist.reduce_scatter_tensor(out, Tensor(x * 3))
    np.testing.assert_array_equal(out.asnumpy(), x * 3)
    dist.reduce_scatter(out, [Tensor(x * 4)])
    np.testing.assert_array_equal(out.asnumpy(), x * 4)
    dist.scatter(out, [Tensor(x * 5)], src=0)
    np.testing.assert_array_equal(out.asnumpy(), x * 5)
    dist.gather(Tensor(x * 6), lst, dst=0)
    np.testing.assert_array_equal(lst[0].asnumpy(), x * 6)
    to = [Tensor(np.zeros((3, 4), np.float32))]
    dist.all_to_all(to, [Tensor(x * 7)])
    np.testing.assert_array_equal(to[0].asnumpy(), (x * 7).reshape(3, 4))
    dist.all_to_all_single(out, Tensor(x * 8))
    np.testing.assert_array_equal(out.asnumpy(), x * 8)
    dist.reduce(out, 0)
    dist.broadcast(out, 0)
    np.testing.assert_array_equal(out.asnumpy(), x * 8)
    assert dist.barrier() is None and dist.barrier(async_op=True).wait() is None
    np.testing.assert_array_equal(other.asnumpy(), x)           # nothing else changed


def test_mint_writes_parameters_and_scalars(world1):
    p = ms.Parameter(Tensor(arange(3)), name="w")
    dist.all_reduce(p)
    np.testing.assert_array_equal(p.asnumpy(), arange(3))
    s = Tensor(np.float32(2.5))
    out = Tensor(np.zeros(1, np.float32))
    dist.all_gather_into_tensor(out, s)
    np.testing.assert_array_equal(out.asnumpy(), [2.5])


def test_mint_compiled_rebinds_values_and_refuses_inputs(world1):
    x = arange(3, 2)

    @ms.jit
    def f(t):
        y = t * 2
        dist.all_reduce(y)
        parts = [t * 0]
        dist.all_gather(parts, y)
        return y + parts[0]
    np.testing.assert_array_equal(f(Tensor(x)).asnumpy(), 4 * x)

    @ms.jit
    def g(t):
        dist.all_reduce(t)
        return t
    with exactly(ValueError, "For 'all_reduce', the 'tensor' is an input or Parameter of the "
                             "function being compiled, which cannot be written in place in a "
                             "graph: pass a value computed in the function (e.g. x * 1) and "
                             "return it, or call 'all_reduce' outside ms.jit."):
        g(Tensor(x))
    outside = Tensor(x.copy())

    @ms.jit
    def h(t):
        dist.all_reduce(outside)
        return t
    with pytest.raises(ValueError, match="made outside the function being compiled"):
        h(Tensor(x))


def test_mint_objects_travel_as_json(world1):
    got = [None]
    dist.all_gather_object(got, {"lr": 0.1, "steps": [1, 2], "name": "run"})
    assert got == [{"lr": 0.1, "steps": [1, 2], "name": "run"}]
    lst = [("a", 1), None, 3.5]
    dist.broadcast_object_list(lst, src=0)
    assert lst == [["a", 1], None, 3.5]                # JSON: a tuple comes back a list
    with exactly(TypeError, "For 'all_gather_object', every object should be "
                            "JSON-serialisable (msops exchanges objects as JSON, never pickle), "
                            "but the object of global rank(s) [0] is not.") as info:
        dist.all_gather_object(got, {1, 2})
    assert "Object of type set is not JSON serializable" in str(info.value.__cause__)
    with pytest.raises(TypeError, match="'broadcast_object_list'.*never pickle"):
        dist.broadcast_object_list([object()], src=0)


# -- argument errors: each names the function, the argument, what was expected and got --------

E = "world_group"


def test_set_comm_ops_inplace_arguments():
    from msops.ops import set_comm_ops_inplace
    with exactly(TypeError, "For 'set_comm_ops_inplace', the 'is_enable' should be a bool, "
                            "but got int."):
        set_comm_ops_inplace(1)
    with exactly(TypeError, "For 'set_comm_ops_inplace', the 'func_list' should be None or a "
                            "list, but got tuple."):
        set_comm_ops_inplace(False, ("all_reduce",))
    with exactly(ValueError, "For 'set_comm_ops_inplace', every name in 'func_list' should be "
                             "one of ['all_reduce', 'all_gather_into_tensor', "
                             "'reduce_scatter_tensor', 'all_to_all_single'], but got "
                             "'broadcast'."):
        set_comm_ops_inplace(False, ["all_reduce", "broadcast"])
    from msops.mint.distributed._inplace import is_inplace
    assert is_inplace("all_reduce")                     # an invalid list changes nothing


@pytest.mark.parametrize("call,exc,message", [
    (lambda: comm_func.all_reduce([1.0]), TypeError,
     "For 'all_reduce', the 'tensor' should be a Tensor, but got list."),
    (lambda: comm_func.all_reduce(Tensor(arange(2)), 1), TypeError,
     "For 'all_reduce', the 'op' should be a str, but got int."),
    (lambda: comm_func.all_reduce(Tensor(arange(2)), "mean"), ValueError,
     "For 'all_reduce', the 'op' should be one of ['sum', 'max', 'min', 'prod', 'land', "
     "'lor', 'lxor', 'band', 'bor', 'bxor'], but got 'mean'."),
    (lambda: comm_func.all_reduce(Tensor(arange(2)), "band"), TypeError,
     "For 'all_reduce', the reduce op 'band' should be one of ['sum', 'max', 'min', 'prod'] "
     "for a Tensor of Float32, but got 'band'."),
    (lambda: comm_func.all_reduce(Tensor(arange(2)), async_op=1), TypeError,
     "For 'all_reduce', the 'async_op' should be a bool, but got int."),
    (lambda: comm_func.all_reduce(Tensor(arange(2)), group=3), TypeError,
     "For 'all_reduce', the 'group' should be a str or None, but got int."),
    (lambda: comm_func.all_reduce(Tensor(arange(2)), group="g9"), ValueError,
     "For 'all_reduce', the 'group' should be a created group ['world_group'], but got 'g9'."),
    (lambda: comm_func.all_gather_into_tensor(Tensor(np.float32(1))), ValueError,
     "For 'all_gather_into_tensor', the 'tensor' should have rank >= 1, but got a 0-d Tensor."),
    (lambda: comm_func.reduce(Tensor(arange(2)), 1), ValueError,
     f"For 'reduce', the 'dst' should be a global rank in group '{E}' [0], but got 1."),
    (lambda: comm_func.broadcast(Tensor(arange(2)), "0"), TypeError,
     "For 'broadcast', the 'src' should be an int, but got str."),
    (lambda: comm_func.send(Tensor(arange(2)), 0), ValueError,
     "For 'send', the 'dst' should be another rank than this one, but got global rank 0 "
     "(this process)."),
    (lambda: comm_func.recv(Tensor(arange(2)), 0, tag=40000), ValueError,
     "For 'recv', the 'tag' should be in [0, 32767], but got 40000."),
    (lambda: comm_func.all_to_all_single_with_output_shape((4,), Tensor(arange(3)), None,
                                                           [2]), ValueError,
     "For 'all_to_all_single_with_output_shape', the sum of 'input_split_sizes' should be the "
     "dim 0 size 3, but got [2] (sum 2)."),
    (lambda: comm_func.all_to_all_single_with_output_shape((2, 2), Tensor(arange(2, 3))),
     ValueError, "For 'all_to_all_single_with_output_shape', the output shape should match "
                 "the input's beyond dim 0, but got [2, 2] and [2, 3]."),
    (lambda: comm_func.all_to_all_single_with_output_shape("4", Tensor(arange(4))), TypeError,
     "For 'all_to_all_single_with_output_shape', the 'output_shape' should be a tuple of ints "
     "or a Tensor, but got str."),
    (lambda: comm_func.all_to_all_with_output_shape([(2,), (2,)], [Tensor(arange(2))]),
     ValueError, "For 'all_to_all_with_output_shape', the length of 'output_shape_list' "
                 "should be the group size 1, but got 2."),
    (lambda: comm_func.all_to_all_with_output_shape([(2,)], [np.ones(2)]), TypeError,
     "For 'all_to_all_with_output_shape', the 'input_tensor_list[0]' should be a Tensor, but "
     "got ndarray."),
    (lambda: comm_func.P2POp("send", Tensor(arange(2)), 0), ValueError,
     "For 'P2POp', the 'op' should be 'isend', 'irecv' or one of those functions, but got "
     "'send'."),
    (lambda: comm_func.P2POp("irecv", (2,), 0), TypeError,
     "For 'P2POp', an 'irecv' of a shape needs 'recv_dtype' (an msops dtype), but got None."),
    (lambda: comm_func.P2POp(comm_func.isend, Tensor(arange(2)), 0, tag=1),
     NotImplementedError,
     "For 'P2POp', the 'tag' should be 0 (tags are not supported, as in MindSpore), but got 1."),
    (lambda: comm_func.batch_isend_irecv([]), ValueError,
     "For 'batch_isend_irecv', the 'p2p_op_list' should not be empty."),
    (lambda: comm_func.batch_isend_irecv([1]), TypeError,
     "For 'batch_isend_irecv', the 'p2p_op_list[0]' should be a P2POp, but got int."),
    (lambda: dist.all_reduce(Tensor(arange(2)), "avg"), ValueError,
     "For 'all_reduce', the 'op' should be one of ['sum', 'max', 'min', 'prod', 'land', "
     "'lor', 'lxor', 'band', 'bor', 'bxor'], but got 'avg'."),
    (lambda: dist.all_gather_into_tensor(Tensor(np.zeros(3, np.float32)), Tensor(arange(2))),
     ValueError, "For 'all_gather_into_tensor', the 'output_tensor' should have shape [2] or "
                 "[1, 2], but got [3]."),
    (lambda: dist.all_gather([Tensor(np.zeros(2, np.int32))], Tensor(arange(2))), TypeError,
     "For 'all_gather', the 'tensor_list[0]' should have dtype Float32 (the input's), but got "
     "Int32."),
    (lambda: dist.all_gather([], Tensor(arange(2))), ValueError,
     "For 'all_gather', the length of 'tensor_list' should be the group size 1, but got 0."),
    (lambda: dist.reduce_scatter(Tensor(arange(2)), [Tensor(arange(2))] * 2), ValueError,
     "For 'reduce_scatter', the length of 'input_list' should be the group size 1, but got 2."),
    (lambda: dist.scatter(Tensor(arange(2)), [Tensor(arange(3))]), ValueError,
     "For 'scatter', the 'scatter_list[0]' should have the 'tensor' shape [2] and dtype "
     "Float32, but got [3] and Float32."),
    (lambda: dist.scatter(Tensor(arange(2)), None), TypeError,
     "For 'scatter', the 'scatter_list' should be a list or tuple of Tensors, but got "
     "NoneType."),
    (lambda: dist.recv(Tensor(arange(2)), 0), ValueError,
     "For 'recv', the 'src' should be another rank than this one, but got global rank 0 "
     "(this process)."),
    (lambda: dist.P2POp("irecv", (2,), 0), TypeError,
     "For 'P2POp', the 'tensor' should be a Tensor, but got tuple."),
    (lambda: dist.init_process_group("gloo"), ValueError,
     "For 'init_process_group', the 'backend' should be one of ['hccl', 'nccl', 'mpi'], but "
     "got 'gloo'."),
    (lambda: dist.init_process_group(world_size=2), ValueError,
     "For 'init_process_group', the 'world_size' should be -1 or this MPI world's 1, but got "
     "2."),
    (lambda: dist.init_process_group(init_method="env://", store=object()), ValueError,
     "For 'init_process_group', only one of 'init_method' and 'store' should be set, but got "
     "both."),
    (lambda: dist.new_group(0), TypeError,
     "For 'new_group', the 'ranks' should be a list of ints, but got int."),
    (lambda: dist.new_group([0, "1"]), TypeError,
     "For 'new_group', every element of 'ranks' should be an int, but got str in [0, '1']."),
    (lambda: dist.new_group([0, 1]), ValueError,
     "For 'new_group', the 'ranks' should be distinct global ranks in [0, 1), at least one, "
     "but got [0, 1]."),
    (lambda: dist.new_group([]), ValueError,
     "For 'new_group', the 'ranks' should be distinct global ranks in [0, 1), at least one, "
     "but got []."),
    (lambda: dist.all_gather_object((None,), 1), TypeError,
     "For 'all_gather_object', the 'object_list' should be a list, but got tuple."),
])
def test_argument_errors(world1, call, exc, message):
    with exactly(exc, message):
        call()


def test_before_init_every_call_says_so():
    release()
    with exactly(RuntimeError, "For 'all_reduce', the communication world is not initialized: "
                               "call msops.communication.init() first."):
        comm_func.all_reduce(Tensor(arange(2)))
    with pytest.raises(RuntimeError, match="^For 'get_rank', the communication world is not"):
        dist.get_rank()


# -- a simulated world plans and refuses to move data -----------------------------------------

def test_simulation_refuses_data(sim):
    sim(4, 1)
    x = Tensor(arange(4, 2))
    for call in (lambda: comm_func.all_reduce(x), lambda: comm_func.broadcast(x, 2),
                 lambda: comm_func.all_to_all_single_with_output_shape((4, 2), x),
                 lambda: comm_func.send(x, 3), lambda: dist.all_reduce(x),
                 lambda: dist.gather(x, None, dst=0), lambda: dist.barrier(),
                 lambda: dist.all_gather_object([None] * 4, 1)):
        with pytest.raises(SimulationError, match="data cannot move in a simulated world"):
            call()
    np.testing.assert_array_equal(x.asnumpy(), arange(4, 2))     # nothing written
    # arguments are still checked, and groups and ranks answer as on rank 1 of 4
    with exactly(ValueError, "For 'broadcast', the 'src' should be a global rank in group "
                             "'world_group' [0, 1, 2, 3], but got 4."):
        comm_func.broadcast(x, 4)
    g = dist.new_group([3, 2])
    assert g == "mint_ranks2,3" and dist.new_group([2, 3]) == g
    assert (dist.get_rank(g), dist.get_world_size(g)) == (-1, -1)
    assert dist.get_process_group_ranks(g) == [2, 3] and dist.get_global_rank(g, 1) == 3
    with exactly(ValueError, "For 'all_reduce', this process (world rank 1) should be a "
                             "member of group 'mint_ranks2,3' (ranks [2, 3]), but it is not."):
        dist.all_reduce(x, group=g)
    create_group("g01", [0, 1])
    assert dist.get_rank("g01") == 1 and dist.get_world_size("g01") == 2
    dist.destroy_process_group("g01")
    with exactly(RuntimeError, "For 'init_process_group', a simulated world is running: call "
                               "msops.communication.release() before starting the MPI world."):
        dist.init_process_group()
