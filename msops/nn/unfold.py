"""nn.Unfold, as `mindspore.nn.Unfold`: the image patches of x (N, C, H, W) stacked along
the channels (TensorFlow's extract_image_patches), over ops.patch_func's window slices."""
from __future__ import annotations

from typing import Any

from msops import ops
from msops.common import validator
from msops.nn.cell import Cell
from msops.ops.pad_func import pad_dims
from msops.ops.patch_func import out_size, patch_blocks

__all__ = ["Unfold"]


def _window(name: str, arg: str, value: Any) -> tuple:
    """A `[1, rows, cols, 1]` list or tuple of positive ints, as (rows, cols)."""
    if not isinstance(value, (tuple, list)) or len(value) != 4 or \
            not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value) \
            or value[0] != 1 or value[3] != 1:
        raise ValueError(f"For '{name}', the '{arg}' should be a tuple or list of 4 positive "
                         f"ints [1, rows, cols, 1], but got {value!r}.")
    return tuple(value[1:3])


class Unfold(Cell):
    """`Unfold(ksizes, strides, rates, padding='valid')`: x (N, C, H, W) ->
    (N, C * kr * kc, out_rows, out_cols), each output position holding the kr x kc window
    of x there (window cells `rates` apart, windows `strides` apart), its values ordered
    (row, col, channel). padding 'valid': only whole windows; 'same': out = ceil(H /
    stride), x zero-padded evenly (the extra one after)."""

    def __init__(self, ksizes: Any, strides: Any, rates: Any, padding: str = "valid") -> None:
        super().__init__()
        name = self.cls_name
        self.ksizes = _window(name, "ksizes", ksizes)
        self.strides = _window(name, "strides", strides)
        self.rates = _window(name, "rates", rates)
        validator.check_value_type("padding", padding, str, name)
        self.padding = padding.lower()
        if self.padding not in ("same", "valid"):
            raise ValueError(f"For '{name}', the 'padding' should be 'same' or 'valid', but "
                             f"got {padding!r}.")
        self.stack, self.reshape = ops.Stack(1), ops.Reshape()

    def _pads(self, size: int, axis: int) -> tuple:
        """(before, after) zero padding of one spatial dim."""
        if self.padding == "valid":
            return 0, 0
        out = -(-size // self.strides[axis])
        span = self.rates[axis] * (self.ksizes[axis] - 1) + 1
        total = max((out - 1) * self.strides[axis] + span - size, 0)
        return total // 2, total - total // 2

    def construct(self, x: Any) -> Any:
        name = self.cls_name
        shape = tuple(x.shape)
        if len(shape) != 4:
            raise ValueError(f"For '{name}', the 'x' should be 4-D (N, C, H, W), but got "
                             f"shape {list(shape)}.")
        n, c, h, w = shape
        (top, bottom), (left, right) = self._pads(h, 0), self._pads(w, 1)
        out = (out_size(name, h + top + bottom, self.ksizes[0], self.rates[0],
                        self.strides[0], "height"),
               out_size(name, w + left + right, self.ksizes[1], self.rates[1],
                        self.strides[1], "width"))
        if top or bottom or left or right:
            x = pad_dims(name, x, [(2, top, bottom), (3, left, right)], "constant")
        blocks = patch_blocks(x, self.ksizes, self.rates, self.strides, out)
        patches = self.stack(tuple(blocks))              # (N, kr * kc, C, out_rows, out_cols)
        return self.reshape(patches, (n, len(blocks) * c) + out)

    def extend_repr(self) -> str:
        return (f"ksizes={list(self.ksizes)}, strides={list(self.strides)}, "
                f"rates={list(self.rates)}, padding={self.padding}")
