"""One class per op: attributes, shape/dtype inference and kernel, each in its family file."""
from msops.primitives.comm_ops import *  # noqa: F401,F403
from msops.primitives.comm_ops import __all__ as _comm_all
from msops.primitives.math_ops import *  # noqa: F401,F403
from msops.primitives.nn_ops import *  # noqa: F401,F403
from msops.primitives.array_ops import *  # noqa: F401,F403
from msops.primitives.state_ops import *  # noqa: F401,F403
from msops.primitives import math_ops as _math, nn_ops as _nn, array_ops as _array
from msops.primitives import state_ops as _state
from msops.primitives.primitive import Primitive, PrimitiveWithInfer, prim_attr_register

__all__ = (["Primitive", "PrimitiveWithInfer", "prim_attr_register"] + list(_comm_all)
           + _math.__all__ + _nn.__all__ + _array.__all__
           + _state.__all__)
