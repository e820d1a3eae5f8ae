"""What the functional collectives (`comm_func`, `mint.distributed`) share: their argument
checks, in MindSpore's style and naming the public function; groups and global ranks
turned into the primitives' group ranks; the primitive of a call; the async handle; and
the packing that turns a list all-to-all into one AllToAllV.

Every call runs one of msops's communication primitives, so it inherits their cross-rank
check (the same error on every rank when the ranks' calls differ), the watchdog, the
dtype rules and the simulation world's refusal. The module sits in the ops layer
(tests/test_layers.py RELOCATED): it builds on the primitives.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor, check_tensor
from msops.communication.group import Group
from msops.communication import watchdog
from msops.communication.management import get_group
from msops.ops._dispatch import _prim
from msops.primitives import primitive as _primitive
from msops.primitives.alltoallv import AllToAllV
from msops.primitives.array_ops import Concat, Reshape, StridedSlice
from msops.primitives.collective import ReduceOp, check_reduce_dtype
from msops.primitives import desync
from msops.primitives.comm_ops import Broadcast, Receive, Send
from msops.primitives.primitive import remember

__all__ = ["CommHandle", "handle", "check_tensor", "check_tensors", "check_async",
           "resolve_group", "member_rank", "member_group", "reducing", "check_divisible", "group_rank", "check_op", "check_tag", "check_peer",
           "collective", "point_to_point", "shape_of", "exchange_lists", "split_rows",
           "send_to", "recv_from", "isend_to", "irecv_from", "single_exchange", "PendingHandle",
           "root_checked", "row_splits", "fail_together"]

#: the reduce ops the functional collectives name (ReduceOp's values)
REDUCE_OPS = (ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PROD, ReduceOp.LAND,
              ReduceOp.LOR, ReduceOp.LXOR, ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR)
#: the largest tag MPI guarantees (MPI_TAG_UB >= 32767), as Send/Receive check it
_MAX_TAG = 32767


class CommHandle:
    """The handle an `async_op=True` call returns. msops's collectives complete before they
    return (MPI's blocking calls), so the work is done when the handle is made and `wait()`
    returns at once; it exists so that scripts written for asynchronous backends run."""

    def wait(self) -> None:
        """Wait for the communication: already complete, so this returns at once."""
        return None

    def is_completed(self) -> bool:
        """Always True: the call completed before the handle was returned."""
        return True

    def __repr__(self) -> str:
        return "CommHandle(completed)"


class PendingHandle(CommHandle):
    """The handle of a started `isend` / `irecv`: the transfer runs while the caller goes
    on, and `wait()` completes it (watched by the watchdog like a blocking call), then
    runs `done(result)` (an irecv's write into its Tensor). A handle dropped before its
    wait() leaves its request and buffer to msops until the transfer has completed."""

    def __init__(self, prim: Any, request: Any, keep: Any, finish: Callable[[], Any],
                 done: Callable[[Any], None] | None = None) -> None:
        _reap()
        self._prim, self._request, self._finish, self._done = prim, request, finish, done
        self._orphan = weakref.finalize(self, _ORPHANS.append, (request, keep))

    def wait(self) -> None:
        """Wait until the transfer has completed (an error of it is raised here)."""
        if self._finish is None:
            return
        finish, done, self._finish, self._done = self._finish, self._done, None, None
        self._orphan.detach()
        g = self._prim._group
        watchdog.enter(self._prim.name, g.name, g.ranks, collective=False)
        try:
            result = finish()
        finally:
            watchdog.leave()
            self._request = None
        if done is not None:
            done(result)

    def is_completed(self) -> bool:
        """Whether the transfer has completed (then `wait()` returns at once)."""
        return self._finish is None or bool(self._request.Get_status())

    def __repr__(self) -> str:
        return f"CommHandle({'completed' if self._finish is None else 'pending'})"


#: (request, buffer) of transfers whose handle was dropped unwaited: kept until complete
_ORPHANS: list = []


def _reap() -> None:
    """Forget the dropped transfers that have completed."""
    if _ORPHANS:
        _ORPHANS[:] = [(r, keep) for r, keep in _ORPHANS if not r.Test()]


def root_checked(api: str, g: Group, root: int, check: Callable[[], Any]) -> Any:
    """`check()` run on group rank `root` only (the arguments only the root passes: a
    scatter's list, a gather's targets), its verdict shared: with the cross-rank check on
    (the default), a failure raises the root's error on every rank of the group instead of
    leaving them in the collective the root never joins. Returns check()'s value (None
    elsewhere)."""
    failure: Exception | None = None
    value = None
    if g.rank == root:
        try:
            value = check()
        except (TypeError, ValueError) as err:
            failure = err
    if g.size == 1 or not desync.enabled() or _primitive._trace_hook is not None:
        if failure is not None:
            raise failure
        return value
    text = str(failure).encode()[:4096] if failure is not None else b""
    head = np.array([failure is not None, isinstance(failure, TypeError), len(text)], np.int32)
    head = collective(Broadcast, g, root_rank=root)((Tensor(head),))[0].asnumpy()
    if head[0]:
        raw = np.frombuffer(text, np.uint8) if g.rank == root else np.zeros(head[2], np.uint8)
        raw = collective(Broadcast, g, root_rank=root)((Tensor(raw),))[0].asnumpy()
        raise (TypeError if head[1] else ValueError)(raw.tobytes().decode(errors="replace"))
    return value


def fail_together(prim: Any, err: Exception) -> None:
    """Raise `err`, an argument error of a call of collective `prim` found on this rank
    alone (the other ranks may already wait in the call), after taking part in the eager
    check they wait in: with the check on, every rank raises (desync.refuse)."""
    if _primitive._trace_hook is None:
        desync.refuse(prim, err)
    raise err


def handle(async_op: bool) -> CommHandle | None:
    """What a call returns beside its result: a (completed) CommHandle when asked for."""
    return CommHandle() if async_op else None


def check_tensors(api: str, arg: str, values: Any, count: int | None = None) -> list:
    """A list or tuple of Tensors (of `count` when given: the group's size)."""
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"For '{api}', the '{arg}' should be a list or tuple of Tensors, but "
                        f"got {type(values).__name__}.")
    for i, v in enumerate(values):
        check_tensor(api, f"{arg}[{i}]", v)
    if count is not None and len(values) != count:
        raise ValueError(f"For '{api}', the length of '{arg}' should be the group size "
                         f"{count}, but got {len(values)}.")
    return list(values)


def check_async(api: str, async_op: Any) -> bool:
    if not isinstance(async_op, bool):
        raise TypeError(f"For '{api}', the 'async_op' should be a bool, but got "
                        f"{type(async_op).__name__}.")
    return async_op


def resolve_group(api: str, group: Any) -> Group:
    """The registered Group of `group` (None: the world; MindSpore's world names accepted);
    RuntimeError before init, TypeError for a non-str, ValueError for an unknown name."""
    if group is not None and not isinstance(group, str):
        raise TypeError(f"For '{api}', the 'group' should be a str or None, but got "
                        f"{type(group).__name__}.")
    return get_group(group, api)


def member_rank(api: str, g: Group) -> int:
    """This process's rank in `g`; ValueError when it is not a member."""
    if g.rank is None:
        me = get_group(None, api).rank
        raise ValueError(f"For '{api}', this process (world rank {me}) should be a "
                         f"member of group '{g.name}' (ranks {list(g.ranks)}), but it is not.")
    return g.rank


def member_group(api: str, group: Any) -> Group:
    """`resolve_group`, for a call this process takes part in (ValueError otherwise)."""
    g = resolve_group(api, group)
    member_rank(api, g)
    return g


def reducing(api: str, arg: str, tensor: Any, op: Any, group: Any,
             async_op: Any = False) -> tuple[str, Group]:
    """The checks of a reducing call on `tensor`: (its op, its group)."""
    check_tensor(api, arg, tensor)
    op = check_op(api, op, tensor.dtype)
    check_async(api, async_op)
    return op, member_group(api, group)


def check_divisible(api: str, arg: str, tensor: Tensor, n: int) -> None:
    """A dim-0 split into the group's n ranks: tensor has a dim 0 that n divides."""
    if not tensor.shape or tensor.shape[0] % n:
        raise ValueError(f"For '{api}', the '{arg}' shape[0] should be divisible by the group "
                         f"size {n}, but got shape {list(tensor.shape)}.")


def group_rank(api: str, arg: str, world_rank: Any, g: Group) -> int:
    """MindSpore's `src`/`dst`/`peer` (a global rank) as the primitives' rank in `g`."""
    if not isinstance(world_rank, (int, np.integer)) or isinstance(world_rank, bool):
        raise TypeError(f"For '{api}', the '{arg}' should be an int, but got "
                        f"{type(world_rank).__name__}.")
    if world_rank not in g.ranks:
        raise ValueError(f"For '{api}', the '{arg}' should be a global rank in group "
                         f"'{g.name}' {list(g.ranks)}, but got {world_rank}.")
    return g.ranks.index(int(world_rank))


def check_op(api: str, op: Any, dtype: mstype.Type) -> str:
    """A reduce op name that reduces `dtype` (TypeError naming the function otherwise)."""
    if not isinstance(op, str):
        raise TypeError(f"For '{api}', the 'op' should be a str, but got {type(op).__name__}.")
    if op not in REDUCE_OPS:
        raise ValueError(f"For '{api}', the 'op' should be one of {list(REDUCE_OPS)}, but got "
                         f"'{op}'.")
    check_reduce_dtype(op, dtype, api)
    return op


def check_tag(api: str, tag: Any) -> int:
    if not isinstance(tag, int) or isinstance(tag, bool):
        raise TypeError(f"For '{api}', the 'tag' should be an int, but got {type(tag).__name__}.")
    if not 0 <= tag <= _MAX_TAG:
        raise ValueError(f"For '{api}', the 'tag' should be in [0, {_MAX_TAG}], but got {tag}.")
    return tag


def check_peer(api: str, arg: str, peer: int, g: Group) -> int:
    """A send/receive peer (group rank) that is not this process."""
    if member_rank(api, g) == peer:
        raise ValueError(f"For '{api}', the '{arg}' should be another rank than this one, but "
                         f"got global rank {g.ranks[peer]} (this process).")
    return peer


_prims: dict = {}


def collective(cls: type, g: Group, **attrs: Any) -> Any:
    """`cls(group=g.name, **attrs)`: one per (class, Group, attributes) when eager, so its
    lowered kernels are kept (keyed by the Group object: a group destroyed and made again
    under its name gets new primitives); a fresh one while a graph is traced."""
    if _primitive._trace_hook is not None:
        return cls(group=g.name, **attrs)
    key = (cls, g, tuple(sorted(attrs.items())))
    prim = _prims.get(key)
    if prim is None:
        prim = remember(_prims, key, cls(group=g.name, **attrs))
    return prim


def point_to_point(cls: type, g: Group, **attrs: Any) -> Any:
    """A Send/Receive of the functional API: `collective`, kept by a graph's dead-node
    elimination though nobody reads its output (its peer waits for it)."""
    return collective(cls, g, **attrs).add_prim_attr("side_effect_io", True)


def shape_of(api: str, arg: str, value: Any) -> tuple:
    """A receive shape: a tuple/list of non-negative ints, or a Tensor (its shape)."""
    if isinstance(value, Tensor):
        return tuple(value.shape)
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"For '{api}', the '{arg}' should be a tuple of ints or a Tensor, but "
                        f"got {type(value).__name__}.")
    for d in value:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 0:
            raise ValueError(f"For '{api}', the '{arg}' should hold non-negative ints, but got "
                             f"{list(value)}.")
    return tuple(int(d) for d in value)


def _numel(shape: Sequence[int]) -> int:
    return int(np.prod(shape, dtype=np.int64))


def exchange_lists(api: str, g: Group, sends: Sequence[Tensor],
                   recv_shapes: Sequence[tuple]) -> list:
    """The list all-to-all: sends[j] goes to group rank j, and what rank j sends here comes
    back in recv_shapes[j]. One AllToAllV of the flattened tensors, end to end: its count
    check raises the same error on every rank when the ranks' sizes disagree."""
    dtypes = {t.dtype for t in sends}
    if len(dtypes) > 1:
        raise TypeError(f"For '{api}', the tensors to send should have one dtype, but got "
                        f"{sorted(str(d) for d in dtypes)}.")
    send_counts = tuple(_numel(t.shape) for t in sends)
    recv_counts = tuple(_numel(s) for s in recv_shapes)
    flat = [_prim(Reshape)(t, (-1,)) for t in sends]
    packed = flat[0] if len(flat) == 1 else _prim(Concat, 0)(tuple(flat))
    got = collective(AllToAllV, g)(packed, send_counts, recv_counts)
    outs, at = [], 0
    for shape, n in zip(recv_shapes, recv_counts):
        piece = _prim(StridedSlice)(got, (at,), (at + n,), (1,))
        outs.append(_prim(Reshape)(piece, tuple(shape)))
        at += n
    return outs


def split_rows(t: Tensor, n: int, shape: tuple) -> list:
    """t (n * numel(shape) elements) as n Tensors of `shape`, in order."""
    rows = _prim(Reshape)(t, (n,) + tuple(shape))
    return [_prim(Reshape)(_prim(StridedSlice)(rows, (i,), (i + 1,), (1,)), tuple(shape))
            for i in range(n)]


def send_to(api: str, tensor: Tensor, dst: int, group: str, tag: int) -> None:
    """Send `tensor` to global rank `dst` of `group` (the call `api` of a send)."""
    check_tensor(api, "tensor", tensor)
    check_tag(api, tag)
    g = resolve_group(api, group)
    peer = check_peer(api, "dst", group_rank(api, "dst", dst, g), g)
    point_to_point(Send, g, sr_tag=tag, dest_rank=peer)(tensor)


def isend_to(api: str, tensor: Tensor, dst: int, group: str, tag: int) -> CommHandle:
    """Start sending `tensor` to global rank `dst` of `group`; the handle's wait()
    completes it. Traced (a compiled function), the send is the graph's Send."""
    if _primitive._trace_hook is not None:        # traced: the graph's Send
        send_to(api, tensor, dst, group, tag)
        return CommHandle()
    check_tensor(api, "tensor", tensor)
    check_tag(api, tag)
    g = resolve_group(api, group)
    peer = check_peer(api, "dst", group_rank(api, "dst", dst, g), g)
    prim = Send(tag, peer, g.name)
    data = np.ascontiguousarray(tensor.asnumpy())
    request = prim.start(data)
    return PendingHandle(prim, request, data, lambda: prim.finish(request))


def irecv_from(api: str, tensor: Tensor, src: int, group: str, tag: int,
               done: Callable[[Tensor], None] | None = None) -> tuple[Tensor, CommHandle]:
    """Start receiving from global rank `src` a Tensor of `tensor`'s shape and dtype:
    (that Tensor, its handle). The Tensor holds the message once the handle's wait() has
    returned, which then calls `done` with it (a message of another size is the
    ValueError naming the receive). Traced, it is the graph's Receive, complete at once."""
    if _primitive._trace_hook is not None:
        got = recv_from(api, tensor, src, group, tag)
        if done is not None:
            done(got)
        return got, CommHandle()
    check_tensor(api, "tensor", tensor)
    check_tag(api, tag)
    g = resolve_group(api, group)
    peer = check_peer(api, "src", group_rank(api, "src", src, g), g)
    prim = Receive(tag, peer, tuple(tensor.shape), tensor.dtype, g.name)
    out, request = prim.start()
    got = Tensor._wrap(out)                   # filled by MPI; the user's once waited for
    return got, PendingHandle(prim, request, out, lambda: prim.finish(out, request),
                              None if done is None else (lambda _: done(got)))


def recv_from(api: str, tensor: Tensor, src: int, group: str, tag: int) -> Tensor:
    """Receive from global rank `src` a Tensor of `tensor`'s shape and dtype."""
    check_tensor(api, "tensor", tensor)
    check_tag(api, tag)
    g = resolve_group(api, group)
    peer = check_peer(api, "src", group_rank(api, "src", src, g), g)
    return point_to_point(Receive, g, sr_tag=tag, src_rank=peer, shape=tuple(tensor.shape),
                          dtype=tensor.dtype)()


def row_splits(api: str, arg: str, sizes: Any, rows: int, n: int) -> tuple:
    """A list of n row counts: `sizes` checked to sum to `rows`, or rows split evenly."""
    if sizes is None or (isinstance(sizes, (list, tuple)) and not sizes):
        if rows % n:
            raise ValueError(f"For '{api}', with no '{arg}' the dim 0 ({rows}) should be "
                             f"divisible by the group size {n}.")
        return (rows // n,) * n
    if not isinstance(sizes, (list, tuple)):
        raise TypeError(f"For '{api}', the '{arg}' should be a list or tuple of ints, but got "
                        f"{type(sizes).__name__}.")
    if len(sizes) != n or any(not isinstance(s, (int, np.integer)) or isinstance(s, bool)
                              or s < 0 for s in sizes):
        raise ValueError(f"For '{api}', the '{arg}' should be {n} non-negative ints (one per "
                         f"rank of the group), but got {list(sizes)}.")
    if sum(sizes) != rows:
        raise ValueError(f"For '{api}', the sum of '{arg}' should be the dim 0 size {rows}, "
                         f"but got {list(sizes)} (sum {sum(sizes)}).")
    return tuple(int(s) for s in sizes)


def single_exchange(api: str, out_shape: tuple, tensor: Tensor, output_split_sizes: Any,
                    input_split_sizes: Any, g: Group) -> Tensor:
    """all_to_all_single's exchange: rows of `tensor` split by input_split_sizes go to the
    group's ranks in order; what each sends here fills `out_shape` in order."""
    if not tensor.shape or not out_shape:
        raise ValueError(f"For '{api}', the input and output should have rank >= 1, but got "
                         f"shapes {list(tensor.shape)} and {list(out_shape)}.")
    if tuple(out_shape[1:]) != tuple(tensor.shape[1:]):
        raise ValueError(f"For '{api}', the output shape should match the input's beyond "
                         f"dim 0, but got {list(out_shape)} and {list(tensor.shape)}.")
    n = g.size
    send_rows = row_splits(api, "input_split_sizes", input_split_sizes, tensor.shape[0], n)
    recv_rows = row_splits(api, "output_split_sizes", output_split_sizes, out_shape[0], n)
    # one AllToAllV of the flattened input, its counts in elements
    block = int(np.prod(tensor.shape[1:], dtype=np.int64))
    got = collective(AllToAllV, g)(tensor, tuple(r * block for r in send_rows),
                                   tuple(r * block for r in recv_rows))
    return _prim(Reshape)(got, tuple(out_shape))
