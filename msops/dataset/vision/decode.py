"""`mindspore.dataset.vision.Decode`: encoded image bytes (JPEG, PNG, BMP, GIF, TIFF, ...) ->
an (H, W, 3) uint8 RGB array, as MindSpore's Decode gives (every image is converted to
three RGB channels: greyscale replicated, an alpha channel dropped).

Decoding uses Pillow, the library MindSpore's own `Decode(to_pil=True)` uses. It is an
optional dependency (the `vision` extra): imported when the first image is decoded, so
msops imports without it.
"""
from __future__ import annotations

import io
from typing import Any

import numpy as np

from msops.common import validator
from msops.dataset.transforms.base import TensorOperation, as_array

__all__ = ["Decode", "decode_image", "load_pil"]


def load_pil() -> Any:
    """The `PIL.Image` module, or an ImportError saying how to install it."""
    try:
        from PIL import Image
    except ImportError as exc:
        raise ImportError("Decoding images needs Pillow: pip install 'msops[vision]' "
                          "(or pip install pillow).") from exc
    return Image


def decode_image(data: Any, op: str, to_pil: bool = False, where: str = "") -> Any:
    """Decode the encoded image in `data` (1-D uint8 array, bytes) to an (H, W, 3) uint8 RGB
    array (a PIL RGB image when `to_pil`); an undecodable input is a RuntimeError naming
    `op` (and `where` the bytes came from)."""
    image_module = load_pil()
    if isinstance(data, (bytes, bytearray, np.bytes_)):
        raw, array = bytes(data), None
    else:
        array = as_array(data, op)
        raw = array.tobytes() if array.dtype == np.uint8 and array.ndim == 1 else None
    if raw is None:
        raise TypeError(f"For '{op}', the input should be the encoded image as a 1-D uint8 array "
                        f"or bytes, but got shape {array.shape} and dtype {array.dtype}"
                        f" (already decoded?).")
    try:
        with image_module.open(io.BytesIO(raw)) as image:
            rgb = image.convert("RGB")
    except Exception as exc:            # Pillow raises several types for a bad image
        source = f" from '{where}'" if where else ""
        raise RuntimeError(f"For '{op}', the input should be an encoded image (JPEG, PNG, BMP, "
                           f"...), but the {len(raw)} bytes{source} could not be decoded: "
                           f"{exc}") from exc
    return rgb if to_pil else np.asarray(rgb, np.uint8).copy()


class Decode(TensorOperation):
    """Decode encoded image bytes (as `ImageFolderDataset` gives them) to an (H, W, 3) uint8
    RGB array; `to_pil=True` gives a PIL RGB image instead (the vision transforms accept
    both)."""

    def __init__(self, to_pil: bool = False) -> None:
        self.to_pil = validator.check_bool("to_pil", to_pil, "Decode")

    def __call__(self, *inputs: Any) -> Any:
        if len(inputs) != 1:
            raise TypeError(f"For 'Decode', the input should be one encoded image, but got "
                            f"{len(inputs)}.")
        return decode_image(inputs[0], "Decode", self.to_pil)
