"""`mindspore.nn`'s spelling of the initializers: they live in `msops.common.initializer`."""
from msops.common.initializer import (Constant, Initializer, Normal, One, Uniform, Zero,
                                      initializer, set_seed)

__all__ = ["initializer", "set_seed", "Initializer", "Normal", "Uniform", "Constant", "One",
           "Zero"]
