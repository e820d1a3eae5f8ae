"""NeighborExchange and NeighborExchangeV2 under real MPI on 2 and 4 ranks, against numpy.

Every rank builds every rank's data from the rank number, so each can compute what it
should receive (and the gradient it should get back) without communicating.
"""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size, get_rank
from msops.primitives.neighbor_exchange import NeighborExchangeV2Grad

RANKS = (2, 4)
N, R = get_group_size(), get_rank()


def block(rank, *shape, seed=0):
    return np.random.default_rng(100 * rank + seed).standard_normal(shape)


@pytest.fixture(params=["pynative", "graph"])
def mode(request):
    ms.set_context(mode=ms.PYNATIVE_MODE if request.param == "pynative" else ms.GRAPH_MODE)
    yield request.param
    ms.set_context(mode=ms.PYNATIVE_MODE)


# -- NeighborExchange: a ring, both ways, each message of its sender's own shape --------------
def ring_peers(rank):
    """(send ids, recv ids): to the next rank (and the previous one, when that is another)."""
    nxt, prv = (rank + 1) % N, (rank - 1) % N
    return ([nxt, prv], [prv, nxt]) if N > 2 else ([nxt], [prv])


def sent(rank, k):
    """Tensor k that `rank` sends: shape (2, rank + 1 + k)."""
    return block(rank, 2, rank + 1 + k, seed=k)


def ring_exchange(rank, dtype=np.float64):
    send_ids, recv_ids = ring_peers(rank)
    # what recv_ids[j] sends this rank: its tensor at the position of this rank in its list
    recv_shapes = [list(sent(q, ring_peers(q)[0].index(rank)).shape) for q in recv_ids]
    return ops.NeighborExchange(send_rank_ids=send_ids, recv_rank_ids=recv_ids,
                                recv_shapes=recv_shapes,
                                send_shapes=[list(sent(rank, k).shape) for k in range(len(send_ids))],
                                recv_type=ms.float64 if dtype == np.float64 else ms.float32)


class Ring(nn.Cell):
    def __init__(self):
        super().__init__()
        self.exchange = ring_exchange(R)

    def construct(self, *xs):
        return self.exchange(xs)


def test_neighbor_exchange_ring_equals_numpy(mode):
    send_ids, recv_ids = ring_peers(R)
    xs = [Tensor(sent(R, k)) for k in range(len(send_ids))]
    outs = Ring()(*xs)
    assert len(outs) == len(recv_ids)
    for out, q in zip(outs, recv_ids):
        np.testing.assert_array_equal(out.asnumpy(), sent(q, ring_peers(q)[0].index(R)))


def test_neighbor_exchange_backward_sends_each_gradient_back(mode):
    """loss = sum over received tensors of out_j * W(rank, j): x_k's gradient is the weight
    its receiver put on it."""
    send_ids, recv_ids = ring_peers(R)
    net = Ring()
    mul, total = ops.Mul(), ops.ReduceSum()

    def weight(rank, j):
        q = ring_peers(rank)[1][j]
        return block(rank, *sent(q, ring_peers(q)[0].index(rank)).shape, seed=50 + j)

    def loss(*xs):
        outs = net(*xs)
        terms = [total(mul(o, Tensor(weight(R, j))), ()) for j, o in enumerate(outs)]
        return terms[0] if len(terms) == 1 else terms[0] + terms[1]

    xs = [Tensor(sent(R, k)) for k in range(len(send_ids))]
    grads = ms.grad(loss, tuple(range(len(xs))))(*xs)
    for k, (g, q) in enumerate(zip(grads, send_ids)):
        np.testing.assert_array_equal(g.asnumpy(), weight(q, ring_peers(q)[1].index(R)))


def test_a_message_of_the_wrong_size_is_a_value_error():
    """Rank 1 expects one more element from rank 0 than rank 0 sends (2 ranks take part)."""
    if R > 1:
        return
    peer = 1 - R
    expect = [3] if R == 0 else [4]
    prim = ops.NeighborExchange(send_rank_ids=[peer], recv_rank_ids=[peer], recv_shapes=[expect],
                                send_shapes=[[3]], recv_type=ms.float32)
    x = Tensor(np.zeros(3, np.float32))
    if R == 0:
        prim((x,))
    else:
        with pytest.raises(ValueError, match=r"For 'NeighborExchange', the message from rank 0 "
                                             r"should hold 16 bytes \(shape \[4\], float32\), "
                                             r"but got 12 bytes"):
            prim((x,))


# -- NeighborExchangeV2: blocks of a global image on a (2, N/2) grid of ranks ------------------
ROWS, COLS = 2, N // 2
BH, BW = 3, 4                                   # block height, width
SEND = [1, 2, 1, 2]                             # top, bottom, left, right rows/cols sent
RECV = [SEND[1], SEND[0], SEND[3], SEND[2]]     # a neighbour's bottom rows arrive on top, ...
STEPS = ((-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1))


def grid_pos(rank):
    return divmod(rank, COLS)


def neighbour(rank, step):
    (i, j), (di, dj) = grid_pos(rank), step
    i, j = i + di, j + dj
    return i * COLS + j if 0 <= i < ROWS and 0 <= j < COLS else -1


def image(seed=0):
    """The global (2, 2, ROWS*BH, COLS*BW) image every rank holds a block of."""
    return np.concatenate([np.concatenate([block(i * COLS + j, 2, 2, BH, BW, seed=seed)
                                           for j in range(COLS)], axis=3)
                           for i in range(ROWS)], axis=2)


def window(rank, padded):
    """This rank's block and the halo around it, in the zero-padded image."""
    i, j = grid_pos(rank)
    return padded[:, :, i * BH:i * BH + BH + RECV[0] + RECV[1],
                  j * BW:j * BW + BW + RECV[2] + RECV[3]]


def pad(a):
    return np.pad(a, ((0, 0), (0, 0), (RECV[0], RECV[1]), (RECV[2], RECV[3])))


def v2_attrs(rank):
    ids = [neighbour(rank, s) for s in STEPS]
    return dict(send_rank_ids=ids, send_lens=SEND, recv_rank_ids=ids, recv_lens=RECV)


def test_neighbor_exchange_v2_halo_equals_numpy(mode):
    class Halo(nn.Cell):
        def __init__(self):
            super().__init__()
            self.exchange = ops.NeighborExchangeV2(**v2_attrs(R))

        def construct(self, x):
            return self.exchange(x)

    got = Halo()(Tensor(block(R, 2, 2, BH, BW).astype(np.float32)))
    np.testing.assert_array_equal(got.asnumpy(), window(R, pad(image())).astype(np.float32))


def test_neighbor_exchange_v2_backward_adds_the_halos_gradients_back(mode):
    """loss = sum(out * W_rank): x's gradient sums, over every rank's window, the weights on
    the cells that show x's elements (a corner shows in four windows)."""
    prim = ops.NeighborExchangeV2(**v2_attrs(R))
    shape = [2, 2, BH + RECV[0] + RECV[1], BW + RECV[2] + RECV[3]]
    mul, total = ops.Mul(), ops.ReduceSum()

    def loss(x):
        return total(mul(prim(x), Tensor(block(R, *shape, seed=7))), ())

    grad = ms.grad(loss)(Tensor(block(R, 2, 2, BH, BW)))
    acc = np.zeros(pad(image()).shape)
    for q in range(N):
        window(q, acc)[...] += block(q, *shape, seed=7)
    i, j = grid_pos(R)
    want = acc[:, :, RECV[0] + i * BH:RECV[0] + (i + 1) * BH,
               RECV[2] + j * BW:RECV[2] + (j + 1) * BW]
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-12)

    # the reverse exchange run forward gives the same; its own backward is the exchange
    dout = Tensor(block(R, *shape, seed=7))
    back = NeighborExchangeV2Grad(**v2_attrs(R))
    np.testing.assert_allclose(back(dout).asnumpy(), want, rtol=1e-12)

    def loss_back(d):
        return total(mul(back(d), Tensor(block(R, 2, 2, BH, BW, seed=8))), ())

    np.testing.assert_allclose(ms.grad(loss_back)(dout).asnumpy(),
                               window(R, pad(image(seed=8))), rtol=1e-12)
