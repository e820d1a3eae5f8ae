"""`mindspore.dataset.vision`: image transforms on numpy (H, W[, C]) arrays for
`Dataset.map`, and the Inter / Border modes."""
from msops.dataset.vision.transforms import (HWC2CHW, CenterCrop, Normalize, Pad, RandomCrop,
                                             RandomHorizontalFlip, RandomVerticalFlip, Rescale,
                                             Resize, ToTensor)
from msops.dataset.vision.utils import Border, Inter

__all__ = ["Border", "CenterCrop", "HWC2CHW", "Inter", "Normalize", "Pad", "RandomCrop",
           "RandomHorizontalFlip", "RandomVerticalFlip", "Rescale", "Resize", "ToTensor"]
