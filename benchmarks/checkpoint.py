"""Checkpoint save and load against raw mpi4py + safetensors, in the same run.

    mpiexec -n 4 python benchmarks/checkpoint.py [--mib 256] [--repeats 3] [--dir /tmp]

A model of `--mib` MiB (float32: four 2-D weights, two split on dim 0 and two on dim 1
over the ranks by MatMul strategies) is compiled on N ranks. Rows (medians of the
repeats, the sides interleaved so machine noise hits them alike):
  * integrated save: `ms.save_checkpoint(net, path)` (gather every slice by its layout
    with AllGatherCell, rank 0 writes one safetensors file: checksums, temporary file,
    fsync, rename) against the reference: `comm.Allgather` of each slice into one
    buffer + `safetensors.numpy.save_file` of the same whole tensors on rank 0 (no
    checksum, no fsync), and the reference + an fsync of its file.
  * load (rank 0, one process): `ms.load_checkpoint(path)` (every CRC-32C checked) against
    `safetensors.numpy.load_file(path)` of the same file; for scale also the floor: one
    `readinto` of the file's whole data section into a preallocated buffer. Also rank 0's
    CPU seconds (user + system, all threads) per load: on a shared machine the wall time
    mostly measures waiting for a core, the CPU time what the load itself costs.
  * many small tensors (rank 0): the same two loads of a file of `--small` tensors of
    16x16 float32 (per-tensor overhead, which a 4-tensor model does not show).
Targets (docs/performance.md, "Checkpoints"): save <= 1.5x, load <= 1.2x.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
from mpi4py import MPI
from safetensors.numpy import load_file, save_file

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size, get_rank, init
from msops.parallel.slices import local_slice


class Model(nn.Cell):
    """x @ w0 @ w1 @ w2 @ w3 with w0, w2 split by columns and w1, w3 by rows."""

    def __init__(self, width: int, n: int) -> None:
        super().__init__()
        rng = np.random.default_rng(0)
        self.mms = []
        for i in range(4):
            w = rng.standard_normal((width, width), dtype=np.float32)
            setattr(self, f"w{i}", Parameter(Tensor(w), name=f"w{i}"))
            mm = ops.MatMul().shard(((1, 1), (1, n)) if i % 2 == 0 else ((1, n), (n, 1)))
            setattr(self, f"mm{i}", mm)

    def construct(self, x):
        for i in range(4):
            x = getattr(self, f"mm{i}")(x, getattr(self, f"w{i}"))
        return x


def reference_save(net: Model, path: str, comm: MPI.Comm, fsync: bool) -> None:
    """Raw MPI Allgather of every local slice, then safetensors on rank 0."""
    rank, n = comm.Get_rank(), comm.Get_size()
    whole = {}
    for name, pl in net.parameter_layout_dict.items():
        lay = pl.layout
        local = local_slice(getattr(net, name).asnumpy(), lay, rank)   # the held slice
        blocks = np.empty((n,) + local.shape, local.dtype)
        comm.Allgather(local, blocks)
        full = np.empty(lay.tensor_shape, local.dtype)
        for r in range(n):
            full[lay.slice_of(r)] = blocks[r]
        whole[name] = full
    if rank == 0:
        save_file(whole, path)
        if fsync:
            with open(path, "rb+") as f:
                os.fsync(f.fileno())
    comm.Barrier()


def read_floor(path: str) -> np.ndarray:
    """The least any load can do: the file's data section in one read, no parsing."""
    with open(path, "rb", buffering=0) as f:
        n = int.from_bytes(f.read(8), "little")
        f.seek(8 + n)
        buf = np.empty(os.fstat(f.fileno()).st_size - 8 - n, np.uint8)
        f.readinto(buf)
    return buf


def quiet_barrier(comm: MPI.Comm) -> None:
    """A barrier that sleeps while it waits: ranks busy-polling in MPI would take the cores
    (oversubscribed here) from rank 0's timed load."""
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(0.001)


def timed(fn) -> float:
    MPI.COMM_WORLD.Barrier()
    t = time.perf_counter()
    fn()
    MPI.COMM_WORLD.Barrier()
    return MPI.COMM_WORLD.allreduce(time.perf_counter() - t, op=MPI.MAX)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--small", type=int, default=5000)
    args = parser.parse_args()
    init()
    comm, n, rank = MPI.COMM_WORLD, get_group_size(), get_rank()
    width = int((args.mib * 2 ** 20 / 4 / 4) ** 0.5) // n * n
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=n,
                                 full_batch=True)
    net = Model(width, n)
    net.compile(Tensor(np.ones((n, width), np.float32)))
    folder = comm.bcast(tempfile.mkdtemp(dir=args.dir) if rank == 0 else None)
    ours, ref_path = os.path.join(folder, "ours.safetensors"), os.path.join(folder, "ref.st")
    small = os.path.join(folder, "small.safetensors")
    rng = np.random.default_rng(1)
    ms.save_checkpoint({f"layer{i}.w": rng.standard_normal((16, 16), dtype=np.float32)
                        for i in range(args.small)}, small)
    rows = {"save": [], "ref": [], "ref+fsync": [], "load": [], "load ref": [], "floor": [],
            "small": [], "small ref": []}
    cpu: dict[str, list[float]] = {}     # rank 0's CPU seconds (all its threads) per load
    for _ in range(args.repeats):          # ABBA-ish: the order alternates every repeat
        order = [("save", lambda: ms.save_checkpoint(net, ours)),
                 ("ref", lambda: reference_save(net, ref_path, comm, False)),
                 ("ref+fsync", lambda: reference_save(net, ref_path, comm, True))]
        for name, fn in order if _ % 2 == 0 else order[::-1]:
            rows[name].append(timed(fn))
        if rank == 0:                      # the other ranks wait without spinning (below)
            loads = [("load", lambda: ms.load_checkpoint(ours)),
                     ("load ref", lambda: load_file(ours)),
                     ("floor", lambda: read_floor(ours)),
                     ("small", lambda: ms.load_checkpoint(small)),
                     ("small ref", lambda: load_file(small))]
            for name, fn in loads if _ % 2 == 0 else loads[::-1]:
                t, c = time.perf_counter(), time.process_time()
                result = fn()
                rows[name].append(time.perf_counter() - t)
                cpu.setdefault(name, []).append(time.process_time() - c)
                del result                 # freed before the next side allocates
        quiet_barrier(comm)
    if rank == 0:
        med = {k: statistics.median(v) for k, v in rows.items()}
        total = 4 * width * width * 4 / 2 ** 20
        print(f"checkpoint benchmark: {n} ranks, {total:.0f} MiB model, "
              f"median of {args.repeats}")
        print(f"  integrated save   {med['save']:.3f} s   reference {med['ref']:.3f} s "
              f"(+fsync {med['ref+fsync']:.3f} s)   ratio {med['save'] / med['ref']:.2f} "
              f"({med['save'] / med['ref+fsync']:.2f} vs +fsync)   target <= 1.5")
        print(f"  load (rank 0)     {med['load']:.3f} s   load_file {med['load ref']:.3f} s"
              f"   ratio {med['load'] / med['load ref']:.2f}   target <= 1.2   (one read of "
              f"the data {med['floor']:.3f} s: ratio {med['load'] / med['floor']:.2f})")
        cmed = {k: statistics.median(v) for k, v in cpu.items()}
        print(f"  load CPU time     {cmed['load']:.3f} s   load_file {cmed['load ref']:.3f} s"
              f"   ratio {cmed['load'] / cmed['load ref']:.2f}   (less noisy on a busy "
              f"machine: waiting for a core is not counted)")
        print(f"  {args.small} small tensors: load {med['small']:.3f} s   load_file "
              f"{med['small ref']:.3f} s   ratio {med['small'] / med['small ref']:.2f}")
        spread = {k: f"{min(v):.3f}-{max(v):.3f}" for k, v in rows.items()}
        print(f"  spread (min-max s) {spread}")
        for f in os.listdir(folder):
            os.remove(os.path.join(folder, f))
        os.rmdir(folder)
    ms.reset_auto_parallel_context()


if __name__ == "__main__":
    main()
