"""Cell containers, as `mindspore.nn`: SequentialCell (runs its cells in order),
CellList (holds them; the parent's construct iterates it) and CellDict (by key).

Both keep their cells as sub-cells named "0", "1", … (a SequentialCell made from an
OrderedDict: by its keys), so their Parameters are named `<index>.<name>` under the
container's own prefix, as MindSpore names them. Indexing, slicing (a new container of
the same cells, their Parameters' names untouched), assignment, deletion, insert, append
and extend behave as a list's; removing or inserting re-numbers the cells after it and
renames their Parameters to match (`blocks.2.weight` becomes `blocks.1.weight`), as
MindSpore, and a cell taken out gets back its Parameters' names from before.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterable, Iterator

from msops.common.state_epoch import bump
from msops.nn.cell import Cell

__all__ = ["SequentialCell", "CellList", "CellDict"]


class _Holder(Cell):
    """Sub-cells held under keys that change (positions, dict keys), their Parameters'
    names kept in step: `<outer><key>.<inner>`."""

    def _checked(self, cell: Any, where: str) -> Cell:
        if not isinstance(cell, Cell):
            raise TypeError(f"For '{self.cls_name}', the {where} should be a Cell, but got "
                            f"{type(cell).__name__}.")
        return cell

    # A Parameter's name is `<outer><key>.<inner>`: outer cells prefix it later, never at
    # its end, so the lengths of "<key>." and <inner> find the key in it when renumbering.
    def _keyed(self) -> dict[int, tuple[int, int]]:
        return self.__dict__.setdefault("_keyed_len", {})

    def _outer(self) -> str:
        """The prefix outer cells gave this container's Parameters ("" when none)."""
        keyed = self._keyed()
        for cell in self._cells.values():
            for p in cell.get_parameters():
                if id(p) in keyed:
                    key_len, inner = keyed[id(p)]
                    return p.name[:len(p.name) - key_len - inner]
        return ""

    def _hold(self, items: list[tuple[str, Cell]]) -> None:
        """Hold exactly `items` (key, cell), with auto_prefix: new cells' Parameters are
        named `<outer><key>.<name>`, moved ones' keys replaced, and removed ones get back
        the names they had before they came in."""
        outer, keyed = self._outer(), self._keyed()
        kept = {id(c) for _, c in items}
        for cell in self._cells.values():
            if id(cell) not in kept:
                for p in cell.get_parameters():
                    if id(p) in keyed:
                        p.name = p.name[len(p.name) - keyed.pop(id(p))[1]:]
        for name in list(self._cells):
            self.__dict__.pop(name, None)
        self._cells.clear()
        for key, cell in items:
            if self._auto_prefix:
                for p in cell.get_parameters():
                    key_len, inner = keyed.get(id(p), (0, len(p.name)))
                    mine = p.name[:len(p.name) - key_len - inner] if id(p) in keyed else outer
                    p.name = f"{mine}{key}.{p.name[len(p.name) - inner:]}"
                    keyed[id(p)] = (len(key) + 1, inner)
            self._cells[key] = cell
            object.__setattr__(self, key, cell)
        bump()



class _CellSequence(_Holder):
    """List behaviour over the sub-cells, in insertion order."""

    @classmethod
    def _view(cls, cells: list[Cell]) -> "_CellSequence":
        """A container of `cells` that leaves their Parameters' names alone (a slice: the
        same Parameters as the container's)."""
        view = cls.__new__(cls)
        Cell.__init__(view, auto_prefix=False)
        view._hold([(str(i), c) for i, c in enumerate(cells)])
        return view

    def _index(self, index: Any) -> int:
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"For '{self.cls_name}', the index should be an int or a slice, "
                            f"but got {type(index).__name__}.")
        n = len(self._cells)
        if not -n <= index < n:
            raise IndexError(f"For '{self.cls_name}', the index should be in [{-n}, {n}), but "
                             f"got {index}.")
        return index % n

    def _renumber(self, cells: list[Cell]) -> None:
        self._hold([(str(i), c) for i, c in enumerate(cells)])

    def __getitem__(self, index: int | slice) -> Any:
        cells = list(self._cells.values())
        if isinstance(index, slice):
            return type(self)._view(cells[index])
        return cells[self._index(index)]

    def __setitem__(self, index: int, cell: Cell) -> None:
        cells = list(self._cells.values())
        cells[self._index(index)] = self._checked(cell, "cell")
        self._renumber(cells)

    def __delitem__(self, index: int | slice) -> None:
        cells = list(self._cells.values())
        if isinstance(index, slice):
            del cells[index]
        else:
            del cells[self._index(index)]
        self._renumber(cells)

    def __len__(self) -> int:
        return len(self._cells)

    def __iter__(self) -> Iterator[Cell]:
        return iter(list(self._cells.values()))

    def append(self, cell: Cell) -> "_CellSequence":
        """Add `cell` at the end."""
        self._hold(list(self._cells.items()) + [(str(len(self._cells)),
                                                  self._checked(cell, "cell"))])
        return self

    def extend(self, cells: Iterable[Cell]) -> "_CellSequence":
        """Add every cell of `cells` at the end, in order."""
        added = [self._checked(c, f"cell {i}") for i, c in enumerate(list(cells))]
        n = len(self._cells)
        self._hold(list(self._cells.items()) + [(str(n + i), c) for i, c in enumerate(added)])
        return self

    def insert(self, index: int, cell: Cell) -> None:
        """Put `cell` before position `index` (as list.insert: clamped to the ends)."""
        cells = list(self._cells.values())
        cells.insert(index, self._checked(cell, "cell"))
        self._renumber(cells)

    def __iadd__(self, cells: Iterable[Cell]) -> "_CellSequence":
        return self.extend(cells)


class SequentialCell(_CellSequence):
    """Cells run in order: `SequentialCell([c1, c2])`, `SequentialCell(c1, c2)` or an
    OrderedDict (its keys name the cells)."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            items = list(args[0].items())
        else:
            cells = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
            items = [(str(i), c) for i, c in enumerate(cells)]
        self._hold([(name, self._checked(cell, f"cell {i}")) for i, (name, cell)
                    in enumerate(items)])

    def construct(self, x):
        for cell in self._cells.values():
            x = cell(x)
        return x


class CellList(_CellSequence):
    """A list of cells: `CellList([c1, c2])`; it registers them (their Parameters belong to
    the network) and the parent's construct calls them, usually in a loop."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        auto_prefix = kwargs.pop("auto_prefix", True)
        if kwargs or len(args) > 1:
            raise TypeError(f"For 'CellList', the arguments should be one list of cells (and "
                            f"auto_prefix), but got {len(args)} positional and "
                            f"{sorted(kwargs)}.")
        super().__init__(auto_prefix)
        if args:
            self.extend(args[0])

    def _vmap_members(self) -> list[Cell]:
        """The cells `vmap(cell_list)` maps over (model ensembling: their Parameters
        stacked, one cell per batch element)."""
        return list(self._cells.values())

    def construct(self, *inputs: Any) -> Any:
        raise TypeError("For 'CellList', a CellList is not callable: call its cells (for "
                        "cell in cell_list: x = cell(x)).")


class CellDict(_Holder):
    """An ordered dict of cells: `CellDict({"conv": c1, "act": c2})` (or (key, cell)
    pairs); it registers them under their keys (Parameters named `<key>.<name>` under the
    dict's own prefix) and the parent's construct calls them. A cell taken out gets its
    Parameters' names back."""

    def __init__(self, args: Any = None, **kwargs: Any) -> None:
        auto_prefix = kwargs.pop("auto_prefix", True)
        if kwargs:
            raise TypeError(f"For 'CellDict', the arguments should be a dict or pairs of cells "
                            f"(and auto_prefix), but got {sorted(kwargs)}.")
        super().__init__(auto_prefix)
        if args is not None:
            self.update(args)

    def _key(self, key: Any) -> str:
        if not isinstance(key, str) or not key or "." in key:
            raise TypeError(f"For 'CellDict', a key should be a non-empty str without '.', but "
                            f"got {key!r}.")
        return key

    def __getitem__(self, key: str) -> Cell:
        if key not in self._cells:
            raise KeyError(f"For 'CellDict', there is no cell '{key}'; the keys are "
                           f"{list(self._cells)}.")
        return self._cells[key]

    def __setitem__(self, key: str, cell: Cell) -> None:
        self.update([(key, cell)])

    def __delitem__(self, key: str) -> None:
        self[key]                                   # a KeyError naming the keys
        self._hold([(k, c) for k, c in self._cells.items() if k != key])

    def __len__(self) -> int:
        return len(self._cells)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._cells))

    def __contains__(self, key: object) -> bool:
        return key in self._cells

    def keys(self) -> list[str]:
        return list(self._cells)

    def values(self) -> list[Cell]:
        return list(self._cells.values())

    def items(self) -> list[tuple[str, Cell]]:
        return list(self._cells.items())

    def pop(self, key: str) -> Cell:
        cell = self[key]
        del self[key]
        return cell

    def clear(self) -> None:
        self._hold([])

    def update(self, cells: Any) -> None:
        """Add (or replace, in place) the cells of a dict or of (key, cell) pairs."""
        items = dict(self._cells)
        for i, item in enumerate(cells.items() if hasattr(cells, "items") else cells):
            if not (isinstance(item, (tuple, list)) and len(item) == 2):
                raise TypeError(f"For 'CellDict', item {i} should be a (key, cell) pair, but "
                                f"got {item!r:.80}.")
            key = self._key(item[0])
            items[key] = self._checked(item[1], f"cell of '{key}'")
        self._hold(list(items.items()))

    def construct(self, *inputs: Any) -> Any:
        raise TypeError("For 'CellDict', a CellDict is not callable: call its cells "
                        "(cell_dict['name'](x)).")
