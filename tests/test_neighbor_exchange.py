"""NeighborExchange and NeighborExchangeV2 on a simulated world: attributes, inference, errors
(data moves only under MPI: tests/ranks/test_neighbor_exchange.py)."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from msops.communication import SimulationError
from msops.primitives.neighbor_exchange import NeighborExchangeV2Grad


def exchange(**kw):
    args = dict(send_rank_ids=[1, 3], recv_rank_ids=[2], recv_shapes=([4, 2],),
                send_shapes=([3], [2, 2]), recv_type=ms.float32)
    args.update(kw)
    return ops.NeighborExchange(**args)


def test_neighbor_exchange_infers_the_received_tuple(sim):
    sim(4, 0)
    prim = exchange()
    assert prim.infer([[[3], [2, 2]]], [[ms.float32, ms.int8]]) == (([4, 2],), (ms.float32,))
    assert prim.attrs["side_effect_io"] and prim.group == "world_group"
    with pytest.raises(SimulationError):
        prim((Tensor(np.zeros(3, np.float32)), Tensor(np.zeros((2, 2), np.float32))))


@pytest.mark.parametrize("kw,match", [
    (dict(send_rank_ids=[1, 4]), r"every value of 'send_rank_ids' should be an int in \[0, 4\)"),
    (dict(recv_rank_ids=[2, 2], recv_shapes=([1], [1])),
     r"the 'recv_rank_ids' should be a non-empty list of distinct ranks, but got \[2, 2\]"),
    (dict(send_rank_ids=[]), r"the 'send_rank_ids' should be a non-empty list"),
    (dict(send_shapes=([3],)), r"the 'send_shapes' should hold one shape per rank of "
                               r"'send_rank_ids': 2, but got 1"),
    (dict(recv_shapes=([4, -2],)), r"every shape of 'recv_shapes' should be a list of "
                                   r"non-negative ints"),
])
def test_neighbor_exchange_attribute_errors(sim, kw, match):
    sim(4, 0)
    with pytest.raises(ValueError, match=r"For 'NeighborExchange', " + match):
        exchange(**kw)


def test_neighbor_exchange_input_errors(sim):
    sim(4, 0)
    with pytest.raises(ValueError, match=r"For 'NeighborExchange', the 'input_x' shapes should "
                                         r"be the 'send_shapes' \[\[3\], \[2, 2\]\], but got "
                                         r"\[\[3\], \[2, 3\]\]"):
        exchange().infer([[[3], [2, 3]]], [[ms.float32, ms.float32]])
    with pytest.raises(TypeError, match=r"For 'NeighborExchange', the 'input_x' should be a "
                                        r"non-empty tuple or list of Tensors"):
        exchange().infer([[3]], [ms.float32])
    with pytest.raises(TypeError, match=r"For 'NeighborExchange', the type of 'recv_type' should be Type, but got str"):
        exchange(recv_type="float32")


def v2(**kw):
    args = dict(send_rank_ids=[1, -1, -1, -1, 2, -1, -1, -1], send_lens=[1, 2, 0, 0],
                recv_rank_ids=[1, -1, -1, -1, 2, -1, -1, -1], recv_lens=[2, 1, 0, 0])
    args.update(kw)
    return ops.NeighborExchangeV2(**args)


def test_neighbor_exchange_v2_pads_by_the_received_lengths(sim):
    sim(4, 0)
    assert v2().infer([[2, 3, 5, 4]], [ms.float16]) == ([2, 3, 8, 4], ms.float16)
    assert v2(recv_lens=[1, 1, 2, 3]).infer([[1, 1, 2, 2]], [ms.float32])[0] == [1, 1, 4, 7]
    grad = NeighborExchangeV2Grad(**v2().init_attrs)
    assert grad.infer([[2, 3, 8, 4]], [ms.float16]) == ([2, 3, 5, 4], ms.float16)


@pytest.mark.parametrize("kw,x,match", [
    (dict(send_rank_ids=[1, -1, 2]), None, r"the 'send_rank_ids' should hold 8 ranks \(top, "
                                           r"top_right, right, bottom_right, bottom, "
                                           r"bottom_left, left, top_left; -1 for none\)"),
    (dict(recv_rank_ids=[1, -2, -1, -1, 2, -1, -1, -1]), None,
     r"every value of 'recv_rank_ids' should be an int in \[-1, 4\)"),
    (dict(send_lens=[1, 2, 0]), None, r"the 'send_lens' should be 4 non-negative ints \(top, "
                                      r"bottom, left, right\), but got \[1, 2, 0\]"),
    (dict(recv_lens=[1, -1, 0, 0]), None, r"the 'recv_lens' should be 4 non-negative ints"),
    (dict(data_format="NHWC"), None, r"the 'data_format' should be 'NCHW'"),
    (dict(), [1, 1, 1, 5], r"the 'send_lens' should be at most x's height 1 \(top, bottom\) and "
                           r"width 5 \(left, right\), but got \[1, 2, 0, 0\]"),
    (dict(), [1, 5, 5], r"the rank of 'x' should be 4"),
])
def test_neighbor_exchange_v2_errors(sim, kw, x, match):
    sim(4, 0)
    with pytest.raises(ValueError, match=r"For 'NeighborExchangeV2', " + match):
        v2(**kw).infer([x], [ms.float32])
