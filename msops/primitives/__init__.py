"""One class per op: attributes, shape/dtype inference and kernel, each in its family file."""
from msops.primitives.comm_ops import *  # noqa: F401,F403
from msops.primitives.comm_ops import __all__ as _comm_all
from msops.primitives.primitive import Primitive, PrimitiveWithInfer, prim_attr_register

__all__ = ["Primitive", "PrimitiveWithInfer", "prim_attr_register"] + list(_comm_all)
