"""Training utilities above nn: checkpoint files (save, load, load into a network,
reshard), the high-level `Model`, its callbacks and (as `mindspore.train`) the metrics."""
from msops.train.merge import load_distributed_checkpoint, merge_sliced_parameter
from msops.train.serialization import load_checkpoint, load_param_into_net, save_checkpoint
from msops.train.transform import transform_checkpoints
from msops.train.transform_rank import rank_list_for_transform, transform_checkpoint_by_rank
from msops.parallel.strategy_ckpt import build_searched_strategy, merge_pipeline_strategys
from msops.nn.metrics import MAE, MSE, Accuracy, Loss, Metric, get_metric_fn
from msops.train import callback
from msops.train.callback import (Callback, CheckpointConfig, EarlyStopping, LossMonitor,
                                  ModelCheckpoint, RunContext, TimeMonitor)
from msops.train.model import Model

__all__ = ["save_checkpoint", "load_checkpoint", "load_param_into_net",
           "merge_sliced_parameter", "load_distributed_checkpoint", "transform_checkpoints",
           "rank_list_for_transform", "transform_checkpoint_by_rank", "build_searched_strategy",
           "merge_pipeline_strategys"]
__all__ += ["Model", "callback", "Callback", "RunContext", "LossMonitor", "TimeMonitor",
            "ModelCheckpoint", "CheckpointConfig", "EarlyStopping", "Metric", "Accuracy", "Loss", "MAE", "MSE",
            "get_metric_fn"]
from msops.nn.classification_metrics import (F1, Fbeta, Precision, Recall,  # noqa: E402
                                              Top1CategoricalAccuracy, Top5CategoricalAccuracy,
                                              TopKCategoricalAccuracy)
__all__ += ["Precision", "Recall", "Fbeta", "F1", "TopKCategoricalAccuracy",
            "Top1CategoricalAccuracy", "Top5CategoricalAccuracy"]
from msops.train.loss_scale_manager import (DynamicLossScaleManager,  # noqa: E402
                                            FixedLossScaleManager, LossScaleManager)
__all__ += ["LossScaleManager", "FixedLossScaleManager", "DynamicLossScaleManager"]
from msops.train.callback import (BackupAndRestore, History, LambdaCallback,  # noqa: E402
                                  LearningRateScheduler, OnRequestExit, ReduceLROnPlateau)
__all__ += ["History", "LambdaCallback", "LearningRateScheduler", "ReduceLROnPlateau",
            "OnRequestExit", "BackupAndRestore"]
from msops.nn import (ROC, ConfusionMatrix, CosineSimilarity, Dice,  # noqa: E402
                      Perplexity, auc, get_metrics, names)
__all__ += ["ConfusionMatrix", "Perplexity", "ROC", "auc", "CosineSimilarity", "Dice",
            "get_metrics", "names"]
from msops.train.amp import build_train_network  # noqa: E402
__all__ += ["build_train_network"]
from msops.train.format_convert import ckpt_to_safetensors, safetensors_to_ckpt  # noqa: E402
from msops.train.loading import load_checkpoint_async, load_segmented_checkpoints  # noqa: E402
from msops.train.ckpt_path import get_ckpt_path_with_strategy  # noqa: E402
from msops.train.checkpoint_convert import (convert_checkpoint_by_rank,  # noqa: E402
                                            convert_checkpoints, rank_list_for_convert)
from msops.train.unified import unified_safetensors  # noqa: E402
__all__ += ["ckpt_to_safetensors", "safetensors_to_ckpt", "load_checkpoint_async",
            "get_ckpt_path_with_strategy"]
from msops.train.dataset_helper import DatasetHelper, connect_network_with_dataset  # noqa: E402
__all__ += ["DatasetHelper", "connect_network_with_dataset"]
from msops.nn import (BleuScore, ConfusionMatrixMetric, HausdorffDistance,  # noqa: E402
                      MeanSurfaceDistance, OcclusionSensitivity, RootMeanSquareDistance,
                      rearrange_inputs)
__all__ += ["rearrange_inputs", "BleuScore", "ConfusionMatrixMetric", "HausdorffDistance",
            "MeanSurfaceDistance", "RootMeanSquareDistance", "OcclusionSensitivity"]
