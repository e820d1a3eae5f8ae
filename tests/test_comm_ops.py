"""Communication primitives on a simulated world: attrs, inference and every argument error.

Values over real MPI are checked in tests/ranks/test_comm_*.py.
"""
import re
from types import SimpleNamespace

import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from msops.communication import SimulationError, create_group
from msops.primitives import comm_ops
from msops.primitives.primitive import CACHE_LIMIT


def exactly(exc: type, message: str):
    return pytest.raises(exc, match="^" + re.escape(message) + "$")


# -- attrs -------------------------------------------------------------------------------------

def test_every_api_primitive_is_exported():
    names = ["AllGather", "_MiniStepAllGather", "_MicroStepAllGather", "AllReduce",
             "ReduceScatter", "Broadcast", "AlltoAll", "AllToAllV", "AlltoAllV", "AllGatherV",
             "ReduceScatterV", "Reduce", "CollectiveGather", "CollectiveScatter", "Barrier",
             "Send", "Receive", "ReduceOp"]
    for name in names:
        assert getattr(ops, name) is getattr(comm_ops, name)
    assert ops.AlltoAllV is ops.AllToAllV
    assert (ops.ReduceOp.SUM, ops.ReduceOp.MAX, ops.ReduceOp.MIN, ops.ReduceOp.PROD) == \
        ("sum", "max", "min", "prod")


def attrs_of(prim) -> dict:
    return {k: v for k, v in prim.attrs.items()}


@pytest.mark.parametrize("make,expected", [
    (lambda: ops.AllGather(), dict(group="world_group", rank_size=8, rank=3, fusion=0,
                                   mean_flag=False, no_eliminate=True)),
    (lambda: ops._MiniStepAllGather(grad_accumulation_step=4, mean_flag=True),
     dict(group="world_group", grad_accumulation_step=4, mean_flag=True, rank_size=8, rank=3,
          fusion=1)),
    (lambda: ops._MicroStepAllGather(), dict(group="world_group", mean_flag=None, rank_size=8,
                                             rank=3, fusion=1)),
    (lambda: ops.AllReduce(), dict(op="sum", group="world_group", rank_size=8, rank=3,
                                   fusion=0, index=0, no_eliminate=True)),
    (lambda: ops.ReduceScatter(ops.ReduceOp.MAX), dict(op="max", group="world_group",
                                                       rank_size=8, rank=3, fusion=0,
                                                       no_eliminate=True)),
    (lambda: ops.Broadcast(1), dict(root_rank=1, group="world_group", rank_size=8, rank=3,
                                    no_eliminate=True)),
    (lambda: ops.AlltoAll(8, 0, 1), dict(split_count=8, split_dim=0, concat_dim=1,
                                         group="world_group", rank_size=8, rank=3,
                                         no_eliminate=True)),
    (lambda: ops.AllToAllV(block_size=4), dict(group="world_group", block_size=4,
                                               check_counts=True, rank_size=8, rank=3,
                                               no_eliminate=True)),
    (lambda: ops.AllGatherV(), dict(group="world_group", rank_size=8, rank=3,
                                    no_eliminate=True)),
    (lambda: ops.ReduceScatterV("max"), dict(op="max", group="world_group", rank_size=8,
                                             rank=3, no_eliminate=True)),
    (lambda: ops.Reduce(2, "prod"), dict(dest_rank=2, op="prod", group="world_group",
                                         rank_size=8, rank=3)),
    (lambda: ops.CollectiveGather(0), dict(dest_rank=0, group="world_group", rank_size=8,
                                           rank=3, rank_id=3)),
    (lambda: ops.CollectiveScatter(), dict(src_rank=0, group="world_group", rank_size=8,
                                           rank=3, rank_id=3)),
    (lambda: ops.Barrier(), dict(group="world_group", rank_size=8, rank=3,
                                 side_effect_mem=True)),
    (lambda: ops.Send(7, 4), dict(sr_tag=7, dest_rank=4, group="world_group", rank_size=8,
                                  rank=3, no_eliminate=True)),
    (lambda: ops.Receive(7, 2, [2, 3], ms.int8), dict(sr_tag=7, src_rank=2, shape=[2, 3],
                                                      dtype=ms.int8, group="world_group",
                                                      rank_size=8, rank=3, no_eliminate=True)),
])
def test_attrs(sim, make, expected):
    sim(8, 3)
    prim = make()
    assert attrs_of(prim) == expected
    for k, v in expected.items():
        assert getattr(prim, k) == v
    assert prim.is_communication


def test_world_aliases_and_sub_groups_resolve(sim):
    sim(8, 3)
    assert ops.AllReduce(group="hccl_world_group").group == "world_group"
    create_group("pair", [5, 3])
    ag = ops.AllGather("pair")
    assert (ag.group, ag.rank_size, ag.rank) == ("pair", 2, 1)


# -- shapes and dtypes -----------------------------------------------------------------------

@pytest.mark.parametrize("prim_name", ["AllGather", "_MiniStepAllGather", "_MicroStepAllGather"])
def test_gather_shapes(sim, prim_name):
    sim(8, 3)
    prim = getattr(ops, prim_name)()
    extra = [[4]] if prim_name != "AllGather" else []        # the accumulation buffer z
    x_shape = [2, 8]
    assert prim.infer_shape(x_shape, *extra) == [16, 8]
    assert x_shape == [2, 8]                                   # pure
    assert prim.infer_shape([-1, 3], *extra) == [-1, 3]
    assert prim.infer_shape([0], *extra) == [0]
    dtypes = [ms.float32] * (1 + len(extra))
    assert prim.infer_dtype(*dtypes) == ms.float32
    with exactly(ValueError, f"For '{prim_name}', the 'x shape' should have rank >= 1, but got "
                             f"a 0-d shape []."):
        prim.infer_shape([], *extra)


def test_allreduce_and_reduce_scatter_shapes(sim):
    sim(8, 3)
    assert ops.AllReduce().infer_shape([3, 5]) == [3, 5]
    assert ops.AllReduce().infer_shape([]) == []
    rs = ops.ReduceScatter()
    x_shape = [16, 3]
    assert rs.infer_shape(x_shape) == [2, 3] and x_shape == [16, 3]
    assert rs.infer_shape([-1, 3]) == [-1, 3]
    assert rs.infer_dtype(ms.bfloat16) == ms.bfloat16
    with exactly(ValueError, "For 'ReduceScatter', the 'x shape[0]' should be divisible by "
                             "rank_size: 8, but got 12 (x shape [12, 3])."):
        rs.infer_shape([12, 3])
    with exactly(ValueError, "For 'ReduceScatter', the 'x shape' should have rank >= 1, but "
                             "got a 0-d shape []."):
        rs.infer_shape([])


def test_broadcast_takes_and_returns_tuples(sim):
    sim(8, 3)
    b = ops.Broadcast(0)
    shapes = [[2, 3], [4]]
    assert b.infer_shape(shapes) == ([2, 3], [4]) and shapes == [[2, 3], [4]]
    assert b.infer_dtype([ms.float16, ms.complex64]) == (ms.float16, ms.complex64)
    with exactly(TypeError, "For 'Broadcast', the 'input_x' should be a non-empty tuple of "
                            "Tensors, but got one Tensor of shape [2, 3]."):
        b.infer_shape([2, 3])
    with exactly(TypeError, "For 'Broadcast', the 'input_x' should be a non-empty tuple of "
                            "Tensors, but got one Tensor of dtype Float32."):
        b.infer_dtype(ms.float32)
    with exactly(TypeError, "For 'Broadcast', the 'input_x' should be a non-empty tuple of "
                            "Tensors, but got []."):
        b.infer_shape([])
    with exactly(TypeError, "For 'Broadcast', the 'input_x' should be a non-empty tuple of "
                            "Tensors, but got one Tensor of shape [2, 3]."):
        b(Tensor(np.ones([2, 3], np.float32)))                # eager: a Tensor, not a tuple


@pytest.mark.parametrize("split_dim,concat_dim,x_shape,out", [
    (0, 1, [16, 3], [2, 24]),
    (1, 0, [3, 16], [24, 2]),
    (-1, 0, [3, 16], [24, 2]),
    (0, -1, [8, 2, 5], [1, 2, 40]),
    (1, 1, [2, 8], [2, 8]),                     # the same dim: shape unchanged
    (0, 1, [-1, 3], [-1, 24]),                  # dynamic dims stay dynamic
    (0, 1, [16, -1], [2, -1]),
])
def test_alltoall_shapes(sim, split_dim, concat_dim, x_shape, out):
    sim(8, 3)
    prim = ops.AlltoAll(8, split_dim, concat_dim)
    before = list(x_shape)
    assert prim.infer_shape(x_shape) == out and x_shape == before
    assert prim.infer_dtype(ms.bool_) == ms.bool_


def test_alltoall_errors(sim):
    sim(8, 3)
    with exactly(ValueError, "For 'AlltoAll', the 'split_count' should be == rank_size: 8, "
                             "but got 4."):
        ops.AlltoAll(4, 0, 1)
    for args, arg, got in [((8.0, 0, 1), "split_count", "float"),
                           ((8, "0", 1), "split_dim", "str"),
                           ((8, 0, True), "concat_dim", "bool")]:
        with exactly(TypeError, f"For 'AlltoAll', the type of '{arg}' should be int, "
                                f"but got {got}."):
            ops.AlltoAll(*args)
    with exactly(IndexError, "For 'AlltoAll', the 'split_dim' should be in [-2, 2), "
                             "but got 2."):
        ops.AlltoAll(8, 2, 0).infer_shape([8, 8])
    with exactly(IndexError, "For 'AlltoAll', the 'concat_dim' should be in [-2, 2), "
                             "but got -3."):
        ops.AlltoAll(8, 0, -3).infer_shape([8, 8])
    with exactly(IndexError, "For 'AlltoAll', the 'split_dim' should be in [0, 0), but got 0."):
        ops.AlltoAll(8, 0, 0).infer_shape([])
    with exactly(ValueError, "For 'AlltoAll', the 'x shape[1]' should be divisible by "
                             "split_count: 8, but got 12 (x shape [2, 12])."):
        ops.AlltoAll(8, 1, 0).infer_shape([2, 12])


def test_reduce_and_collective_gather_are_rank_dependent(sim):
    sim(8, 3)
    x_shape = [2, 5]
    assert ops.Reduce(3).infer_shape(x_shape) == [2, 5]        # the destination
    assert ops.Reduce(0).infer_shape(x_shape) == [1]           # everyone else
    assert ops.CollectiveGather(3).infer_shape(x_shape) == [16, 5]
    assert ops.CollectiveGather(0).infer_shape(x_shape) == [1]
    assert x_shape == [2, 5]
    assert ops.Reduce(0, "max").infer_dtype(ms.int16) == ms.int16
    assert ops.CollectiveGather(0).infer_dtype(ms.complex128) == ms.complex128
    with exactly(ValueError, "For 'CollectiveGather', the 'x shape' should have rank >= 1, but "
                             "got a 0-d shape []."):
        ops.CollectiveGather(3).infer_shape([])


def test_collective_scatter_shapes(sim):
    sim(8, 3)
    cs = ops.CollectiveScatter(5)
    assert cs.infer_shape([16, 2]) == [2, 2] and cs.infer_dtype(ms.uint8) == ms.uint8
    with exactly(ValueError, "For 'CollectiveScatter', the 'x shape[0]' should be divisible by "
                             "rank_size: 8, but got 4 (x shape [4, 2])."):
        cs.infer_shape([4, 2])


def test_barrier_send_receive_shapes(sim):
    sim(8, 3)
    assert ops.Barrier().infer_shape() == [1] and ops.Barrier().infer_dtype() == ms.float32
    send = ops.Send(0, 4)
    assert send.infer_shape([2, 3]) == [2, 3] and send.infer_dtype(ms.bfloat16) == ms.bfloat16
    recv = ops.Receive(0, 2, (2, 3), ms.complex64)
    assert recv.infer_shape() == [2, 3] and recv.infer_dtype() == ms.complex64
    with exactly(ValueError, "For 'Send', the 'dest_rank' should be another rank than this "
                             "one, but got 3 (this process is rank 3 of group 'world_group')."):
        ops.Send(0, 3).infer_shape([2])
    with exactly(ValueError, "For 'Receive', the 'src_rank' should be another rank than this "
                             "one, but got 3 (this process is rank 3 of group 'world_group')."):
        ops.Receive(0, 3, [2], ms.float32).infer_shape()


# -- argument errors shared by the collectives ---------------------------------------------

ALL_PRIMS = [
    ("AllGather", lambda **kw: ops.AllGather(**kw), [[2]]),
    ("_MiniStepAllGather", lambda **kw: ops._MiniStepAllGather(**kw), [[2], [2]]),
    ("_MicroStepAllGather", lambda **kw: ops._MicroStepAllGather(**kw), [[2], [2]]),
    ("AllReduce", lambda **kw: ops.AllReduce(**kw), [[2]]),
    ("ReduceScatter", lambda **kw: ops.ReduceScatter(**kw), [[8]]),
    ("Broadcast", lambda **kw: ops.Broadcast(0, **kw), [[[2]]]),
    ("AlltoAll", lambda **kw: ops.AlltoAll(8, 0, 0, **kw), [[8]]),
    ("AllToAllV", lambda **kw: ops.AllToAllV(**kw), [[8], [1] * 8, [1] * 8]),
    ("AllGatherV", lambda **kw: ops.AllGatherV(**kw), [[8], [8] * 8]),
    ("ReduceScatterV", lambda **kw: ops.ReduceScatterV(**kw), [[8], [1] * 8]),
    ("Reduce", lambda **kw: ops.Reduce(0, **kw), [[2]]),
    ("CollectiveGather", lambda **kw: ops.CollectiveGather(0, **kw), [[2]]),
    ("CollectiveScatter", lambda **kw: ops.CollectiveScatter(0, **kw), [[8]]),
    ("Send", lambda **kw: ops.Send(0, 0, **kw), [[2]]),
]


def _dtypes_for(name: str, args: list, dtype) -> list:
    """infer_dtype arguments: `dtype` for tensors, the values for the counts/split sizes."""
    if name == "Broadcast":
        return [[dtype]]
    if name in ("AllToAllV", "AllGatherV", "ReduceScatterV"):
        return [dtype] + args[1:]
    return [dtype] * len(args)


@pytest.mark.parametrize("name,make,args", ALL_PRIMS, ids=[p[0] for p in ALL_PRIMS])
def test_every_collective_rejects_strings(sim, name, make, args):
    sim(8, 3)
    prim = make()
    with pytest.raises(TypeError, match=f"^For '{name}', the 'x' should be a Tensor with "
                                        f"dtype in .*, but got String.$"):
        prim.infer_dtype(*_dtypes_for(name, args, ms.string))
    for dtype in ms.common.dtype.all_types:                      # every numeric dtype moves
        if name not in ("AllReduce", "ReduceScatter", "ReduceScatterV", "Reduce") or \
                dtype.kind != "bool":
            out = prim.infer_dtype(*_dtypes_for(name, args, dtype))
            assert out == ((dtype,) if name == "Broadcast" else dtype)
    s, f = Tensor(np.array(list("abcdefgh"))), Tensor(np.ones(8, np.float32))
    eager = {"Broadcast": ((s,),), "_MiniStepAllGather": (s, f), "_MicroStepAllGather": (s, f),
             "AllToAllV": (s, [1] * 8, [1] * 8), "AllGatherV": (s, [8] * 8),
             "ReduceScatterV": (s, [1] * 8)}.get(name, (s,))
    with pytest.raises(TypeError, match=f"^For '{name}', the 'x' should be a Tensor with dtype"):
        prim(*eager)


@pytest.mark.parametrize("name,make,args", ALL_PRIMS, ids=[p[0] for p in ALL_PRIMS])
def test_every_collective_checks_its_group(sim, name, make, args):
    sim(8, 3)
    with exactly(TypeError, f"For '{name}', the type of 'group' should be str, but got int."):
        make(group=1)
    with exactly(ValueError, f"For '{name}', the 'group' should be a created group "
                             f"['world_group'], but got 'nope'."):
        make(group="nope")


def test_simulation_refuses_to_move_data_for_every_op(sim):
    sim(8, 3)
    x = Tensor(np.ones([8, 2], np.float32))
    calls = [(ops.AllGather(), (x,)), (ops._MiniStepAllGather(), (x, x)),
             (ops._MicroStepAllGather(), (x, x)), (ops.AllReduce(), (x,)),
             (ops.ReduceScatter(), (x,)), (ops.Broadcast(0), ((x, x),)),
             (ops.AlltoAll(8, 0, 1), (x,)), (ops.AllToAllV(), (x, [2] * 8)),
             (ops.AllToAllV(check_counts=False), (x, [2] * 8, [2] * 8)),
             (ops.AllGatherV(), (Tensor(np.ones(3, np.float32)), [3] * 8)),
             (ops.ReduceScatterV(), (Tensor(np.ones(8, np.float32)), [1] * 8)),
             (ops.Reduce(0), (x,)), (ops.CollectiveGather(0), (x,)),
             (ops.CollectiveScatter(0), (x,)), (ops.Barrier(), ()), (ops.Send(0, 1), (x,)),
             (ops.Receive(0, 1, [2], ms.float32), ())]
    for prim, args in calls:
        with pytest.raises(SimulationError, match=f"^For '{prim.name}', data cannot move in a "
                                                  f"simulated world"):
            prim(*args)


def test_reduce_ops_and_dtypes(sim):
    sim(8, 3)
    for make in (ops.AllReduce, ops.ReduceScatter, lambda op: ops.Reduce(0, op)):
        assert make("sum").infer_dtype(ms.complex64) == ms.complex64
        assert make("prod").infer_dtype(ms.complex128) == ms.complex128
        assert make("band").infer_dtype(ms.uint16) == ms.uint16
        assert make("lor").infer_dtype(ms.bool_) == ms.bool_
        prim = make("max")
        with exactly(TypeError, f"For '{prim.name}', the reduce op 'max' should be one of "
                                f"['sum', 'prod'] for a Tensor of Complex64, but got 'max'."):
            prim.infer_dtype(ms.complex64)
        with exactly(TypeError, f"For '{prim.name}', the reduce op 'min' should be one of "
                                f"['sum', 'prod'] for a Tensor of Complex128, but got 'min'."):
            make("min").infer_dtype(ms.complex128)
        with exactly(TypeError, f"For '{prim.name}', the reduce op 'sum' should be one of "
                                f"['land', 'lor', 'lxor'] for a Tensor of Bool, but got 'sum'."):
            make("sum").infer_dtype(ms.bool_)
        with exactly(TypeError, f"For '{prim.name}', the reduce op 'bxor' should be one of "
                                f"['sum', 'max', 'min', 'prod'] for a Tensor of Float16, "
                                f"but got 'bxor'."):
            make("bxor").infer_dtype(ms.float16)
        with exactly(ValueError, f"For '{prim.name}', the 'op' should be one of ['sum', 'max', "
                                 f"'min', 'prod', 'land', 'lor', 'lxor', 'band', 'bor', 'bxor'], "
                                 f"but got 'mean'."):
            make("mean")
        with exactly(TypeError, f"For '{prim.name}', the type of 'op' should be str, "
                                f"but got int."):
            make(0)


@pytest.mark.parametrize("make,arg", [
    (lambda r: ops.Broadcast(r), "root_rank"), (lambda r: ops.Reduce(r), "dest_rank"),
    (lambda r: ops.CollectiveGather(r), "dest_rank"),
    (lambda r: ops.CollectiveScatter(r), "src_rank"), (lambda r: ops.Send(0, r), "dest_rank"),
    (lambda r: ops.Receive(0, r, [1], ms.int8), "src_rank")])
def test_rank_arguments(sim, make, arg):
    sim(8, 3)
    name = make(0).name
    with exactly(ValueError, f"For '{name}', the '{arg}' should be in [0, 8), but got 8."):
        make(8)
    with exactly(ValueError, f"For '{name}', the '{arg}' should be in [0, 8), but got -1."):
        make(-1)
    with exactly(TypeError, f"For '{name}', the type of '{arg}' should be int, but got float."):
        make(1.0)


def test_rank_dependent_inference_needs_membership(sim):
    sim(8, 3)
    create_group("far", [0, 1])
    for prim in (ops.Reduce(0, group="far"), ops.CollectiveGather(0, group="far"),
                 ops.Send(0, 1, group="far")):
        with exactly(ValueError, f"For '{prim.name}', this process is not a member of group "
                                 f"'far' (ranks [0, 1])."):
            prim.infer_shape([2])


def test_send_receive_and_accumulation_arguments(sim):
    sim(8, 3)
    with exactly(ValueError, "For 'Send', the 'sr_tag' should be in [0, 32767], but got -1."):
        ops.Send(-1, 0)
    with exactly(TypeError, "For 'Receive', the type of 'sr_tag' should be int, but got str."):
        ops.Receive("0", 0, [1], ms.int8)
    with exactly(TypeError, "For 'Receive', the type of 'shape' should be one of [list, tuple], "
                            "but got int."):
        ops.Receive(0, 0, 3, ms.int8)
    with exactly(ValueError, "For 'Receive', the 'shape[1]' should be a non-negative int, "
                             "but got -2."):
        ops.Receive(0, 0, [3, -2], ms.int8)
    with exactly(TypeError, "For 'Receive', the type of 'dtype' should be Type, but got type."):
        ops.Receive(0, 0, [3], np.float32)
    with pytest.raises(TypeError, match=r"^For 'Receive', the 'dtype' should be one of \[Bool, "
                                        r".*\], but got String.$"):
        ops.Receive(0, 0, [3], ms.string)


@pytest.mark.parametrize("exc,message,make", [
    (ValueError, "For '_MiniStepAllGather', the 'grad_accumulation_step' should be a positive "
                 "int, but got 0.", lambda: ops._MiniStepAllGather(grad_accumulation_step=0)),
    (TypeError, "For '_MicroStepAllGather', the type of 'mean_flag' should be bool, but got int.",
     lambda: ops._MicroStepAllGather(mean_flag=1)),
    (ValueError, "For 'AllToAllV', the 'block_size' should be a positive int, but got 0.",
     lambda: ops.AllToAllV(block_size=0)),
    (TypeError, "For 'AllToAllV', the type of 'check_counts' should be bool, but got int.",
     lambda: ops.AllToAllV(check_counts=1)),
])
def test_attr_value_errors(sim, exc, message, make):
    sim(4, 1)
    with exactly(exc, message):
        make()


# -- AllGatherV, ReduceScatterV ------------------------------------------------------------------

SIZES = [3, 0, 2, 4, 1, 0, 5, 2]                # rank 3's piece: 4 elements; 17 in all


def test_uneven_collectives_infer_from_the_split_sizes(sim):
    sim(8, 3)
    assert ops.AllGatherV().infer_shape([4], SIZES) == [17]
    assert ops.AllGatherV().infer_shape([-1], tuple(SIZES)) == [17]          # dynamic input
    assert ops.AllGatherV().infer_shape([4], Tensor(np.array(SIZES, np.int64))) == [17]
    assert ops.ReduceScatterV().infer_shape([17], SIZES) == [4]
    assert ops.ReduceScatterV().infer_shape([17], [17, 0, 0, 0, 0, 0, 0, 0]) == [0]
    assert ops.AllGatherV().infer_shape([0], [0] * 8) == [0]
    assert ops.ReduceScatterV("min").infer_dtype(ms.int8, SIZES) == ms.int8
    with exactly(TypeError, "For 'ReduceScatterV', the reduce op 'max' should be one of "
                            "['sum', 'prod'] for a Tensor of Complex64, but got 'max'."):
        ops.ReduceScatterV("max").infer_dtype(ms.complex64, SIZES)


@pytest.mark.parametrize("name,arg,x", [("AllGatherV", "output_split_sizes", [4]),
                                        ("ReduceScatterV", "input_split_sizes", [17])])
def test_uneven_collectives_reject_bad_split_sizes(sim, name, arg, x):
    sim(8, 3)
    prim = getattr(ops, name)()
    with exactly(ValueError, f"For '{name}', the length of '{arg}' should be == rank_size: 8, "
                             f"but got 7 ([3, 0, 2, 4, 1, 0, 5])."):
        prim.infer_shape(x, SIZES[:7])
    with exactly(ValueError, f"For '{name}', every element of '{arg}' should be >= 0, but got "
                             f"[3, 0, 2, 4, 1, 0, 7, -2]."):
        prim.infer_shape(x, SIZES[:6] + [7, -2])
    with exactly(TypeError, f"For '{name}', every element of '{arg}' should be an int, but got "
                            f"float in [3, 0, 2, 4.0, 1, 0, 5, 2]."):
        prim.infer_shape(x, SIZES[:3] + [4.0] + SIZES[4:])
    with exactly(TypeError, f"For '{name}', the '{arg}' should be a 1-D int Tensor, list or "
                            f"tuple, but got an array of shape [8] and dtype float32."):
        prim.infer_shape(x, Tensor(np.array(SIZES, np.float32)))
    with exactly(ValueError, f"For '{name}', the 'input_x' should be 1-D (flatten it first), "
                             f"but got shape [2, 2]."):
        prim.infer_shape([2, 2], SIZES)


def test_uneven_collectives_check_the_input_against_the_split_sizes(sim):
    sim(8, 3)
    with exactly(ValueError, "For 'AllGatherV', the 'input_x' should have output_split_sizes[3] "
                             "= 4 elements (this rank's piece), but got 5 (output_split_sizes "
                             "[3, 0, 2, 4, 1, 0, 5, 2])."):
        ops.AllGatherV().infer_shape([5], SIZES)
    with exactly(ValueError, "For 'ReduceScatterV', the sum of 'input_split_sizes' should be == "
                             "the 'input_x' length: 16, but got [3, 0, 2, 4, 1, 0, 5, 2] (sum "
                             "17)."):
        ops.ReduceScatterV().infer_shape([16], SIZES)
    with exactly(ValueError, "For 'ReduceScatterV', the sum of 'input_split_sizes' should be == "
                             "the 'input_x' length: 16, but got [3, 0, 2, 4, 1, 0, 5, 2] (sum "
                             "17)."):
        ops.ReduceScatterV()(Tensor(np.ones(16, np.float32)), SIZES)     # eager: before MPI


# -- AllToAllV --------------------------------------------------------------------------------

def a2av_world(sim, n=4, rank=1, **kw):
    sim(n, rank)
    return ops.AllToAllV(**kw)


def test_alltoallv_forms_infer_their_output_length(sim):
    a = a2av_world(sim, block_size=2)
    counts = [1, 0, 3, 2]
    assert a.infer_shape([4, 4], counts, [0, 1, 1, 4], [2, 2, 0, 1], [3, 0, 5, 2]) == [10]
    assert a.infer_shape([12], counts, [2, 2, 1, 0]) == [10]               # MindSpore form
    assert a.infer_shape([12], counts) == [-1]                             # derived form
    assert a.infer_shape([-1, 2], counts, [5, 0, 0, 0]) == [10]            # dynamic input
    assert a.infer_shape([12], (1, 0, 3, 2), np.array([2, 2, 1, 0])) == [10]
    assert counts == [1, 0, 3, 2]
    assert a.infer_dtype(ms.bfloat16, counts, counts) == ms.bfloat16


def test_alltoallv_seed002_shapes(sim):
    sim(2, 0)
    a = ops.AllToAllV()
    assert a.infer_shape([2, 4], [2, 4], [0, 2], [2, 2], [0, 2]) == [4]
    sim(2, 1)
    a = ops.AllToAllV()
    assert a.infer_shape([2, 3], [2, 1], [0, 2], [4, 1], [0, 4]) == [5]


def test_alltoallv_eager_accepts_int_tensors_as_counts(sim):
    a = a2av_world(sim)
    counts = Tensor(np.array([1, 1, 1, 1], np.int64))
    with pytest.raises(SimulationError, match="^For 'AllToAllV', data cannot move"):
        a(Tensor(np.arange(4, dtype=np.int8)), counts, counts)          # inferred, then refused
    with exactly(TypeError, "For 'AllToAllV', every element of 'send_numel_list' should be an "
                            "int, but got float in [1.0, 1.0, 1.0, 1.0]."):
        ops.AllToAllV()(Tensor(np.arange(4, dtype=np.int8)), Tensor(np.ones(4, np.float32)),
                        counts)
    with exactly(TypeError, "For 'AllToAllV', the 'send_counts' should be a 1-D int Tensor, "
                            "list or tuple, but got an array of shape [2, 2] and dtype int64."):
        a.infer_shape([4], np.ones([2, 2], np.int64))


def test_alltoallv_count_errors(sim):
    a = a2av_world(sim, block_size=2)
    ok = [1, 1, 1, 1]
    with exactly(TypeError, "For 'AllToAllV', the number of inputs should be 2 (x, send_counts), "
                            "3 (x, send_numel_list, recv_numel_list) or 5 (x, send_counts, "
                            "send_displs, recv_counts, recv_displs), but got 4."):
        a.infer_shape([8], ok, ok, ok)
    with exactly(TypeError, "For 'AllToAllV', the number of inputs should be 2 (x, send_counts), "
                            "3 (x, send_numel_list, recv_numel_list) or 5 (x, send_counts, "
                            "send_displs, recv_counts, recv_displs), but got 1."):
        a.infer_shape([8])
    with exactly(ValueError, "For 'AllToAllV', the length of 'recv_counts' should be == "
                             "rank_size: 4, but got 3 ([1, 1, 1])."):
        a.infer_shape([8], ok, [0, 1, 2, 3], [1, 1, 1], [0, 1, 2])
    with exactly(ValueError, "For 'AllToAllV', every element of 'send_displs' should be >= 0, "
                             "but got [0, -1, 2, 3]."):
        a.infer_shape([8], ok, [0, -1, 2, 3], ok, [0, 1, 2, 3])
    with exactly(TypeError, "For 'AllToAllV', every element of 'send_counts' should be an int, "
                            "but got bool in [True, 1, 1, 1]."):
        a.infer_shape([8], [True, 1, 1, 1])
    with exactly(TypeError, "For 'AllToAllV', the type of 'recv_numel_list' should be one of "
                            "[list, tuple], but got int."):
        a.infer_shape([8], ok, 4)
    with exactly(ValueError, "For 'AllToAllV', the block sent to rank 3 should lie inside the "
                             "input of 8 elements, but got send_displs[3] + send_counts[3] = "
                             "3 + 2 blocks of 2 = 10 elements."):
        a.infer_shape([8], [1, 1, 1, 2], [0, 1, 2, 3], ok, [0, 1, 2, 3])
    with exactly(ValueError, "For 'AllToAllV', the block sent to rank 2 should lie inside the "
                             "input of 5 elements, but got packed displacement + "
                             "send_numel_list[2] = 2 + 1 blocks of 2 = 6 elements."):
        a.infer_shape([5], [1, 1, 1, 0], ok)
    with exactly(ValueError, "For 'AllToAllV', the block received from rank 0 should lie inside "
                             "the output of sum(recv_counts) = 4 blocks, but got recv_displs[0] "
                             "+ recv_counts[0] = 4 + 1 = 5."):
        a.infer_shape([8], ok, [0, 1, 2, 3], ok, [4, 0, 1, 2])
    with exactly(ValueError, "For 'AllToAllV', the blocks received should not overlap, but got "
                             "the blocks from ranks 1 and 2 overlapping at 1 (recv_displs "
                             "[3, 0, 1, 1], recv_counts [1, 2, 1, 0])."):
        a.infer_shape([8], ok, [0, 1, 2, 3], [1, 2, 1, 0], [3, 0, 1, 1])
    # blocks of zero length may sit anywhere; the rest must tile the output
    assert a.infer_shape([8], [1, 1, 2, 0], [0, 1, 2, 9], [1, 2, 0, 1], [3, 0, 99, 2]) == [8]


def test_alltoallv_lower_plans_constant_counts_once(sim):
    a = a2av_world(sim, check_counts=False)
    x = SimpleNamespace(kind="input", shape=(4,), value=None)
    const = SimpleNamespace(kind="const", shape=(), value=[1, 1, 1, 1])
    kernel = a.lower([x, const, const], None)
    assert kernel is not a.kernel and len(a._plans) == 1
    with pytest.raises(SimulationError, match="^For 'AllToAllV', data cannot move"):
        kernel(np.arange(4, dtype=np.int8), [1, 1, 1, 1], [1, 1, 1, 1])
    checked = ops.AllToAllV()
    assert checked.lower([x, const, const], None) == checked.kernel   # exchanges every call
    bad = SimpleNamespace(kind="const", shape=(), value=[2, 2, 2, 2])
    with pytest.raises(ValueError, match="the block sent to rank 2 should lie inside"):
        a.lower([x, bad, const], None)


def test_alltoallv_count_matrix_messages(sim):
    a = a2av_world(sim, n=3, rank=0)

    def matrix(status, sent, expected, digests=(0, 0, 0)):
        return np.hstack([np.array(digests)[:, None], np.array(status)[:, None],
                          np.array(sent), np.array(expected)])

    def check(m, status):               # as a call of this rank (status `status`) checks m
        assert m[0, 1] == status        # (a stand-in for the Allgather: it fills in m)
        comm = SimpleNamespace(Allgather=lambda send, recv: recv[0].__setitem__(Ellipsis, m))
        a._digest = m[0, 0]
        a._count_check(comm, np.array(m[0], np.int64), status > 0, "send counts [1, 2, 0]")()

    good = [[1, 2, 0], [0, 1, 5], [3, 0, 0]]
    check(matrix([4, 4, 4], good, np.array(good).T), 4)        # consistent: passes
    wrong = np.array(good).T.copy()
    wrong[1, 0] = 3                     # rank 1 expects 3 from rank 0, which sends 2
    wrong[2, 1] = 4
    with exactly(ValueError, "For 'AllToAllV', every rank's recv_counts[i] should equal rank "
                             "i's send_counts to it, but got: rank 0 sends 2 to rank 1 but rank "
                             "1 expects 3; rank 1 sends 5 to rank 2 but rank 2 expects 4."):
        check(matrix([4, 4, 4], good, wrong), 4)
    with exactly(ValueError, "For 'AllToAllV', the counts of every rank should be valid, but "
                             "got invalid counts on group rank(s) [1] (see the error raised "
                             "there)."):
        check(matrix([4, 0, 4], good, np.array(good).T), 4)
    with exactly(ValueError, "For 'AllToAllV', every rank should use the same call form and "
                             "block bytes (block_size * itemsize), but got (form, block bytes) "
                             "by group rank: [('explicit', 4), ('derived', 4), "
                             "('explicit', 2)]."):
        check(matrix([4, -4, 2], good, np.array(good).T), 4)
    check(matrix([-4, -4, -4], good, np.zeros((3, 3), int)), -4)   # derived form
    many = np.arange(9).reshape(3, 3) + 1
    with pytest.raises(ValueError, match=r"rank 2 sends 8 to rank 1 but rank 1 expects 0 "
                                         r"\(and 1 more pairs\)\.$") as info:
        check(matrix([4, 4, 4], many, np.zeros((3, 3), int)), 4)
    # what the eager check shows (desync.Disagreement): this rank's side and the detail alone
    assert info.value.side == "send counts [1, 2, 0]" and info.value.gather
    assert info.value.detail.startswith("every rank's recv_counts[i] should equal")
    # the digests of the eager check, carried in the same row, differ: a different call
    with exactly(ValueError, "For 'AllToAllV', every rank should make the same call, but got "
                             "different calls (is check_collectives set alike on every rank?)."):
        check(matrix([4, 4, 4], good, np.array(good).T, digests=(7, 7, 9)), 4)
    check(matrix([4, 4, 4], good, np.array(good).T, digests=(7, 7, 7)), 4)
    a._digest = 0


def test_alltoallv_plan_cache_is_bounded(sim):
    a = a2av_world(sim, n=2, rank=0)
    for numel in range(1, 400):                 # data-dependent counts: a new plan each call
        assert a.infer_shape([numel], [0, 1], [numel - 1, 0]) == [numel - 1]
    assert len(a._plans) == CACHE_LIMIT


def test_simulation_refuses_again_for_a_signature_already_seen(sim):
    sim(8, 3)
    x = Tensor(np.ones([8, 2], np.float32))
    for prim, args in [(ops.AllGather(), (x,)), (ops.Broadcast(0), ((x,),)),
                       (ops.AllToAllV(check_counts=False), (x, (2,) * 8, (2,) * 8))]:
        for _ in range(2):
            with pytest.raises(SimulationError, match=f"^For '{prim.name}', data cannot move"):
                prim(*args)
