"""Image patches, as `mindspore.ops`: unfold (im2col: every kernel window of x (N, C, H, W)
as a column) and fold (col2im: columns summed back into their windows: unfold's adjoint),
with torch-style arguments (kernel_size, dilation, padding, stride); `patch_blocks` is
also the body of nn.Unfold (TF's extract_image_patches). Compositions of Pad, StridedSlice,
Stack, Reshape and AddN, so they trace, shard and differentiate as those do."""
from __future__ import annotations

from typing import Any, Sequence

from msops.common.tensor import check_tensor
from msops.ops._dispatch import _prim
from msops.ops.pad_func import pad_dims
from msops.primitives.array_ops import Reshape, StridedSlice
from msops.primitives.math_ops import AddN
from msops.primitives.stack_ops import Stack

__all__ = ["unfold", "fold"]


def pair(name: str, arg: str, value: Any, minimum: int = 1) -> tuple:
    """An int or a tuple/list of 2 ints, each >= minimum, as a pair."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value, value)
    if not isinstance(value, (tuple, list)) or len(value) != 2 or \
            not all(isinstance(v, int) and not isinstance(v, bool) and v >= minimum
                    for v in value):
        raise ValueError(f"For '{name}', the '{arg}' should be an int or a tuple of 2 ints, "
                         f"each >= {minimum}, but got {value!r}.")
    return tuple(value)


def out_size(name: str, size: int, kernel: int, dilation: int, stride: int, what: str) -> int:
    """The number of windows along one padded dim of `size`; at least one."""
    span = dilation * (kernel - 1) + 1
    if size < span:
        raise ValueError(f"For '{name}', the padded {what} {size} should be >= the dilated "
                         f"kernel's extent {span}, but it is smaller.")
    return (size - span) // stride + 1


def patch_blocks(x: Any, kernel: Sequence[int], dilation: Sequence[int],
                 stride: Sequence[int], out: Sequence[int]) -> list:
    """x (N, C, H, W) already padded: for each kernel offset (i, j), row-major, the
    (N, C, out_h, out_w) values under it in every window."""
    n, c = x.shape[0], x.shape[1]
    blocks = []
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            top, left = i * dilation[0], j * dilation[1]
            end = (top + stride[0] * (out[0] - 1) + 1, left + stride[1] * (out[1] - 1) + 1)
            blocks.append(_prim(StridedSlice)(x, (0, 0, top, left), (n, c) + end,
                                              (1, 1) + tuple(stride)))
    return blocks


def _args(name: str, kernel_size: Any, dilation: Any, padding: Any, stride: Any) -> tuple:
    return (pair(name, "kernel_size", kernel_size), pair(name, "dilation", dilation),
            pair(name, "padding", padding, 0), pair(name, "stride", stride))


def unfold(input: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,  # noqa: A002
           stride: Any = 1) -> Any:
    """input (N, C, H, W) -> (N, C * kh * kw, L): column l holds window l (row-major over
    the out_h x out_w windows), its rows ordered (c, i, j), as `mindspore.ops.unfold`.
    `padding` zero-pads both sides of H and W."""
    name = "unfold"
    check_tensor(name, "input", input)
    kernel, dil, pads, strides = _args(name, kernel_size, dilation, padding, stride)
    shape = tuple(input.shape)
    if len(shape) != 4:
        raise ValueError(f"For '{name}', the 'input' should be 4-D (N, C, H, W), but got "
                         f"shape {list(shape)}.")
    n, c, h, w = shape
    out = (out_size(name, h + 2 * pads[0], kernel[0], dil[0], strides[0], "height"),
           out_size(name, w + 2 * pads[1], kernel[1], dil[1], strides[1], "width"))
    x = pad_dims(name, input, [(2, pads[0], pads[0]), (3, pads[1], pads[1])], "constant")
    cols = _prim(Stack, 2)(tuple(patch_blocks(x, kernel, dil, strides, out)))
    return _prim(Reshape)(cols, (n, c * kernel[0] * kernel[1], out[0] * out[1]))


def _strided(name: str, block: Any, stride: Sequence[int]) -> Any:
    """block (N, C, oh, ow) spread over ((oh - 1) * sh + 1, (ow - 1) * sw + 1) with zeros
    between its values (where the windows start)."""
    n, c, oh, ow = block.shape
    sh, sw = stride
    if sh == sw == 1:
        return block
    x = _prim(Reshape)(block, (n, c, oh, 1, ow, 1))
    x = pad_dims(name, x, [(3, 0, sh - 1), (5, 0, sw - 1)], "constant")
    x = _prim(Reshape)(x, (n, c, oh * sh, ow * sw))
    return pad_dims(name, x, [(2, 0, 1 - sh), (3, 0, 1 - sw)], "constant")


def fold(input: Any, output_size: Any, kernel_size: Any, dilation: Any = 1,  # noqa: A002
         padding: Any = 0, stride: Any = 1) -> Any:
    """input (N, C * kh * kw, L) -> (N, C, H, W), (H, W) = output_size: each column's values
    added into its window (overlaps sum), as `mindspore.ops.fold`: the adjoint of unfold
    with the same arguments; L must be the number of windows."""
    name = "fold"
    check_tensor(name, "input", input)
    kernel, dil, pads, strides = _args(name, kernel_size, dilation, padding, stride)
    h, w = pair(name, "output_size", output_size)
    shape = tuple(input.shape)
    k = kernel[0] * kernel[1]
    if len(shape) != 3 or shape[1] % k:
        raise ValueError(f"For '{name}', the 'input' should be 3-D (N, C * {k}, L) (kernel "
                         f"{list(kernel)}), but got shape {list(shape)}.")
    hp, wp = h + 2 * pads[0], w + 2 * pads[1]
    out = (out_size(name, hp, kernel[0], dil[0], strides[0], "height"),
           out_size(name, wp, kernel[1], dil[1], strides[1], "width"))
    if shape[2] != out[0] * out[1]:
        raise ValueError(f"For '{name}', the last dim of 'input' should be the number of "
                         f"windows {out[0]} * {out[1]} = {out[0] * out[1]}, but got "
                         f"{shape[2]}.")
    n, c = shape[0], shape[1] // k
    cols = _prim(Reshape)(input, (n, c, k) + out)
    parts = []
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            off = i * kernel[1] + j
            block = _prim(StridedSlice)(cols, (0, 0, off, 0, 0), (n, c, off + 1) + out,
                                        (1,) * 5)
            spread = _strided(name, _prim(Reshape)(block, (n, c) + out), strides)
            top, left = i * dil[0], j * dil[1]
            parts.append(pad_dims(name, spread, [
                (2, top, hp - top - spread.shape[2]), (3, left, wp - left - spread.shape[3])],
                "constant"))
    whole = parts[0] if len(parts) == 1 else _prim(AddN)(parts)
    return pad_dims(name, whole, [(2, -pads[0], -pads[0]), (3, -pads[1], -pads[1])],
                    "constant")
