"""Point-to-point exchanges with chosen neighbours: NeighborExchange and NeighborExchangeV2.

Every message is posted at once (`Isend`/`Irecv`, then one `Waitall`), so an exchange in
which every rank both sends and receives cannot deadlock on ordering. Ranks are ranks of
`group`. As with Send/Receive, the ranks must post matching exchanges: a message of
another size is a ValueError on its receiver; a neighbour that never sends leaves the
receiver waiting (nothing in the op can know it will not come).

Backward rules are the exchange reversed (each gradient goes back to where its value came
from); the exchanges carry `side_effect_io`, so dead-node elimination never drops one on
one rank while its neighbour waits for it.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.communication import GlobalComm
from msops.primitives.collective import Collective, target_dtypes, tensor_dtype
from msops.primitives.math_ops import check_rank, check_tensor_list
from msops.primitives.mpi import reraise
from msops.primitives.primitive import prim_attr_register
from msops.primitives.rules import bprop

__all__ = ["NeighborExchange", "NeighborExchangeV2"]

#: tags of the exchanges' messages (above what users' Send/Receive usually pick)
_TAG = 32000
_V2_TAG = 32100
_V2_GRAD_TAG = 32200


def _int_list(prim: Collective, arg: str, value: Any, low: int) -> list[int]:
    """A list/tuple of ints, each in [low, rank_size)."""
    validator.check_value_type(arg, value, (list, tuple), prim.name)
    for v in value:
        if not isinstance(v, int) or isinstance(v, bool) or not low <= v < prim.rank_size:
            raise ValueError(f"For '{prim.name}', every value of '{arg}' should be an int in "
                             f"[{low}, {prim.rank_size}) (the ranks of group '{prim.group}'), "
                             f"but got {list(value)}.")
    return list(value)


def _shape_list(prim: Collective, arg: str, value: Any, count: int, of: str) -> list[list[int]]:
    """One shape (a list of non-negative ints) per rank of `of`."""
    validator.check_value_type(arg, value, (list, tuple), prim.name)
    if len(value) != count:
        raise ValueError(f"For '{prim.name}', the '{arg}' should hold one shape per rank of "
                         f"'{of}': {count}, but got {len(value)}.")
    shapes = []
    for s in value:
        if not isinstance(s, (list, tuple)) or any(
                not isinstance(d, int) or isinstance(d, bool) or d < 0 for d in s):
            raise ValueError(f"For '{prim.name}', every shape of '{arg}' should be a list of "
                             f"non-negative ints, but got {list(value)}.")
        shapes.append(list(s))
    return shapes


def _exchange(prim: Collective, sends: Sequence[tuple[np.ndarray, int, int]],
              recvs: Sequence[tuple[np.ndarray, int, int]]) -> None:
    """Post every receive (buffer, source, tag) and send (buffer, dest, tag), wait for all,
    and check each message filled its buffer."""
    from mpi4py import MPI
    comm = prim._comm()
    requests, types = [], []
    try:
        for out, src, tag in recvs:
            t = mstype.mpi_move_type(out.dtype)
            types.append(t)
            requests.append(comm.Irecv([out, t], src, tag))
        for x, dst, tag in sends:
            requests.append(comm.Isend([x, mstype.mpi_move_type(x.dtype)], dst, tag))
        statuses = [MPI.Status() for _ in requests]
        MPI.Request.Waitall(requests, statuses)
    except Exception as err:
        reraise(prim, err)
    for (out, src, _), t, status in zip(recvs, types, statuses):
        if status.Get_count(t) != out.size:
            raise ValueError(f"For '{prim.name}', the message from rank {src} should hold "
                             f"{out.nbytes} bytes (shape {list(out.shape)}, {out.dtype}), but "
                             f"got {status.Get_count(MPI.BYTE)} bytes.")


class NeighborExchange(Collective):
    """Send tensor i of the input tuple to `send_rank_ids[i]`; receive a tensor of
    `recv_shapes[j]` and `recv_type` from `recv_rank_ids[j]`. Output: the received tuple.

    The inputs' shapes must be `send_shapes`; ids within each list are distinct.
    """

    # pairwise messages whose peers, shapes and counts differ by rank by design: not
    # checked as one call of the group (like Send/Receive); the watchdog still times it
    point_to_point = True

    @prim_attr_register
    def __init__(self, send_rank_ids: Sequence[int], recv_rank_ids: Sequence[int],
                 recv_shapes: Sequence[Sequence[int]], send_shapes: Sequence[Sequence[int]],
                 recv_type: mstype.Type, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_group(group)
        for arg, ids in (("send_rank_ids", send_rank_ids), ("recv_rank_ids", recv_rank_ids)):
            ids = _int_list(self, arg, ids, 0)
            if not ids or len(set(ids)) != len(ids):
                raise ValueError(f"For '{self.name}', the '{arg}' should be a non-empty list "
                                 f"of distinct ranks, but got {ids}.")
        self._send_shapes = _shape_list(self, "send_shapes", send_shapes, len(send_rank_ids),
                                        "send_rank_ids")
        self._recv_shapes = _shape_list(self, "recv_shapes", recv_shapes, len(recv_rank_ids),
                                        "recv_rank_ids")
        validator.check_value_type("recv_type", recv_type, mstype.Type, self.name)
        validator.check_type_name("recv_type", recv_type, target_dtypes, self.name)
        self.add_prim_attr("side_effect_io", True)

    def infer_shape(self, x_shapes: Any) -> tuple:
        x_shapes = check_tensor_list(self.name, "input_x", x_shapes)
        if [list(s) for s in x_shapes] != self._send_shapes:
            raise ValueError(f"For '{self.name}', the 'input_x' shapes should be the "
                             f"'send_shapes' {self._send_shapes}, but got "
                             f"{[list(s) for s in x_shapes]}.")
        return tuple(list(s) for s in self._recv_shapes)

    def infer_dtype(self, x_dtypes: Any) -> tuple:
        for d in check_tensor_list(self.name, "input_x", x_dtypes):
            tensor_dtype(self, d, "input_x")
        return (self.recv_type,) * len(self._recv_shapes)

    def kernel(self, xs: Sequence[np.ndarray]) -> tuple:
        outs = tuple(np.empty(tuple(s), self.recv_type.np_dtype) for s in self._recv_shapes)
        _exchange(self, [(np.ascontiguousarray(x), r, _TAG)
                         for x, r in zip(xs, self.send_rank_ids)],
                  [(o, r, _TAG) for o, r in zip(outs, self.recv_rank_ids)])
        return outs

    def comm_bytes(self, in_bytes: int) -> int:
        return in_bytes


#: NeighborExchangeV2's 8 directions, in MindSpore's order: (row side, column side), where
#: -1 is the top/left border, +1 the bottom/right one and 0 the whole extent
DIRECTIONS = ((-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1))
DIRECTION_NAMES = ("top", "top_right", "right", "bottom_right", "bottom", "bottom_left",
                   "left", "top_left")


def _opposite(k: int) -> int:
    return (k + 4) % 8


def _border(side: int, size: int, before: int, after: int, inner: bool) -> slice:
    """Along one dim of extent `size` (+ halos `before`/`after` when not `inner`): the
    first `before` (side -1), the last `after` (+1) or the whole interior (0)."""
    if inner:                   # inside x: the rows/cols sent
        return slice(0, before) if side < 0 else slice(size - after, size) if side > 0 \
            else slice(0, size)
    return slice(0, before) if side < 0 else slice(before + size, before + size + after) \
        if side > 0 else slice(before, before + size)


class NeighborExchangeV2(Collective):
    """The 8-neighbour halo exchange of an NCHW tensor: x (N, C, H, W) ->
    (N, C, H + recv_top + recv_bottom, W + recv_left + recv_right), x in the middle, each
    border filled from the neighbour in that direction (zeros where its id is -1).

    `send_rank_ids`, `recv_rank_ids`: 8 group ranks (or -1: none), in the order top,
    top_right, right, bottom_right, bottom, bottom_left, left, top_left; `send_lens`,
    `recv_lens`: [top, bottom, left, right] rows/columns sent from x's borders and
    received around it (a corner sends its send_lens' rows by columns).
    """

    point_to_point = True           # halo messages differ by rank (see NeighborExchange)

    @prim_attr_register
    def __init__(self, send_rank_ids: Sequence[int], send_lens: Sequence[int],
                 recv_rank_ids: Sequence[int], recv_lens: Sequence[int],
                 data_format: str = "NCHW", group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_group(group)
        for arg, ids in (("send_rank_ids", send_rank_ids), ("recv_rank_ids", recv_rank_ids)):
            if len(_int_list(self, arg, ids, -1)) != 8:
                raise ValueError(f"For '{self.name}', the '{arg}' should hold 8 ranks (top, "
                                 f"top_right, right, bottom_right, bottom, bottom_left, left, "
                                 f"top_left; -1 for none), but got {list(ids)}.")
        for arg, lens in (("send_lens", send_lens), ("recv_lens", recv_lens)):
            validator.check_value_type(arg, lens, (list, tuple), self.name)
            if len(lens) != 4 or any(not isinstance(v, int) or isinstance(v, bool) or v < 0
                                     for v in lens):
                raise ValueError(f"For '{self.name}', the '{arg}' should be 4 non-negative "
                                 f"ints (top, bottom, left, right), but got {list(lens)}.")
        validator.check_value_type("data_format", data_format, str, self.name)
        if data_format != "NCHW":
            raise ValueError(f"For '{self.name}', the 'data_format' should be 'NCHW' (msops "
                             f"implements no other layout), but got '{data_format}'.")
        self.add_prim_attr("side_effect_io", True)

    def send_region(self, x_shape: Sequence[int], k: int) -> tuple:
        """The index of what x sends in direction k."""
        rows, cols = DIRECTIONS[k]
        t, b, l, r = self.send_lens
        return (slice(None), slice(None), _border(rows, x_shape[2], t, b, True),
                _border(cols, x_shape[3], l, r, True))

    def recv_region(self, x_shape: Sequence[int], k: int) -> tuple:
        """The index, in the output, of what comes from direction k."""
        rows, cols = DIRECTIONS[k]
        t, b, l, r = self.recv_lens
        return (slice(None), slice(None), _border(rows, x_shape[2], t, b, False),
                _border(cols, x_shape[3], l, r, False))

    def center(self, x_shape: Sequence[int]) -> tuple:
        t, _, l, _ = self.recv_lens
        return (slice(None), slice(None), slice(t, t + x_shape[2]), slice(l, l + x_shape[3]))

    def check_x(self, x_shape: Sequence[int]) -> None:
        check_rank(self.name, "x", x_shape, 4, 4)
        t, b, l, r = self.send_lens
        if max(t, b) > x_shape[2] or max(l, r) > x_shape[3]:
            raise ValueError(f"For '{self.name}', the 'send_lens' should be at most x's height "
                             f"{x_shape[2]} (top, bottom) and width {x_shape[3]} (left, right), "
                             f"but got {list(self.send_lens)} for x shape {tuple(x_shape)}.")

    def padded_shape(self, x_shape: Sequence[int]) -> list:
        t, b, l, r = self.recv_lens
        return [x_shape[0], x_shape[1], x_shape[2] + t + b, x_shape[3] + l + r]

    def infer_shape(self, x_shape: list) -> list:
        self.check_x(x_shape)
        return self.padded_shape(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return tensor_dtype(self, x_dtype)

    def comm_bytes(self, in_bytes: int) -> int:
        return in_bytes

    writes_output = True

    def kernel(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            out = np.empty(self.padded_shape(x.shape), x.dtype)
        out.fill(0)
        out[self.center(x.shape)] = x
        sends = [(np.ascontiguousarray(x[self.send_region(x.shape, k)]), dst, _V2_TAG + k)
                 for k, dst in enumerate(self.send_rank_ids) if dst >= 0]
        recvs = [(np.empty(out[self.recv_region(x.shape, k)].shape, x.dtype), src, k)
                 for k, src in enumerate(self.recv_rank_ids) if src >= 0]
        # what comes from direction k was sent by that neighbour towards the opposite one
        _exchange(self, sends, [(buf, src, _V2_TAG + _opposite(k)) for buf, src, k in recvs])
        for buf, _, k in recvs:
            out[self.recv_region(x.shape, k)] = buf
        return out


class NeighborExchangeV2Grad(NeighborExchangeV2):
    """`NeighborExchangeV2Grad(<the exchange's attrs>)(dout)`: the exchange reversed. Each
    received border of dout goes back to the rank it came from, and what comes back is
    added to the borders x sent: dx (N, C, H, W). Internal (NeighborExchangeV2's backward)."""

    def x_shape(self, dout_shape: Sequence[int]) -> list:
        t, b, l, r = self.recv_lens
        return [dout_shape[0], dout_shape[1], dout_shape[2] - t - b, dout_shape[3] - l - r]

    def infer_shape(self, dout_shape: list) -> list:
        check_rank(self.name, "dout", dout_shape, 4, 4)
        shape = self.x_shape(dout_shape)
        if min(shape[2:]) < 0:
            raise ValueError(f"For '{self.name}', the 'dout shape' should exceed the "
                             f"'recv_lens' {list(self.recv_lens)}, but got {tuple(dout_shape)}.")
        self.check_x(shape)
        return shape

    def kernel(self, dout: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        shape = self.x_shape(dout.shape)
        if out is None:
            out = np.empty(shape, dout.dtype)
        out[...] = dout[self.center(shape)]
        sends = [(np.ascontiguousarray(dout[self.recv_region(shape, k)]), src,
                  _V2_GRAD_TAG + k) for k, src in enumerate(self.recv_rank_ids) if src >= 0]
        recvs = [(np.empty(out[self.send_region(shape, k)].shape, dout.dtype), dst, k)
                 for k, dst in enumerate(self.send_rank_ids) if dst >= 0]
        _exchange(self, sends, [(buf, dst, _V2_GRAD_TAG + _opposite(k))
                                for buf, dst, k in recvs])
        for buf, _, k in recvs:
            out[self.send_region(shape, k)] += buf
        return out


# -- backward rules: the exchange reversed ----------------------------------------------------
@bprop(NeighborExchange)
def neighbor_exchange_bprop(prim: NeighborExchange, inputs: list, out: Any, dout: list,
                            g: Any) -> tuple:
    """Each received tensor's gradient goes back to its sender: the exchange with the send
    and receive sides swapped."""
    xs = inputs[0]
    dtypes = set(xs.dtype)
    if len(dtypes) != 1:
        raise NotImplementedError(f"For '{prim.name}', there is no backward rule for inputs of "
                                  f"several dtypes {list(xs.dtype)} (the reversed exchange "
                                  f"receives one recv_type).")
    back = NeighborExchange(send_rank_ids=prim.recv_rank_ids, recv_rank_ids=prim.send_rank_ids,
                            recv_shapes=prim.send_shapes, send_shapes=prim.recv_shapes,
                            recv_type=dtypes.pop(), group=prim.group)
    grads = g.apply(back, [g.make_tuple(list(dout))])
    return ([g.getitem(grads, i) for i in range(len(xs.shape))],)


def _v2_attrs(prim: NeighborExchangeV2) -> dict:
    return {k: prim.init_attrs[k] for k in ("send_rank_ids", "send_lens", "recv_rank_ids",
                                            "recv_lens", "data_format", "group")}


@bprop(NeighborExchangeV2)
def neighbor_exchange_v2_bprop(prim: NeighborExchangeV2, inputs: list, out: Any, dout: Any,
                               g: Any) -> tuple:
    """The borders' gradients go back to the neighbours they came from (V2Grad)."""
    return (g.apply(NeighborExchangeV2Grad(**_v2_attrs(prim)), [dout]),)


@bprop(NeighborExchangeV2Grad)
def neighbor_exchange_v2_grad_bprop(prim: NeighborExchangeV2Grad, inputs: list, out: Any,
                                    dout: Any, g: Any) -> tuple:
    """Linear, and the transpose of the exchange: the exchange itself."""
    return (g.apply(NeighborExchangeV2(**_v2_attrs(prim)), [dout]),)
