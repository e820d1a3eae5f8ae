"""`mindspore.dataset.transforms`: general transforms for `Dataset.map`."""
from msops.dataset.transforms.transforms import (Compose, Concatenate, Duplicate, Fill, OneHot,
                                                 PadEnd, RandomApply, RandomChoice, RandomOrder,
                                                 Slice, TypeCast)

__all__ = ["Compose", "Concatenate", "Duplicate", "Fill", "OneHot", "PadEnd", "RandomApply",
           "RandomChoice", "RandomOrder", "Slice", "TypeCast"]
