"""msops: MindSpore-style graph-mode operators with semi-auto-parallel sharding over MPI.

    import msops as ms
    from msops import ops, nn, Tensor, Parameter
"""
from msops.common.dtype import (bfloat16, bool_, complex64, complex128, dtype_to_nptype,
                                float16, float32, float64, int8, int16, int32, int64,
                                pytype_to_dtype, string, uint8, uint16, uint32, uint64)
from msops.common.initializer import set_seed
from msops.common.tensor import Parameter, ParameterTuple, Tensor, from_numpy, tensor
from msops.context import GRAPH_MODE, PYNATIVE_MODE, get_context, set_context
from msops.device import (DeviceInfo, get_current_device, set_deterministic,  # noqa: F401
                          set_device)
from msops.parallel.context import (ParallelMode, get_auto_parallel_context,
                                    reset_auto_parallel_context, set_auto_parallel_context)
from msops import communication, nn, ops, parallel  # noqa: E402
from msops.parallel import Layout  # noqa: E402  (MindSpore 2.3's mindspore.Layout)
from msops.autodiff import GradOperation, grad, value_and_grad  # noqa: E402
from msops.jit import JitConfig, jit  # noqa: E402
from msops.train import (load_checkpoint, load_distributed_checkpoint,  # noqa: E402
                         load_param_into_net, merge_sliced_parameter, save_checkpoint)
from msops.train import (build_searched_strategy, merge_pipeline_strategys,  # noqa: E402
                         rank_list_for_transform, transform_checkpoint_by_rank,
                         transform_checkpoints)

from msops import dataset  # noqa: E402
from msops.common.lazy_inline import lazy_inline  # noqa: E402
from msops.train import (MAE, MSE, Accuracy, Callback, CheckpointConfig,  # noqa: E402
                         EarlyStopping, Loss, LossMonitor, Metric, Model, ModelCheckpoint,
                         RunContext, TimeMonitor)
from msops.train import (F1, Fbeta, Precision, Recall,  # noqa: E402
                         Top1CategoricalAccuracy, Top5CategoricalAccuracy,
                         TopKCategoricalAccuracy)
from msops.train import (DynamicLossScaleManager, FixedLossScaleManager,  # noqa: E402
                         LossScaleManager)
from msops.train import (BackupAndRestore, History, LambdaCallback,  # noqa: E402
                         LearningRateScheduler, OnRequestExit, ReduceLROnPlateau)
from msops.train import (ROC, ConfusionMatrix, CosineSimilarity, Dice,  # noqa: E402
                         Perplexity, auc, names)
from msops.train import (BleuScore, ConfusionMatrixMetric, HausdorffDistance,  # noqa: E402
                         MeanSurfaceDistance, OcclusionSensitivity, RootMeanSquareDistance,
                         get_metric_fn, rearrange_inputs)
from msops import amp  # noqa: E402  (mindspore.amp: the loss-scale managers, all_finite)
from msops.train import build_train_network  # noqa: E402

ops.GradOperation = ops.composite.GradOperation = GradOperation  # ops sits below autodiff
ops.grad, ops.value_and_grad = grad, value_and_grad  # mindspore.ops's spellings too
from msops.derivatives import jacfwd, jacrev, jvp, vjp  # noqa: E402
ops.vjp, ops.jvp, ops.jacrev, ops.jacfwd = vjp, jvp, jacrev, jacfwd
from msops.vmap import vmap  # noqa: E402
ops.vmap = vmap  # mindspore.vmap and mindspore.ops.vmap

from msops.nn.shard_fn import shard  # noqa: E402
from msops.nn.recompute_fn import recompute  # noqa: E402

parallel.shard = shard  # mindspore.parallel.shard (2.5+); parallel sits below nn
# mindspore.parallel's checkpoint functions (2.5+) that live in train/, above parallel
(parallel.load_distributed_checkpoint, parallel.merge_sliced_parameter,
 parallel.transform_checkpoints, parallel.transform_checkpoint_by_rank,
 parallel.rank_list_for_transform) = (
    load_distributed_checkpoint, merge_sliced_parameter, transform_checkpoints,
    transform_checkpoint_by_rank, rank_list_for_transform)
from msops.parallel import parameter_broadcast  # noqa: E402  (also mindspore.parameter_broadcast)
from msops.train import (ckpt_to_safetensors, get_ckpt_path_with_strategy,  # noqa: E402
                         load_checkpoint_async, load_segmented_checkpoints,
                         safetensors_to_ckpt, unified_safetensors)
# mindspore.parallel's checkpoint functions of MindSpore 2.6+ (they live in train/)
from msops.train import (convert_checkpoint_by_rank, convert_checkpoints,  # noqa: E402
                         rank_list_for_convert)
(parallel.convert_checkpoints, parallel.convert_checkpoint_by_rank,
 parallel.rank_list_for_convert, parallel.load_segmented_checkpoints,
 parallel.unified_safetensors) = (
    convert_checkpoints, convert_checkpoint_by_rank, rank_list_for_convert,
    load_segmented_checkpoints, unified_safetensors)
del convert_checkpoints, convert_checkpoint_by_rank, rank_list_for_convert
from msops.train import DatasetHelper, connect_network_with_dataset  # noqa: E402
from msops.parallel import (get_algo_parameters, reset_algo_parameters,  # noqa: E402
                            set_algo_parameters)
from msops.ops.convert_func import is_tensor  # noqa: E402  (also mindspore.is_tensor)

from msops.common import dtype  # noqa: E402  (`ms.dtype.float32`, as mindspore.dtype)
from msops.common.initializer import get_seed  # noqa: E402
from msops import mint  # noqa: E402  (mindspore.mint: over nn, and its distributed)
from msops.ops import communication as _ops_communication  # noqa: E402  (mint layer)

for _name in _ops_communication.OPS_NAMES:     # mindspore.ops's communication functions
    setattr(ops, _name, getattr(_ops_communication, _name))
ops.__all__ += [n for n in _ops_communication.OPS_NAMES if n not in ops.__all__]
del _name
from msops.communication import comm_func  # noqa: E402,F401  (sits above communication)

__version__ = "0.1.0"
