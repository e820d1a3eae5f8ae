"""One class per op: attributes, shape/dtype inference and kernel, each in its family file."""
from msops.primitives.comm_ops import *  # noqa: F401,F403
from msops.primitives.comm_ops import __all__ as _comm_all
from msops.primitives.math_ops import *  # noqa: F401,F403
from msops.primitives.nn_ops import *  # noqa: F401,F403
from msops.primitives.array_ops import *  # noqa: F401,F403
from msops.primitives.elementwise_ops import *  # noqa: F401,F403
from msops.primitives.activation_ops import *  # noqa: F401,F403
from msops.primitives.reduce_ops import *  # noqa: F401,F403
from msops.primitives.shape_ops import *  # noqa: F401,F403
from msops.primitives.gather_ops import *  # noqa: F401,F403
from msops.primitives.norm_ops import *  # noqa: F401,F403
from msops.primitives.conv_ops import *  # noqa: F401,F403
from msops.primitives.pool_ops import *  # noqa: F401,F403
from msops.primitives.prelu import *  # noqa: F401,F403
from msops.primitives.neighbor_exchange import *  # noqa: F401,F403
from msops.primitives.random_ops import *  # noqa: F401,F403
from msops.primitives import random_ops as _random
from msops.primitives import conv_ops as _conv, pool_ops as _pool, prelu as _prelu
from msops.primitives import neighbor_exchange as _neighbor
from msops.primitives import math_ops as _math, nn_ops as _nn, array_ops as _array
from msops.primitives import (elementwise_ops as _elementwise, activation_ops as _activation,
                              reduce_ops as _reduce, shape_ops as _shape, gather_ops as _gather,
                              norm_ops as _norm)
from msops.primitives.state_ops import *  # noqa: F401,F403
from msops.primitives.unary_ops import *  # noqa: F401,F403
from msops.primitives import unary_ops as _unary
from msops.primitives import state_ops as _state
from msops.primitives.stack_ops import *  # noqa: F401,F403
from msops.primitives.scan_ops import *  # noqa: F401,F403
from msops.primitives.sort_ops import *  # noqa: F401,F403
from msops.primitives import stack_ops as _stack, scan_ops as _scan, sort_ops as _sort
from msops.primitives.piecewise_ops import *  # noqa: F401,F403
from msops.primitives.transcendental_ops import *  # noqa: F401,F403
from msops.primitives.arith_ops import *  # noqa: F401,F403
from msops.primitives.activation_ext_ops import *  # noqa: F401,F403
from msops.primitives import (piecewise_ops as _piecewise, transcendental_ops as _transcendental,
                              arith_ops as _arith, activation_ext_ops as _activation_ext)
from msops.primitives.reshard_ops import *  # noqa: F401,F403
from msops.primitives import reshard_ops as _reshard
from msops.primitives.triangle_ops import *  # noqa: F401,F403
from msops.primitives import triangle_ops as _triangle
from msops.primitives.debug_ops import *  # noqa: F401,F403
from msops.primitives import debug_ops as _debug
from msops.primitives.scatter_ops import *  # noqa: F401,F403
from msops.primitives import scatter_ops as _scatter
from msops.primitives.linalg_ops import *  # noqa: F401,F403
from msops.primitives import linalg_ops as _linalg
from msops.primitives.fft_ops import *  # noqa: F401,F403
from msops.primitives import fft_ops as _fft
from msops.primitives.attention_ops import *  # noqa: F401,F403
from msops.primitives import attention_ops as _attention
from msops.primitives.rms_norm_ops import *  # noqa: F401,F403
from msops.primitives import rms_norm_ops as _rms_norm
from msops.primitives.special_ops import *  # noqa: F401,F403
from msops.primitives import special_ops as _special
from msops.primitives.arith_ext_ops import *  # noqa: F401,F403
from msops.primitives import arith_ext_ops as _arith_ext
from msops.primitives.complex_ops import *  # noqa: F401,F403
from msops.primitives.lu_ops import *  # noqa: F401,F403
from msops.primitives import lu_ops as _lu
from msops.primitives.householder_ops import *  # noqa: F401,F403
from msops.primitives import householder_ops as _householder
from msops.primitives import complex_ops as _complex
from msops.primitives.custom_ops import *  # noqa: F401,F403
from msops.primitives import custom_ops as _custom
from msops.primitives.ctc_ops import *  # noqa: F401,F403
from msops.primitives import ctc_ops as _ctc
from msops.primitives.primitive import Primitive, PrimitiveWithInfer, prim_attr_register

#: the compute families (each module's __all__ is its ops): tests check each op's rules and
#: kernel contract; state_ops (Assign writes its Parameter input) and debug_ops (Print, the
#: gradient hooks) are checked on their own
COMPUTE_FAMILIES = (_math, _nn, _array, _elementwise, _activation, _reduce, _shape, _gather,
                    _norm, _conv, _pool, _prelu, _unary, _stack, _scan, _sort, _piecewise,
                    _transcendental, _arith, _activation_ext, _random, _reshard)
COMPUTE_FAMILIES += (_triangle, _scatter)
COMPUTE_FAMILIES += (_linalg, _fft)
COMPUTE_FAMILIES += (_ctc,)
from msops.primitives.unpool_ops import *  # noqa: F401,F403,E402
from msops.primitives import unpool_ops as _unpool  # noqa: E402
COMPUTE_FAMILIES += (_unpool,)
COMPUTE_FAMILIES += (_attention, _rms_norm)
COMPUTE_FAMILIES += (_special, _arith_ext)
COMPUTE_FAMILIES += (_complex, _lu, _householder)

__all__ = (["Primitive", "PrimitiveWithInfer", "prim_attr_register"] + list(_comm_all)
           + [name for family in COMPUTE_FAMILIES for name in family.__all__]
           + _neighbor.__all__ + _state.__all__ + _debug.__all__)
# Custom (a user's function, checked against its declared inference at each call) is
# checked on its own (tests/test_custom.py), not by the fixed-kernel contract tables
__all__ += _custom.__all__
