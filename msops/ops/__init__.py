"""The public op namespace, as `mindspore.ops`: every primitive class and ReduceOp, and
functional forms (`stop_gradient`). `GradOperation` is attached by the package (msops/
__init__.py): it lives in the autodiff layer above this one."""
from typing import Any

from msops.primitives import *  # noqa: F401,F403
from msops.primitives import StopGradient
from msops.primitives import __all__ as _prim_all
from msops.ops.functional import *  # noqa: F401,F403
from msops.ops.functional import __all__ as _functional_all
from msops.ops.math_func import *  # noqa: F401,F403
from msops.ops.math_func import __all__ as _math_func_all
from msops.ops.array_func import *  # noqa: F401,F403
from msops.ops.array_func import __all__ as _array_func_all
from msops.ops.order_func import *  # noqa: F401,F403
from msops.ops.order_func import __all__ as _order_func_all
from msops.ops.clip_func import *  # noqa: F401,F403
from msops.ops.clip_func import __all__ as _clip_func_all
from msops.ops.value_func import *  # noqa: F401,F403
from msops.ops.value_func import __all__ as _value_func_all
from msops.ops.elementwise_func import *  # noqa: F401,F403
from msops.ops.elementwise_func import __all__ as _elementwise_func_all
from msops.ops.random_func import *  # noqa: F401,F403
from msops.ops.random_func import __all__ as _random_func_all
from msops.ops.creation_func import *  # noqa: F401,F403
from msops.ops.creation_func import __all__ as _creation_func_all
from msops.ops.mask_func import *  # noqa: F401,F403
from msops.ops.mask_func import __all__ as _mask_func_all
from msops.ops.slice_func import *  # noqa: F401,F403
from msops.ops.slice_func import __all__ as _slice_func_all
from msops.ops.pad_func import *  # noqa: F401,F403
from msops.ops.pad_func import __all__ as _pad_func_all
from msops.ops.norm_func import *  # noqa: F401,F403
from msops.ops.norm_func import __all__ as _norm_func_all
from msops.ops.einsum_func import *  # noqa: F401,F403
from msops.ops.einsum_func import __all__ as _einsum_func_all
from msops.ops.loss_func import *  # noqa: F401,F403
from msops.ops.loss_func import __all__ as _loss_func_all
from msops.ops.class_loss_func import *  # noqa: F401,F403
from msops.ops.class_loss_func import __all__ as _class_loss_func_all
from msops.ops.nn_func import *  # noqa: F401,F403
from msops.ops.nn_func import __all__ as _nn_func_all
from msops.ops.matrix_func import *  # noqa: F401,F403
from msops.ops.matrix_func import __all__ as _matrix_func_all
from msops.ops.resize_func import *  # noqa: F401,F403
from msops.ops.resize_func import __all__ as _resize_func_all
from msops.ops.value_shape_func import *  # noqa: F401,F403
from msops.ops.value_shape_func import __all__ as _value_shape_func_all
from msops.ops.reshard_func import *  # noqa: F401,F403
from msops.ops.reshard_func import __all__ as _reshard_func_all
from msops.ops.channel_func import *  # noqa: F401,F403
from msops.ops.channel_func import __all__ as _channel_func_all
from msops.ops.pool_func import *  # noqa: F401,F403
from msops.ops.pool_func import __all__ as _pool_func_all
from msops.ops.conv_func import *  # noqa: F401,F403
from msops.ops.conv_func import __all__ as _conv_func_all
from msops.ops.pool_nd_func import *  # noqa: F401,F403
from msops.ops.pool_nd_func import __all__ as _pool_nd_func_all
from msops.ops.stats_func import *  # noqa: F401,F403
from msops.ops.stats_func import __all__ as _stats_func_all
from msops.ops.pointwise_func import *  # noqa: F401,F403
from msops.ops.pointwise_func import __all__ as _pointwise_func_all
from msops.ops.shape_func import *  # noqa: F401,F403
from msops.ops.shape_func import __all__ as _shape_func_all
from msops.ops.scatter_func import *  # noqa: F401,F403
from msops.ops.scatter_func import __all__ as _scatter_func_all
from msops.ops.view_func import *  # noqa: F401,F403
from msops.ops.view_func import __all__ as _view_func_all
from msops.ops.diag_func import *  # noqa: F401,F403
from msops.ops.diag_func import __all__ as _diag_func_all
from msops.ops.spatial_func import *  # noqa: F401,F403
from msops.ops.spatial_func import __all__ as _spatial_func_all
from msops.ops.convert_func import *  # noqa: F401,F403
from msops.ops.convert_func import __all__ as _convert_func_all
from msops.ops.margin_loss_func import *  # noqa: F401,F403
from msops.ops.margin_loss_func import __all__ as _margin_loss_func_all
from msops.ops.linalg_func import *  # noqa: F401,F403
from msops.ops.linalg_func import __all__ as _linalg_func_all
from msops.ops.products_func import *  # noqa: F401,F403
from msops.ops.products_func import __all__ as _products_func_all
from msops.ops.fft_func import *  # noqa: F401,F403
from msops.ops.fft_func import __all__ as _fft_func_all
from msops.ops.fused_comm_func import *  # noqa: F401,F403
from msops.ops.fused_comm_func import __all__ as _fused_comm_func_all
from msops.ops.moe_func import *  # noqa: F401,F403
from msops.ops.moe_func import __all__ as _moe_func_all
from msops.ops.activation_func import *  # noqa: F401,F403
from msops.ops.activation_func import __all__ as _activation_func_all
from msops.ops.patch_func import *  # noqa: F401,F403
from msops.ops.patch_func import __all__ as _patch_func_all
from msops.ops.attention_func import *  # noqa: F401,F403
from msops.ops.attention_func import __all__ as _attention_func_all
from msops.ops.grid_sample_func import *  # noqa: F401,F403
from msops.ops.grid_sample_func import __all__ as _grid_sample_func_all
from msops.ops.conv_pool2d_func import *  # noqa: F401,F403
from msops.ops.conv_pool2d_func import __all__ as _conv_pool2d_func_all
from msops.ops.norm_embed_func import *  # noqa: F401,F403
from msops.ops.norm_embed_func import __all__ as _norm_embed_func_all
from msops.ops.nn_misc_func import *  # noqa: F401,F403
from msops.ops.nn_misc_func import __all__ as _nn_misc_func_all
from msops.ops.distribution_func import *  # noqa: F401,F403
from msops.ops.distribution_func import __all__ as _distribution_func_all
from msops.ops.bbox_func import *  # noqa: F401,F403
from msops.ops.bbox_func import __all__ as _bbox_func_all
from msops.ops.ctc_decode_func import *  # noqa: F401,F403
from msops.ops.ctc_decode_func import __all__ as _ctc_decode_func_all
from msops.ops.fractional_pool_func import *  # noqa: F401,F403
from msops.ops.fractional_pool_func import __all__ as _fractional_pool_func_all
from msops.ops.special_func import *  # noqa: F401,F403
from msops.ops.special_func import __all__ as _special_func_all
from msops.ops.arith_ext_func import *  # noqa: F401,F403
from msops.ops.arith_ext_func import __all__ as _arith_ext_func_all
from msops.ops.sequence_func import *  # noqa: F401,F403
from msops.ops.sequence_func import __all__ as _sequence_func_all
from msops.ops.order_stats_func import *  # noqa: F401,F403
from msops.ops.order_stats_func import __all__ as _order_stats_func_all
from msops.ops.vector_func import *  # noqa: F401,F403
from msops.ops.vector_func import __all__ as _vector_func_all
from msops.ops.window_func import *  # noqa: F401,F403
from msops.ops.window_func import __all__ as _window_func_all
from msops.ops.box_func import *  # noqa: F401,F403
from msops.ops.box_func import __all__ as _box_func_all
from msops.ops import composite, operations  # noqa: F401  (MindSpore's C and P modules)

__all__ = list(_prim_all) + list(_functional_all) + list(_math_func_all) + \
    list(_array_func_all) + list(_clip_func_all) + list(_value_func_all) + \
    list(_order_func_all) + list(_elementwise_func_all) + list(_random_func_all)
__all__ += list(_creation_func_all) + list(_mask_func_all) + list(_slice_func_all) + \
    list(_pad_func_all) + list(_norm_func_all) + list(_einsum_func_all)
__all__ += list(_loss_func_all) + list(_class_loss_func_all) + list(_nn_func_all) + \
    list(_matrix_func_all) + list(_resize_func_all) + list(_value_shape_func_all)
__all__ += list(_reshard_func_all)
__all__ += list(_channel_func_all) + list(_pool_func_all)
__all__ += list(_conv_func_all) + list(_pool_nd_func_all)
__all__ += list(_stats_func_all) + list(_pointwise_func_all) + list(_shape_func_all)
__all__ += list(_scatter_func_all) + list(_margin_loss_func_all)
__all__ += list(_view_func_all) + list(_diag_func_all) + list(_spatial_func_all)
__all__ += list(_convert_func_all)
__all__ += list(_linalg_func_all) + list(_products_func_all)
__all__ += list(_fft_func_all)
__all__ += list(_fused_comm_func_all)
__all__ += list(_moe_func_all)
__all__ += list(_activation_func_all) + list(_patch_func_all)
from msops.ops.ctc_func import *  # noqa: E402,F401,F403
from msops.ops.ctc_func import __all__ as _ctc_func_all  # noqa: E402
__all__ += list(_ctc_func_all)
__all__ += list(_attention_func_all)
__all__ += list(_grid_sample_func_all) + list(_conv_pool2d_func_all)
__all__ += list(_norm_embed_func_all) + list(_nn_misc_func_all)
__all__ += list(_distribution_func_all) + list(_bbox_func_all) + list(_ctc_decode_func_all)
__all__ += list(_fractional_pool_func_all)
__all__ += list(_special_func_all) + list(_arith_ext_func_all)
__all__ += list(_sequence_func_all) + list(_order_stats_func_all)
__all__ += list(_vector_func_all) + list(_window_func_all) + list(_box_func_all)


def stop_gradient(x: Any) -> Any:
    """x itself, through which no gradient flows (`StopGradient()(x)`)."""
    return StopGradient()(x)


from msops.ops import tensor_methods as _tensor_methods  # noqa: E402,F401  (attaches x.view(), ...)
from msops.ops import tensor_hooks as _tensor_hooks  # noqa: E402,F401  (x.register_hook)
