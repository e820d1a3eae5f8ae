"""A reader of MATLAB level-5 .mat files (numeric, char, logical, sparse, cell and struct
arrays: what the Flowers102, Caltech101, SVHN and SBD files hold), so that no SciPy is
needed at run time.

Level 5 layout: a 128-byte header (text, subsystem offset, version 0x0100 and the endian
indicator 'IM'), then data elements, each a tag (uint32 type, uint32 byte count; a "small"
element packs count << 16 | type and up to 4 bytes of data into 8 bytes) followed by its
data padded to 8 bytes. A miCOMPRESSED element is a zlib stream of further elements. A
miMATRIX element holds sub-elements: array flags (class in the low byte, complex bit
0x0800, logical 0x0200), dimensions, name, then the real (and imaginary) data, stored
column-major in any numeric type and converted to the array class; a sparse array holds its
row indices, column starts and values; a cell array one miMATRIX per element; a struct the
field-name width, the names, then one miMATRIX per element and field.
"""
from __future__ import annotations

import struct
import zlib

import numpy as np

__all__ = ["load_mat"]

_TYPES = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 9: "f8", 12: "i8",
          13: "u8", 16: "u1", 17: "u2", 18: "u4"}
_CLASSES = {6: "f8", 7: "f4", 8: "i1", 9: "u1", 10: "i2", 11: "u2", 12: "i4", 13: "u4",
            14: "i8", 15: "u8"}
_MATRIX, _COMPRESSED, _CHAR, _CELL, _STRUCT, _SPARSE = 14, 15, 4, 1, 2, 5


def _elements(data: bytes, order: str, where: str) -> list:
    """(type, payload) of the data elements in `data`."""
    out, pos = [], 0
    while pos + 8 <= len(data):
        kind, count = struct.unpack(order + "II", data[pos:pos + 8])
        if kind >> 16:                                   # small element
            count, kind = kind >> 16, kind & 0xFFFF
            out.append((kind, data[pos + 4:pos + 4 + count]))
            pos += 8
            continue
        payload = data[pos + 8:pos + 8 + count]
        if len(payload) != count:
            raise ValueError(f"{where} is truncated (an element of {count} bytes).")
        out.append((kind, payload))
        pos += 8 + (count if kind == _COMPRESSED else (count + 7) // 8 * 8)
    return out


def _matrix(payload: bytes, order: str, where: str) -> tuple[str, object] | None:
    """(name, value) of a miMATRIX element: a numeric array, a str array (char), a dense
    array (sparse; bool when logical), an object array of values (cell) or of
    {field: value} dicts (struct); None for the classes not read (objects, functions)."""
    if not payload:                                      # an empty cell / field
        return "", np.zeros((0, 0))
    parts = _elements(payload, order, where)
    if len(parts) < 3:
        raise ValueError(f"{where} has a malformed matrix element.")
    flags = int(np.frombuffer(parts[0][1][:4], order + "u4")[0])
    cls, complex_, logical = flags & 0xFF, bool(flags & 0x0800), bool(flags & 0x0200)
    dims = tuple(int(d) for d in np.frombuffer(parts[1][1], order + _TYPES[parts[1][0]]))
    name = parts[2][1].decode("latin-1")

    def values(k: int) -> np.ndarray:
        kind, raw = parts[k]
        return np.frombuffer(raw, order + _TYPES[kind])

    def nested(k: int) -> object:
        kind, raw = parts[k]
        if kind != _MATRIX:
            raise ValueError(f"{where} has a malformed cell or struct element.")
        found = _matrix(raw, order, where)
        return None if found is None else found[1]
    count = int(np.prod(dims)) if dims else 0
    if cls == _CELL:
        cells = np.empty(count, object)
        cells[:] = [nested(3 + k) for k in range(count)]
        return name, cells.reshape(dims, order="F")
    if cls == _STRUCT:
        width = int(values(3)[0])
        raw = parts[4][1]
        fields = [raw[k:k + width].split(b"\0")[0].decode("latin-1")
                  for k in range(0, len(raw), width)]
        items = np.empty(count, object)
        items[:] = [{f: nested(5 + e * len(fields) + j) for j, f in enumerate(fields)}
                    for e in range(count)]
        return name, items.reshape(dims, order="F")
    if cls == _SPARSE:
        rows_, starts, data = values(3), values(4), values(5)
        dense = np.zeros(dims, bool if logical else np.float64)
        for col in range(dims[1]):
            span = slice(int(starts[col]), int(starts[col + 1]))
            dense[rows_[span].astype(np.int64), col] = data[span]
        return name, dense
    if cls not in _CLASSES and cls != _CHAR:
        return None
    real = values(3)
    if cls == _CHAR:
        grid = real.reshape(dims, order="F").reshape(dims[0], -1) if real.size else \
            np.zeros((dims[0] if dims else 0, 0), np.uint16)
        return name, np.array(["".join(map(chr, row)) for row in grid])
    array = real.astype(_CLASSES[cls])
    if complex_:
        array = array + 1j * values(4)
    if logical:
        array = array.astype(bool)
    return name, array.reshape(dims, order="F")


def load_mat(path: str) -> dict:
    """{name: value} of the level-5 .mat file `path` (shapes as MATLAB's, e.g. (1, n) for a
    row vector; char arrays as str arrays of rows; sparse arrays dense; cells and structs as
    object arrays of values and of {field: value} dicts)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 128 or data[126:128] not in (b"IM", b"MI"):
        raise ValueError(f"'{path}' is not a MATLAB level-5 .mat file (v4 and v7.3/HDF5 files "
                         f"are not read).")
    order = "<" if data[126:128] == b"IM" else ">"
    out = {}
    pending = _elements(data[128:], order, f"'{path}'")
    while pending:
        kind, payload = pending.pop(0)
        if kind == _COMPRESSED:
            try:
                pending[0:0] = _elements(zlib.decompress(payload), order, f"'{path}'")
            except zlib.error as exc:
                raise ValueError(f"'{path}' has a corrupt compressed element: {exc}.") from exc
        elif kind == _MATRIX:
            found = _matrix(payload, order, f"'{path}'")
            if found is not None:
                out[found[0]] = found[1]
    return out
