"""`mindspore.ops.operations` (imported as `P` by MindSpore's training code): every primitive
class, and the primitive-class spellings of the value functions (`P.Fill`, `P.Shape`,
`P.DType`, `P.Rank`, `P.Size`, `P.Depend`, `P.Ones`, `P.Zeros`)."""
from msops.primitives import *  # noqa: F401,F403
from msops.primitives import __all__ as _prim_all
from msops.ops.value_func import Depend, DType, Fill, Ones, Rank, Shape, Size, Zeros

__all__ = list(_prim_all) + ["Fill", "Ones", "Zeros", "Shape", "DType", "Rank", "Size",
                             "Depend"]
