"""mint.distributed's object collectives, exchanging JSON instead of pickle.

msops never unpickles what it reads (pickle runs code from the bytes), so an object
travels as its JSON text, UTF-8 bytes in a uint8 Tensor over the primitives. Only what JSON
holds survives: dicts with str keys, lists, str, int, float, bool, None (a tuple arrives
as a list, an int dict key as a str). An object JSON cannot encode is reported on every
rank: its rank sends a length of -1 instead of its bytes, so no rank waits for data, and every rank
raises the same TypeError (the offending one with json's error as its cause).
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np

from msops.common.tensor import Tensor
from msops.communication._comm_call import collective, group_rank, member_group
from msops.primitives import primitive as _primitive
from msops.communication.management import get_rank
from msops.mint.distributed.collectives import recv, send
from msops.primitives.comm_ops import AllGather, Broadcast

__all__ = ["all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list",
           "send_object_list", "recv_object_list"]


def _encode(api: str, obj: Any) -> tuple[np.ndarray | None, Exception | None]:
    """obj's JSON as uint8 bytes, or (None, json's error) when JSON cannot hold it."""
    if _primitive._trace_hook is not None:
        raise RuntimeError(f"For '{api}', Python objects cannot be exchanged inside a "
                           f"compiled graph: call it outside ms.jit.")
    try:
        text = json.dumps(obj, allow_nan=True)
    except (TypeError, ValueError) as err:
        return None, err
    return np.frombuffer(text.encode("utf-8"), np.uint8), None


def _decode(data: np.ndarray) -> Any:
    return json.loads(data.tobytes().decode("utf-8"))


def _unencodable(api: str, ranks: list) -> TypeError:
    """The same error on every rank (the offending rank chains json's own as its cause)."""
    return TypeError(f"For '{api}', every object should be JSON-serialisable (msops exchanges "
                     f"objects as JSON, never pickle), but the object of global rank(s) "
                     f"{ranks} is not.")


def _object_call(api: str, object_list: Any, group: Any) -> Any:
    """The checks of an object call: a list, and a group this process is in."""
    if not isinstance(object_list, list):
        raise TypeError(f"For '{api}', the 'object_list' should be a list, but got "
                        f"{type(object_list).__name__}.")
    return member_group(api, group)


def _gathered(api: str, obj: Any, g: Any) -> list:
    """Every group rank's `obj`, in group-rank order (two AllGathers: sizes, then bytes)."""
    data, why = _encode(api, obj)
    size = -1 if data is None else data.size
    sizes = collective(AllGather, g)(Tensor(np.array([size], np.int64))).asnumpy()
    bad = [g.ranks[i] for i, s in enumerate(sizes) if s < 0]
    if bad:
        raise _unencodable(api, bad) from why
    width = max(int(sizes.max()), 1)
    padded = np.zeros(width, np.uint8)
    padded[:size] = data
    got = collective(AllGather, g)(Tensor(padded)).asnumpy().reshape(g.size, width)
    return [_decode(got[i, :sizes[i]]) for i in range(g.size)]


def all_gather_object(object_list: list, obj: Any, group: str | None = None) -> None:
    """object_list[i] := group rank i's `obj` (object_list holds one entry per rank)."""
    api = "all_gather_object"
    g = _object_call(api, object_list, group)
    got = _gathered(api, obj, g)
    if len(object_list) != g.size:
        raise ValueError(f"For '{api}', the length of 'object_list' should be the group size "
                         f"{g.size}, but got {len(object_list)}.")
    object_list[:] = got


def gather_object(obj: Any, object_gather_list: list | None = None, dst: int = 0,
                  group: str | None = None) -> None:
    """On global rank `dst`, object_gather_list[i] := group rank i's `obj` (a list of one
    entry per rank there; None elsewhere). Exchanged by AllGather: objects are small."""
    api = "gather_object"
    g = member_group(api, group)
    root = group_rank(api, "dst", dst, g)
    got = _gathered(api, obj, g)             # first: a bad list on dst leaves no rank waiting
    if g.rank != root:
        return
    if not isinstance(object_gather_list, list) or len(object_gather_list) != g.size:
        shown = object_gather_list if not isinstance(object_gather_list, list) else \
            f"a list of length {len(object_gather_list)}"
        raise ValueError(f"For '{api}', the 'object_gather_list' of rank {dst} should be a "
                         f"list of the group size {g.size}, but got {shown!r}.")
    object_gather_list[:] = got


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list: Any,
                        src: int = 0, group: str | None = None) -> None:
    """scatter_object_output_list[0] := item i of global rank `src`'s
    scatter_object_input_list on group rank i (the input list only matters on `src`)."""
    api = "scatter_object_list"
    g = member_group(api, group)
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise TypeError(f"For '{api}', the 'scatter_object_output_list' should be a non-empty "
                        f"list, but got {scatter_object_output_list!r}.")
    root = group_rank(api, "src", src, g)
    sizes, why = np.full(g.size, -1, np.int64), None
    if g.rank == root:
        items = scatter_object_input_list
        if isinstance(items, list) and len(items) == g.size:
            pieces = [_encode(api, item) for item in items]
            why = next((e for _, e in pieces if e is not None), None)
            if why is None:
                sizes = np.array([p.size for p, _ in pieces], np.int64)
        else:                                  # every rank learns it by the sizes: -2
            sizes[:] = -2
    sizes = collective(Broadcast, g, root_rank=root)((Tensor(sizes),))[0].asnumpy()
    if sizes[0] == -2:
        raise TypeError(f"For '{api}', the 'scatter_object_input_list' of rank {src} should be "
                        f"a list of the group size {g.size}.")
    if sizes[0] < 0:
        raise _unencodable(api, [src]) from why
    flat = np.concatenate([p for p, _ in pieces]) if g.rank == root else \
        np.zeros(int(sizes.sum()), np.uint8)
    if flat.size:
        flat = collective(Broadcast, g, root_rank=root)((Tensor(flat),))[0].asnumpy()
    start = int(sizes[:g.rank].sum())
    scatter_object_output_list[0] = _decode(flat[start:start + sizes[g.rank]])


def send_object_list(object_list: list, dst: int = 0, group: str | None = None) -> None:
    """Send `object_list` to global rank `dst` (a recv_object_list there receives it)."""
    api = "send_object_list"
    _object_call(api, object_list, group)
    data, why = _encode(api, object_list)
    send(Tensor(np.array([-1 if data is None else data.size], np.int64)), dst, group)
    if data is None:
        raise _unencodable(api, [get_rank()]) from why
    if data.size:
        send(Tensor(data), dst, group)


def recv_object_list(object_list: list, src: int = 0, group: str | None = None) -> int:
    """object_list[:] := the list global rank `src` sends (of the same length); returns src."""
    api = "recv_object_list"
    _object_call(api, object_list, group)
    size = Tensor(np.zeros(1, np.int64))
    recv(size, src, group)
    n = int(size.asnumpy()[0])
    if n < 0:
        raise _unencodable(api, [src])
    buf = Tensor(np.zeros(n, np.uint8))
    if n:
        recv(buf, src, group)
    got = _decode(buf.asnumpy())
    if len(got) != len(object_list):
        raise ValueError(f"For '{api}', the 'object_list' should have the length of rank "
                         f"{src}'s list, {len(got)}, but got {len(object_list)}.")
    object_list[:] = got
    return src


def broadcast_object_list(object_list: list, src: int = 0, group: str | None = None,
                          device: Any = None) -> None:
    """object_list[:] := global rank `src`'s object_list (every rank passes a list of the
    same length; `device` is unused)."""
    api = "broadcast_object_list"
    g = _object_call(api, object_list, group)
    root = group_rank(api, "src", src, g)
    data, why = _encode(api, object_list) if g.rank == root else (np.zeros(0, np.uint8), None)
    size = np.array([-1 if data is None else data.size], np.int64)
    size = collective(Broadcast, g, root_rank=root)((Tensor(size),))[0].asnumpy()[0]
    if size < 0:
        raise _unencodable(api, [src]) from why
    buf = data if g.rank == root else np.zeros(int(size), np.uint8)
    if size:
        buf = collective(Broadcast, g, root_rank=root)((Tensor(buf),))[0].asnumpy()
    got = _decode(buf)
    if len(got) != len(object_list):
        raise ValueError(f"For '{api}', the 'object_list' should have the length of rank "
                         f"{src}'s list, {len(got)}, but got {len(object_list)}.")
    object_list[:] = got
