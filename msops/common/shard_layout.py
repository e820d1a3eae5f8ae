"""`Layout`: MindSpore 2.x's alias-named device matrix for sharding strategies.

    layout = Layout((2, 4), ("dp", "mp"))
    op.shard(in_strategy=(layout("dp", "mp"), layout("mp", "None")))

`layout(...)` names, per tensor dim, the device axes splitting it: an alias, a tuple of
aliases (the dim is split over several axes, the first one major) or "None" (whole).
The result is a Layout carrying a tensor map in MindSpore's convention (device axes
counted from the right, -1 = not split), which is exactly msops's internal TensorLayout
map; the parallel layer builds the TensorLayout once the tensor shape is known.

It lives in common/ (MindSpore's spelling is `mindspore.parallel.Layout`, re-exported
as `msops.parallel.Layout`) because `Primitive.shard`, below the parallel layer, must
recognise it.
"""
from __future__ import annotations

import math
from typing import Any

__all__ = ["Layout", "is_layout_strategy"]

_NAME = "Layout"
_NONE = "None"


class Layout:
    """A device matrix with one alias per axis; calling it gives a tensor's layout.

    >>> layout = Layout((2, 2, 2), ("dp", "sp", "mp"))
    >>> layout("dp", "mp").to_dict()["tensor_map"]
    (2, 0)
    """

    def __init__(self, device_matrix: tuple, alias_name: tuple,
                 rank_list: list | None = None) -> None:
        if not isinstance(device_matrix, tuple):
            raise TypeError(f"For '{_NAME}', the 'device_matrix' should be a tuple, but got "
                            f"{type(device_matrix).__name__}: {device_matrix!r}.")
        if not isinstance(alias_name, tuple):
            raise TypeError(f"For '{_NAME}', the 'alias_name' should be a tuple, but got "
                            f"{type(alias_name).__name__}: {alias_name!r}.")
        if len(device_matrix) != len(alias_name):
            raise ValueError(f"For '{_NAME}', the length of 'alias_name' should equal the "
                             f"length of 'device_matrix' ({len(device_matrix)}), but got "
                             f"{len(alias_name)}: {alias_name}.")
        for i, v in enumerate(device_matrix):
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"For '{_NAME}', 'device_matrix[{i}]' should be an int, but "
                                f"got {type(v).__name__}: {v!r}.")
            if v < 1:
                raise ValueError(f"For '{_NAME}', 'device_matrix[{i}]' should be >= 1, but "
                                 f"got {v}.")
        for i, a in enumerate(alias_name):
            if not isinstance(a, str):
                raise TypeError(f"For '{_NAME}', 'alias_name[{i}]' should be a str, but got "
                                f"{type(a).__name__}: {a!r}.")
            if not a or a == _NONE:
                raise ValueError(f"For '{_NAME}', 'alias_name[{i}]' should be a non-empty "
                                 f"name other than 'None', but got {a!r}.")
            if a == "interleaved_parallel":
                raise ValueError(f"For '{_NAME}', the alias 'interleaved_parallel' (several "
                                 f"slices of one tensor on one device) is not supported by "
                                 f"msops; name the axis differently.")
        if len(set(alias_name)) != len(alias_name):
            raise ValueError(f"For '{_NAME}', the 'alias_name' should not repeat a name, but "
                             f"got {alias_name}.")
        n = math.prod(device_matrix)
        if rank_list is not None:
            if not isinstance(rank_list, list):
                raise TypeError(f"For '{_NAME}', the 'rank_list' should be a list, but got "
                                f"{type(rank_list).__name__}.")
            if rank_list != list(range(n)):
                raise ValueError(f"For '{_NAME}', the 'rank_list' should be None or "
                                 f"list(range({n})) (msops places ranks row-major over the "
                                 f"device matrix), but got {rank_list}.")
        self._device_matrix = device_matrix
        self._alias_name = alias_name
        self._tensor_map: tuple | None = None
        self._aliases: tuple | None = None

    @property
    def device_matrix(self) -> tuple[int, ...]:
        return self._device_matrix

    @property
    def alias_name(self) -> tuple[str, ...]:
        return self._alias_name

    @property
    def aliases(self) -> tuple | None:
        """The per-dim entries the layout was called with (None until called)."""
        return self._aliases

    @property
    def tensor_map(self) -> tuple | None:
        """Per tensor dim: -1, a device axis counted from the right, or a tuple of them
        (major first); None until the layout is called."""
        return self._tensor_map

    def _axis(self, alias: str, dim: int) -> int:
        if not isinstance(alias, str):
            raise TypeError(f"For '{_NAME}', the tensor map entry of dim {dim} should be an "
                            f"alias (str) or a tuple of aliases, but got "
                            f"{type(alias).__name__}: {alias!r}.")
        if alias == _NONE:
            return -1
        if alias not in self._alias_name:
            raise ValueError(f"For '{_NAME}', the alias of dim {dim} should be one of "
                             f"{self._alias_name + (_NONE,)}, but got {alias!r}.")
        return len(self._alias_name) - 1 - self._alias_name.index(alias)

    def __call__(self, *tensor_map: Any) -> "Layout":
        """The layout of a tensor: per dim an alias, a tuple of aliases, or "None"."""
        if not tensor_map:
            raise ValueError(f"For '{_NAME}', calling a layout needs one alias per tensor "
                             f"dim, but got none.")
        entries, used = [], {}
        for d, entry in enumerate(tensor_map):
            names = entry if isinstance(entry, tuple) else (entry,)
            if not names:
                raise ValueError(f"For '{_NAME}', the tensor map entry of dim {d} should not "
                                 f"be an empty tuple.")
            axes = []
            for alias in names:
                k = self._axis(alias, d)
                if k == -1:
                    if len(names) > 1:
                        raise ValueError(f"For '{_NAME}', 'None' cannot be part of the tuple "
                                         f"of dim {d}, but got {entry}.")
                    continue
                if alias in used:
                    raise ValueError(f"For '{_NAME}', each alias should shard a tensor at "
                                     f"most once, but {alias!r} is used by dim {used[alias]} "
                                     f"and dim {d} in {tensor_map}.")
                used[alias] = d
                axes.append(k)
            entries.append(-1 if not axes else axes[0] if len(axes) == 1 else tuple(axes))
        out = Layout(self._device_matrix, self._alias_name)
        out._tensor_map = tuple(entries)
        out._aliases = tuple(tensor_map)
        return out

    def to_dict(self) -> dict:
        """MindSpore's dict form: device_matrix, tensor_map, interleaved_parallel,
        alias_name, rank_list."""
        if self._tensor_map is None:
            raise ValueError(f"For '{_NAME}', to_dict() needs a tensor map: call the layout "
                             f"first, e.g. layout('dp', 'None').")
        return {"device_matrix": self._device_matrix, "tensor_map": self._tensor_map,
                "interleaved_parallel": False, "alias_name": self._alias_name,
                "rank_list": list(range(math.prod(self._device_matrix)))}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and (self._device_matrix, self._alias_name,
                                              self._tensor_map) == \
            (other._device_matrix, other._alias_name, other._tensor_map)

    def __hash__(self) -> int:
        return hash((self._device_matrix, self._alias_name, self._tensor_map))

    def __repr__(self) -> str:
        if self._aliases is None:
            return f"Layout({self._device_matrix}, {self._alias_name})"
        return f"Layout({self._device_matrix}, {self._alias_name}){self._aliases}"


def is_layout_strategy(strategy: Any) -> bool:
    """True when a (checked) strategy is a tuple of called Layouts, not of int tuples."""
    return bool(strategy) and isinstance(strategy[0], Layout)
