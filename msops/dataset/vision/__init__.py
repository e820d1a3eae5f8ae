"""`mindspore.dataset.vision`: image transforms on numpy (H, W[, C]) arrays for
`Dataset.map`, decoding of encoded images, and the Inter / Border modes."""
from msops.dataset.vision.decode import Decode
from msops.dataset.vision.resized_crop import RandomCropDecodeResize, RandomResizedCrop
from msops.dataset.vision.transforms import (HWC2CHW, CenterCrop, Normalize, Pad, RandomCrop,
                                             RandomHorizontalFlip, RandomVerticalFlip, Rescale,
                                             Resize, ToTensor)
from msops.dataset.vision.utils import Border, Inter

__all__ = ["Border", "CenterCrop", "Decode", "HWC2CHW", "Inter", "Normalize", "Pad",
           "RandomCrop", "RandomCropDecodeResize", "RandomHorizontalFlip", "RandomResizedCrop",
           "RandomVerticalFlip", "Rescale", "Resize", "ToTensor"]
