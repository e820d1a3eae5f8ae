"""`mindspore.dataset.vision`: image transforms on numpy (H, W[, C]) arrays for
`Dataset.map`, decoding of encoded images, and the Inter / Border modes."""
from msops.dataset.vision.decode import Decode
from msops.dataset.vision.resized_crop import RandomCropDecodeResize, RandomResizedCrop
from msops.dataset.vision.transforms import (HWC2CHW, CenterCrop, Normalize, Pad, RandomCrop,
                                             RandomHorizontalFlip, RandomVerticalFlip, Rescale,
                                             Resize, ToTensor)
from msops.dataset.vision.utils import Border, Inter
from msops.dataset.vision.color import (AdjustBrightness, AdjustContrast, AdjustGamma, AdjustHue,
                                        AdjustSaturation, AdjustSharpness, AutoContrast, Equalize,
                                        Grayscale, Invert, Posterize, Solarize)
from msops.dataset.vision.random_color import (RandomAdjustSharpness, RandomAutoContrast,
                                               RandomColorAdjust, RandomEqualize, RandomGrayscale,
                                               RandomInvert, RandomPosterize, RandomSharpness,
                                               RandomSolarize)
from msops.dataset.vision.geometry import (Crop, FiveCrop, HorizontalFlip, PadToSize,
                                           Perspective, RandomAffine, RandomPerspective,
                                           RandomRotation, ResizedCrop, Rotate, TenCrop,
                                           VerticalFlip)
from msops.dataset.vision.erase import CutOut, Erase, RandomErasing
from msops.dataset.vision.blur import GaussianBlur
from msops.dataset.vision.mix import CutMixBatch, ImageBatchFormat, MixUpBatch
from msops.dataset.vision.augment import (AutoAugment, AutoAugmentPolicy, RandAugment,
                                          RandomSelectSubpolicy, TrivialAugmentWide,
                                          UniformAugment)
from msops.dataset.vision.convert import (ConvertColor, ConvertMode, NormalizePad, SliceMode,
                                          SlicePatches, ToPIL, ToType)

__all__ = ["Border", "CenterCrop", "Decode", "HWC2CHW", "Inter", "Normalize", "Pad",
           "RandomCrop", "RandomCropDecodeResize", "RandomHorizontalFlip", "RandomResizedCrop",
           "RandomVerticalFlip", "Rescale", "Resize", "ToTensor"]
__all__ += ["AdjustBrightness", "AdjustContrast", "AdjustGamma", "AdjustHue", "AdjustSaturation",
            "AdjustSharpness", "AutoContrast", "Equalize", "Grayscale", "Invert", "Posterize",
            "Solarize", "RandomAdjustSharpness", "RandomAutoContrast", "RandomColorAdjust",
            "RandomEqualize", "RandomGrayscale", "RandomInvert", "RandomPosterize",
            "RandomSharpness", "RandomSolarize", "Crop", "FiveCrop", "HorizontalFlip",
            "PadToSize", "RandomAffine", "RandomRotation", "ResizedCrop", "Rotate", "TenCrop",
            "VerticalFlip", "CutOut", "Erase", "RandomErasing", "GaussianBlur", "CutMixBatch",
            "ImageBatchFormat", "MixUpBatch"]
__all__ += ["AutoAugment", "AutoAugmentPolicy", "RandAugment", "RandomSelectSubpolicy",
            "TrivialAugmentWide", "UniformAugment", "ConvertColor", "ConvertMode", "NormalizePad",
            "SliceMode", "SlicePatches", "ToPIL", "ToType", "Perspective",
            "RandomPerspective"]
