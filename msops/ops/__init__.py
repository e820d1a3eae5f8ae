"""The public op namespace, as `mindspore.ops`: every primitive class and ReduceOp."""
from msops.primitives import *  # noqa: F401,F403
from msops.primitives import __all__ as _prim_all

__all__ = list(_prim_all)
