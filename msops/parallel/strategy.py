"""From an op's strategy to its device matrix and tensor maps, checking the strategy.

Every sharding rule (registered beside its op) describes the op as a `DimSpec`,
einsum-like: one letter per tensor dim (`"mk,kn->mn"` for MatMul); the same letter on
two inputs must be split alike; `None` marks a broadcast dim (never split); a letter
absent from the outputs is reduced, so its split leaves a partial result. `shard`
turns a spec and a strategy into an
`OpSharding`: the device matrix (split letters in order of first appearance, then a
repeat axis on the right when the strategy uses fewer devices than the stage), a
tensor map per input and output (MindSpore's convention, counted from the right) and
the device axes over which the outputs are partial.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Sequence

from msops.parallel.device_matrix import axis_position, axis_size
from msops.primitives.sharding import DimSpec

__all__ = ["OpSharding", "shard", "data_parallel_strategy", "check_strategy_format",
           "check_divisible"]


@dataclass(frozen=True)
class OpSharding:
    """Device matrix, tensor maps of inputs/outputs, and partial device axes (map indices);
    `letter_axes` pairs each split letter with its device axis (a tuple of axes, major
    first, when a Layout splits its dim over several)."""

    device_matrix: tuple[int, ...]
    in_maps: tuple[tuple[int, ...], ...]
    out_maps: tuple[tuple[int, ...], ...]
    partial_axes: tuple[int, ...]
    strategy: tuple
    repeat: int
    letter_axes: tuple[tuple[str, int], ...] = ()

    def axis_size(self, axis: int) -> int:
        return axis_size(self.device_matrix, axis)

    def map_of(self, letters: Sequence) -> tuple:
        """The tensor map of dims named by `letters` (see `_tensor_map`)."""
        return _tensor_map(dict(self.letter_axes), letters)


def _tensor_map(index: dict[str, int], letters: Sequence) -> tuple:
    """Per dim: a letter, None, or a tuple of letters (split over their axes, major first);
    letters `index` does not place (unsplit) take no axis; `index` gives a letter one
    axis or (from a Layout) a tuple of axes, major first."""
    out = []
    for entry in letters:
        names = entry if isinstance(entry, tuple) else (entry,)
        axes = tuple(a for l in names if l in index
                     for a in (index[l] if isinstance(index[l], tuple) else (index[l],)))
        out.append(-1 if not axes else axes[0] if len(axes) == 1 else axes)
    return tuple(out)


def check_strategy_format(name: str, strategy: tuple, shapes: Sequence[Sequence[int]]) -> None:
    """Count, lengths and values >= 1 of a strategy against the op's tensor inputs."""
    if len(strategy) != len(shapes):
        raise ValueError(f"For '{name}', the strategy should have one entry per tensor input "
                         f"({len(shapes)}), but got {len(strategy)}: {strategy}.")
    for i, (s, shp) in enumerate(zip(strategy, shapes)):
        if len(s) != len(shp):
            raise ValueError(f"For '{name}', the strategy of input {i} should have length "
                             f"{len(shp)} (the input's rank, shape {tuple(shp)}), but got "
                             f"{len(s)}: {s}.")
        for d, v in enumerate(s):
            if v < 1:
                raise ValueError(f"For '{name}', every strategy value should be >= 1, but "
                                 f"input {i} dim {d} has {v} in {s}.")


def check_divisible(name: str, strategy: tuple, shapes: Sequence[Sequence[int]]) -> None:
    """Every split dim divides by its strategy value."""
    for i, (s, shp) in enumerate(zip(strategy, shapes)):
        for d, v in enumerate(s):
            if shp[d] >= 0 and shp[d] % v != 0:
                raise ValueError(f"For '{name}', input {i} dim {d} of size {shp[d]} (shape "
                                 f"{tuple(shp)}) should be divisible by its strategy value "
                                 f"{v} (strategy {s}), but it is not.")


def data_parallel_strategy(spec: DimSpec, shapes: Sequence[Sequence[int]],
                           device_num: int, out_shapes: Sequence[Sequence[int]] = ()) -> tuple:
    """The default strategy: the first input's dim-0 letter (or the spec's `batch_letter`)
    split over all devices (`letter_strategy`)."""
    letter = spec.batch_letter or (spec.ins[0][0] if spec.ins and spec.ins[0] else None)
    return letter_strategy(spec, shapes, device_num, out_shapes, letter)


def letter_strategy(spec: DimSpec, shapes: Sequence[Sequence[int]], device_num: int,
                    out_shapes: Sequence[Sequence[int]], letter: str | None) -> tuple:
    """`letter` split over all devices when it divides every dim it names, inputs' and
    `out_shapes`' (a Reshape's (16, 8) -> (2, 64) shares its rows' letter with the 2), and
    may be split; everything else whole (all of it when `letter` is None)."""
    split = {}
    forbidden = {name for name, _ in spec.unsplittable}
    if letter is not None and letter not in forbidden and device_num > 1:
        sizes = [shp[d] for ins, shp in zip(spec.ins + spec.outs, list(shapes) + list(out_shapes))
                 for d, l in enumerate(ins) if l == letter]
        if all(n >= 0 and n % device_num == 0 for n in sizes):
            split[letter] = device_num
    return tuple(tuple(split.get(l, 1) for l in ins) for ins in spec.ins)


def shard(name: str, spec: DimSpec, strategy: tuple, shapes: Sequence[Sequence[int]],
          device_num: int) -> OpSharding:
    """Check `strategy` against `spec` and the input shapes; build the OpSharding."""
    check_strategy_format(name, strategy, shapes)
    split: dict[str, int] = {}
    first_seen: dict[str, tuple[int, int]] = {}
    out_letters = {l for outs in spec.outs for l in outs if l is not None}
    for i, (ins, s) in enumerate(zip(spec.ins, strategy)):
        for d, (letter, v) in enumerate(zip(ins, s)):
            if letter is None:
                if v != 1:
                    raise ValueError(f"For '{name}', input {i} dim {d} is broadcast (size 1 "
                                     f"against the other inputs), so its strategy value "
                                     f"should be 1, but got {v} in {s}.")
                continue
            if letter in split and split[letter] != v:
                j, e = first_seen[letter]
                kind = (spec.reduction_name if letter not in out_letters
                        else "dimension")
                raise ValueError(f"For '{name}', the strategies of input {j} dim {e} and "
                                 f"input {i} dim {d} should agree on the shared {kind} "
                                 f"'{letter}', but got {strategy[j][e]} and {v} "
                                 f"(strategy {strategy}).")
            split.setdefault(letter, v)
            first_seen.setdefault(letter, (i, d))
    check_divisible(name, strategy, shapes)
    for letter, reason in spec.unsplittable:
        if split.get(letter, 1) > 1:
            i, d = first_seen[letter]
            raise ValueError(f"For '{name}', input {i} dim {d} cannot be split ({reason}), "
                             f"but the strategy gives it {split[letter]} (strategy {strategy}).")
    axes = [l for l in first_seen if split[l] > 1]          # dict order = first appearance
    used = prod(split[l] for l in axes)
    if used > device_num:
        raise ValueError(f"For '{name}', the strategy {strategy} needs {used} devices, but "
                         f"the stage has only {device_num}.")
    if device_num % used:
        raise ValueError(f"For '{name}', the strategy {strategy} uses {used} devices, which "
                         f"should divide the device number {device_num}, but it does not.")
    repeat = device_num // used
    dm = tuple(split[l] for l in axes) + ((repeat,) if repeat > 1 else ())
    index = {l: axis_position(dm, k) for k, l in enumerate(axes)}
    partial = tuple(sorted(index[l] for l in axes if l not in out_letters))
    return OpSharding(dm, tuple(_tensor_map(index, x) for x in spec.ins),
                      tuple(_tensor_map(index, x) for x in spec.outs), partial, strategy,
                      repeat, tuple(index.items()))
