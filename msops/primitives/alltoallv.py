"""AllToAllV: MPI Alltoallv over a flat buffer, and its cross-rank count protocol.

Every call first all-gathers each rank's header row, [digest, status, send counts, recv
counts] in blocks (int64), so that an inconsistent count matrix raises the same ValueError
on every rank instead of hanging or truncating; the derived form needs that exchange
anyway to size its output. `check_counts=False` skips it in the explicit forms. The row
carries the eager collective check's digest too (primitives/desync.py, `carried`): a
checked AllToAllV makes one small exchange, not two, and a count mismatch is reported in
the check's format, each rank's side shown.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.communication import GlobalComm
from msops.primitives import desync
from msops.primitives.collective import Collective, counts_value, packed_displs, tensor_dtype
from msops.primitives.mpi import alloc_line, bufs, call, call_lines, reraise
from msops.primitives.primitive import prim_attr_register, remember
from msops.primitives.rules import bprop

__all__ = ["AllToAllV", "AlltoAllV"]

_FORMS = {4: ("send_counts", "send_displs", "recv_counts", "recv_displs"),
          2: ("send_numel_list", "recv_numel_list"),
          1: ("send_counts",)}


class _Exchange:
    """The receive side of an AllToAllV call in elements: MPI (counts, displs) and length."""

    __slots__ = ("spec", "size")

    def __init__(self, counts: Sequence[int], displs: Sequence[int], block: int) -> None:
        self.spec = ([c * block for c in counts], [d * block for d in displs])
        self.size = sum(counts) * block


class _A2avPlan:
    """Everything about one AllToAllV call that does not change between calls.

    `send`: MPI (counts, displs) in elements; `recv`: an _Exchange, None in the derived
    form (filled per receive pattern into `derived`); `header`: this rank's row of the
    cross-rank check, [digest, status, send counts, recv counts] in blocks (int64);
    `runs`: the call specialised to each input dtype (AllToAllV._runner); `side`: the
    counts as an error shows them.
    """

    __slots__ = ("send", "recv", "header", "derived", "runs", "side")

    def __init__(self, sc: tuple, sd: tuple, rc: tuple | None, rd: tuple | None,
                 block: int) -> None:
        self.send = ([c * block for c in sc], [d * block for d in sd])
        self.recv = None if rc is None else _Exchange(rc, rd, block)
        self.header = np.array((0, 0) + sc + (rc or (0,) * len(sc)), np.int64)
        self.side = f"send counts {list(sc)}" + \
            (f", recv counts {list(rc)}" if rc is not None else " (receive side derived)")
        self.derived: dict[bytes, _Exchange] = {}     # by the int64 bytes of the counts
        self.runs: dict[np.dtype, Callable] = {}


class AllToAllV(Collective):
    """MPI Alltoallv over the flattened input, with counts checked across ranks.

    Three call forms, by the number of inputs (counts and displacements in units of
    `block_size` elements; lists, tuples or 1-D int Tensors of rank_size entries):

    * `a2av(x, send_counts, send_displs, recv_counts, recv_displs)`: MPI's form. Rank i
      sends x.flat[send_displs[j]:][:send_counts[j]] (in blocks) to group rank j and puts
      what j sends it at recv_displs[j] of the output.
    * `a2av(x, send_numel_list, recv_numel_list)`: MindSpore's form, blocks packed in
      rank order on both sides.
    * `a2av(x, send_counts)`: the receive side derived (packed) from the other ranks'
      send counts.

    Output: 1-D, dtype of x, length sum(recv_counts) * block_size (the derived form
    infers -1: the length is known only after the counts are exchanged). Receive blocks
    must tile the output exactly.

    With `check_counts=True` (default) every call first all-gathers each rank's
    [digest, status, send counts, recv counts] (one small int64 Allgather, carrying the
    eager collective check's digest too) so that every rank raises the same ValueError
    when the count matrix is inconsistent, naming each (src, dst) pair; a rank whose own
    counts are invalid raises its detailed error and the others name it. The derived form
    needs this exchange anyway; `check_counts=False` skips it in the explicit forms (for
    plans known to be consistent, e.g. compiled; the eager check then runs its own
    16-byte Allreduce).

    Seed 002 on 2 ranks: rank 0 x=[[0,1,2,3],[4,5,6,7]], counts (2,4)/(0,2)/(2,2)/(0,2);
    rank 1 x=[[0,1,2],[3,4,6]], counts (2,1)/(0,2)/(4,1)/(0,4) -> rank 0 [0,1,0,1],
    rank 1 [2,3,4,5,2].
    """

    const_inputs = (1, 2, 3, 4)
    same_shapes = False                 # each rank sends what its counts say

    @prim_attr_register
    def __init__(self, group: str = GlobalComm.WORLD_COMM_GROUP, block_size: int = 1,
                 check_counts: bool = True) -> None:
        self._init_group(group)
        validator.check_positive_int(block_size, "block_size", self.name)
        validator.check_bool("check_counts", check_counts, self.name)
        self.add_prim_attr("no_eliminate", True)
        self._plans: dict[tuple, _A2avPlan] = {}
        self._matrix: np.ndarray | None = None      # the header matrix buffer
        self._digest = 0        # the eager check's digest of the call in progress (desync.py)

    # -- local validation and the per-signature plan ------------------------------------------
    def _plan(self, numel: int | None, counts: Sequence[Any]) -> _A2avPlan:
        """The validated plan of one call (cached by input size and counts)."""
        try:
            key = (numel,) + tuple(map(tuple, counts))
            plan = self._plans.get(key)
        except TypeError:           # a Tensor or other unhashable counts value
            key, plan = None, None
        if plan is None:
            plan = self._make_plan(numel, counts)
            if key is not None:
                remember(self._plans, key, plan)
        return plan

    def _make_plan(self, numel: int | None, counts: Sequence[Any]) -> _A2avPlan:
        if len(counts) not in _FORMS:
            raise TypeError(f"For '{self.name}', the number of inputs should be 2 (x, "
                            f"send_counts), 3 (x, send_numel_list, recv_numel_list) or 5 (x, "
                            f"send_counts, send_displs, recv_counts, recv_displs), but got "
                            f"{len(counts) + 1}.")
        names = _FORMS[len(counts)]
        values = [counts_value(self, a, v) for a, v in zip(names, counts)]
        if len(values) == 4:
            sc, sd, rc, rd = values
        else:
            sc, sd = values[0], packed_displs(values[0])
            rc = rd = None                                  # derived after the exchange
            if len(values) == 2:
                rc, rd = values[1], packed_displs(values[1])
        if numel is not None:
            self._check_send_extents(names, numel, sc, sd)
        if rc is not None:
            self._check_recv_tiling(names, rc, rd)
        return _A2avPlan(sc, sd, rc, rd, self.block_size)

    def _check_send_extents(self, names: tuple, numel: int, sc: tuple, sd: tuple) -> None:
        b = self.block_size
        for j, (c, d) in enumerate(zip(sc, sd)):
            if c and (d + c) * b > numel:
                displs = f"{names[1]}[{j}] + " if len(names) == 4 else "packed displacement + "
                raise ValueError(
                    f"For '{self.name}', the block sent to rank {j} should lie inside the "
                    f"input of {numel} elements, but got {displs}{names[0]}[{j}] = {d} + {c} "
                    f"blocks of {b} = {(d + c) * b} elements.")

    def _check_recv_tiling(self, names: tuple, rc: tuple, rd: tuple) -> None:
        total, end, prev = sum(rc), 0, None
        for d, c, j in sorted((d, c, j) for j, (c, d) in enumerate(zip(rc, rd)) if c):
            if d + c > total:
                raise ValueError(
                    f"For '{self.name}', the block received from rank {j} should lie inside "
                    f"the output of sum({names[-2]}) = {total} blocks, but got {names[-1]}[{j}]"
                    f" + {names[-2]}[{j}] = {d} + {c} = {d + c}.")
            if d < end:
                raise ValueError(
                    f"For '{self.name}', the blocks received should not overlap, but got the "
                    f"blocks from ranks {prev} and {j} overlapping at {d} ({names[-1]} "
                    f"{list(rd)}, {names[-2]} {list(rc)}).")
            end, prev = d + c, j

    def infer_shape(self, x_shape: list, *counts: Any) -> list:
        numel = int(np.prod(x_shape)) if all(d >= 0 for d in x_shape) else None
        plan = self._plan(numel, counts)
        return [-1] if plan.recv is None else [plan.recv.size]

    def infer_dtype(self, x_dtype: mstype.Type, *counts: Any) -> mstype.Type:
        return tensor_dtype(self, x_dtype)

    # -- the cross-rank check -----------------------------------------------------------------
    def _exchanges(self, n_counts: int) -> bool:
        return self.check_counts or n_counts == 1

    def _header_matrix(self) -> np.ndarray:
        """The buffer every rank's header row is gathered into (int64, rank_size x
        (2 + 2*rank_size)): one for every call, read before the call returns."""
        if self._matrix is None:
            self._matrix = np.empty((self.rank_size, 2 + 2 * self.rank_size), np.int64)
        return self._matrix

    def _send_invalid_header(self) -> None:
        """Take part in the count exchange the other ranks wait in, marked invalid."""
        header = np.zeros(2 + 2 * self.rank_size, np.int64)
        call(self, self._comm().Allgather, *bufs(header, self._header_matrix()))

    def _count_check(self, comm: Any, header: np.ndarray, explicit: bool,
                     side: str) -> Callable[[], None]:
        """The check run ahead of every call: gather every rank's header row, then pass iff
        every rank's digest and status equal this rank's own and, `explicit`, each count
        sent equals the count its receiver expects; otherwise every rank raises the same
        Disagreement. The comparisons are of views made once, as bytes."""
        n, matrix = self.rank_size, self._header_matrix()
        t = mstype.mpi_move_type(matrix.dtype)
        gather, send, recv = comm.Allgather, [header, t], [matrix, t]
        heads, mine = matrix[:, :2], header[:2]             # [digest, status] of each rank
        sent, expected = matrix[:, 2:2 + n], matrix[:, 2 + n:].T   # expected[i, j]: j from i

        def check() -> None:
            header[0] = self._digest
            gather(send, recv)
            if heads.tobytes() != mine.tobytes() * n or \
                    (explicit and sent.tobytes() != expected.tobytes()):
                raise self._disagreement(matrix, side)
        return check

    def _disagreement(self, matrix: np.ndarray, side: str) -> desync.Disagreement:
        """What is wrong with the gathered rows: the same on every rank."""
        n, digests, status = self.rank_size, matrix[:, 0], matrix[:, 1]
        bad = np.flatnonzero(status == 0).tolist()
        if bad:                               # those ranks have raised their own error
            return desync.Disagreement(
                f"For '{self.name}', the counts of every rank should be valid, but got "
                f"invalid counts on group rank(s) {bad} (see the error raised there).",
                gather=False)
        if (status != status[0]).any():
            seen = [("derived" if s < 0 else "explicit", abs(int(s))) for s in status]
            detail = (f"every rank should use the same call form and block bytes (block_size "
                      f"* itemsize), but got (form, block bytes) by group rank: {seen}.")
        elif (digests != digests[0]).any():   # only the eager check's digests differ
            detail = None
        else:
            sent, expected = matrix[:, 2:2 + n], matrix[:, 2 + n:].T   # expected[i, j]: j from i
            pairs = np.argwhere(sent != expected).tolist()
            shown = [f"rank {i} sends {sent[i, j]} to rank {j} but rank {j} expects "
                     f"{expected[i, j]}" for i, j in pairs[:8]]
            more = f" (and {len(pairs) - 8} more pairs)" if len(pairs) > 8 else ""
            detail = ("every rank's recv_counts[i] should equal rank i's send_counts to it, "
                      "but got: " + "; ".join(shown) + more + ".")
        message = f"For '{self.name}', " + (detail or "every rank should make the same call, "
                                            "but got different calls (is check_collectives "
                                            "set alike on every rank?).")
        return desync.Disagreement(message, detail, side)

    def _refused(self, err: Exception, values: list) -> None:
        """A call that exchanges its counts: the other ranks wait in that exchange, so take
        part, marked invalid (they name this rank); then this rank raises `err`."""
        if self._exchanges(len(values) - 1):
            if self._group.rank is not None and not self._group.simulated:
                desync.take_part(self, self._send_invalid_header)
            return
        super()._refused(err, values)

    # -- the kernel ---------------------------------------------------------------------------
    def kernel(self, x: np.ndarray, *counts: Any) -> np.ndarray:
        exchange = self._exchanges(len(counts))
        try:
            plan = self._plan(x.size, counts)
        except (TypeError, ValueError):
            if exchange:
                self._send_invalid_header()
            raise
        run = plan.runs.get(x.dtype)
        if run is None:
            run = plan.runs[x.dtype] = self._runner(plan, x.dtype, exchange)
        return run(x)

    def _runner(self, plan: _A2avPlan, dtype: np.dtype, exchange: bool) -> Callable:
        """The call of one plan on inputs of `dtype`: count exchange and check (if any), then
        one Alltoallv into a fresh output, with MPI types, buffers and bound methods chosen
        here, once."""
        comm = self._comm()                 # the group's error when there is no communicator
        t, send, alltoallv = mstype.mpi_move_type(dtype), plan.send, comm.Alltoallv
        derived = plan.recv is None
        check = None
        if exchange:
            header = plan.header.copy()
            header[1] = self.block_size * dtype.itemsize * (-1 if derived else 1)
            check = self._count_check(comm, header, not derived, plan.side)
        if derived:
            sent_here = self._header_matrix()[:, 2 + self._group.rank]   # sent to this rank

            def run_derived(x: np.ndarray, *_: Any) -> np.ndarray:
                try:                        # (reraise passes the check's ValueError on)
                    check()
                    recv = self._derived(plan, sent_here.tobytes())
                    out = np.empty(recv.size, dtype)
                    alltoallv([x, send, t], [out, recv.spec, t])
                except Exception as err:
                    reraise(self, err)
                return out
            return run_derived
        size, spec = plan.recv.size, plan.recv.spec

        def run(x: np.ndarray, *_: Any) -> np.ndarray:
            try:
                if check is not None:
                    check()
                out = np.empty(size, dtype)
                alltoallv([x, send, t], [out, spec, t])
            except Exception as err:
                reraise(self, err)
            return out

        def inline(src: Any, args: Sequence[str], out: str | None, target: str) -> list:
            """run's call as lines of a generated caller (codegen.inline_lines)."""
            mpi_t = src.bind("mpi_type", t)
            lines = [] if check is None else call_lines(src, self, check)
            return lines + [alloc_line(src, target, (size,), dtype)] + call_lines(
                src, self, alltoallv, f"[{args[0]}, {src.bind('send', send)}, {mpi_t}]",
                f"[{target}, {src.bind('spec', spec)}, {mpi_t}]")
        run.inline = inline
        return run

    def _derived(self, plan: _A2avPlan, counts: bytes) -> _Exchange:
        """The receive side for the counts (int64 bytes) the ranks send this one."""
        recv = plan.derived.get(counts)
        if recv is None:
            rc = tuple(np.frombuffer(counts, np.int64).tolist())
            recv = remember(plan.derived, counts, _Exchange(rc, packed_displs(rc), self.block_size))
        return recv

    def eager(self, kernel: Callable, in_abstracts: Any, out_abstract: Any) -> Callable:
        """Checked like every collective, but a call that exchanges its counts carries the
        check's digest in that exchange (one small collective, not two)."""
        return desync.eager_kernel(self, kernel, in_abstracts, same_shapes=False,
                                   out_abstract=out_abstract,
                                   carried=self._exchanges(len(in_abstracts) - 1))

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        """With constant counts the plan is made once, here, and (x's dtype and a
        communicator known) the whole call: `_runner`. Every form still exchanges and
        checks its counts on every call unless check_counts=False."""
        x, consts = in_abstracts[0], in_abstracts[1:]
        exchange = self._exchanges(len(consts))
        if any(d < 0 for d in x.shape) or \
                any(getattr(c, "kind", None) != "const" for c in consts) or \
                (exchange and self._group._comm is None):
            return self.kernel
        plan = self._plan(int(np.prod(x.shape)), [c.value for c in consts])
        dtype = getattr(getattr(x, "dtype", None), "np_dtype", None)
        if self._group._comm is None or dtype is None:   # (the call raises the group's error)
            return lambda x, *_: self._runner(plan, x.dtype, exchange)(x)
        return self._runner(plan, dtype, exchange)



AlltoAllV = AllToAllV


class AllToAllVGrad(AllToAllV):
    """The transpose of AllToAllV's derived form, `grad(dout, recv_counts)`: the receive
    side is given and the send side derived, rank i sending rank j (from dout, packed in
    rank order) the count j expects from i. One int64 Allgather of every rank's
    [status, dout elements, recv counts] gives each rank its send counts and lets every
    rank check every rank's dout size alike (no rank hangs on a bad one). Output: 1-D,
    sum(recv_counts) * block_size elements, packed in rank order. The backward of the
    derived form (its receive counts known only at run time) and, the other way, its own
    backward is the derived form."""

    const_inputs = (1,)

    def infer_shape(self, x_shape: list, recv_counts: Any) -> list:
        return [sum(counts_value(self, "recv_counts", recv_counts)) * self.block_size]

    def infer_dtype(self, x_dtype: mstype.Type, recv_counts: Any) -> mstype.Type:
        return tensor_dtype(self, x_dtype)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return self.kernel

    def kernel(self, x: np.ndarray, recv_counts: Any) -> np.ndarray:
        n, b = self.rank_size, self.block_size
        try:
            rc = counts_value(self, "recv_counts", recv_counts)
        except (TypeError, ValueError):
            self._send_invalid_header()
            raise
        comm, me, matrix = self._comm(), self._group.rank, self._header_matrix()
        header = np.zeros(2 + 2 * n, np.int64)   # the row of _header_matrix (all 0: invalid)
        header[0], header[1], header[2 + n:] = -b * x.dtype.itemsize, x.size, rc
        try:
            call(self, comm.Allgather, *bufs(header, matrix))
            expected = matrix[:, 2 + n:]            # expected[j, i]: rank j's count from i
            if matrix[0, 0] == 0 or (matrix[:, 0] != matrix[0, 0]).any() or \
                    (matrix[:, 1] != expected.sum(axis=0) * b).any():
                raise ValueError(
                    f"For '{self.name}', every rank's input should hold the blocks the "
                    f"others expect from it (sum over ranks j of recv_counts[i] blocks of "
                    f"{b}), but got (elements, wanted) by group rank: "
                    f"{list(zip(matrix[:, 1].tolist(), (expected.sum(axis=0) * b).tolist()))}"
                    f" (or another rank's invalid counts).")
            sc = expected[:, me].tolist()
            t = mstype.mpi_move_type(x.dtype)
            out = np.empty(sum(rc) * b, x.dtype)
            comm.Alltoallv([np.ascontiguousarray(x).reshape(-1),
                            ([c * b for c in sc], [d * b for d in packed_displs(sc)]), t],
                           [out, ([c * b for c in rc], [d * b for d in packed_displs(rc)]), t])
        except Exception as err:
            reraise(self, err)
        return out


@bprop(AllToAllVGrad)
def alltoallv_grad_bprop(prim: AllToAllVGrad, inputs: list, out: Any, dout: Any,
                         g: Any) -> tuple:
    """Its transpose is the derived form: each block goes back to the rank it came from."""
    back = AllToAllV(prim.group, prim.block_size, prim.check_counts)
    return g.apply(back, [dout, g.add_const(tuple(inputs[1].value))]), None


@bprop(AllToAllV)
def alltoallv_bprop(prim: AllToAllV, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """AllToAllV with the send and receive sides swapped: every block goes back where it
    came from. dout's blocks (this rank's receive side) are sent back; the blocks x sent
    come back packed (the derived form's receive counts, known only at run time, through
    AllToAllVGrad, which derives its send side). When x's send side tiles x exactly once
    they are received in place; otherwise each block is added at its place in a zero
    gradient (a block sent twice gets both gradients, an element never sent none)."""
    x, counts = inputs[0], [tuple(c.value) for c in inputs[1:]]
    b, numel = prim.block_size, int(np.prod(x.shape))
    sc = counts[0]
    sd = counts[1] if len(counts) == 4 else packed_displs(sc)
    if len(counts) == 1:
        packed = g.apply(AllToAllVGrad(prim.group, b), [dout, g.add_const(sc)])
    else:
        rc, rd = (counts[2], counts[3]) if len(counts) == 4 else (counts[1],
                                                                   packed_displs(counts[1]))
        swapped = AllToAllV(prim.group, b, prim.check_counts)
        if _tiles(sc, sd, numel // b if numel % b == 0 else -1):
            flat = g.apply(swapped, [dout] + [g.add_const(c) for c in (rc, rd, sc, sd)])
            return (_reshaped(g, flat, x.shape),) + (None,) * len(counts)
        packed = g.apply(swapped, [dout] + [g.add_const(c) for c in
                                            (rc, rd, sc, packed_displs(sc))])
    if tuple(sd) == packed_displs(sc) and sum(sc) * b == numel:
        return (_reshaped(g, packed, x.shape),) + (None,) * len(counts)
    return (_reshaped(g, _scatter_add(g, packed, sc, sd, b, numel, x.dtype), x.shape),) + \
        (None,) * len(counts)


def _tiles(counts: Sequence[int], displs: Sequence[int], total: int) -> bool:
    """Whether the blocks (counts, displs) cover 0..total exactly once."""
    spans = sorted((d, c) for c, d in zip(counts, displs) if c)
    end = 0
    for d, c in spans:
        if d != end:
            return False
        end = d + c
    return end == total


def _reshaped(g: Any, flat: Any, shape: Sequence[int]) -> Any:
    from msops.primitives.array_ops import Reshape      # array_ops imports math_ops
    return g.apply(Reshape(), [flat, g.add_const(tuple(shape))])


def _scatter_add(g: Any, packed: Any, counts: Sequence[int], displs: Sequence[int], b: int,
                 numel: int, dtype: Any) -> Any:
    """The gradient of x from the packed blocks it sent: block j (packed at its rank-order
    place) added at displs[j] of a zero vector of x's numel elements."""
    from msops.primitives.array_ops import Concat, StridedSlice
    from msops.primitives.math_ops import Add

    def zeros(k: int) -> Any:
        return g.add_const(np.zeros(k, dtype.np_dtype))
    total, start = None, 0
    for c, d in zip(counts, displs):
        if c:
            piece = g.apply(StridedSlice(), [packed, g.add_const((start * b,)),
                                             g.add_const(((start + c) * b,)), g.add_const((1,))])
            parts = [zeros(d * b)] if d else []
            parts.append(piece)
            if numel - (d + c) * b:
                parts.append(zeros(numel - (d + c) * b))
            placed = piece if len(parts) == 1 else g.apply(Concat(0), [g.make_tuple(parts)])
            total = placed if total is None else g.apply(Add(), [total, placed])
        start += c
    return zeros(numel) if total is None else total
