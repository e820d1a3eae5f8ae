"""Cells, as `mindspore.nn`: the Cell base, layers, losses, optimizers and training wrappers."""
from msops.nn.activation import GELU, FastGelu, LogSoftmax, Sigmoid, Softmax, Tanh
from msops.nn.cell import Cell
from msops.nn.embedding import Embedding
from msops.nn.normalization import LayerNorm
from msops.nn.initializer import initializer, set_seed
from msops.nn.containers import CellDict, CellList, SequentialCell
from msops.nn.layers import (BatchNorm1d, BatchNorm2d, Dense, Dropout, Flatten, Identity,
                             Linear, ReLU)
from msops.nn.losses import (CrossEntropyLoss, L1Loss, LossBase, MSELoss, NLLLoss,
                              SoftmaxCrossEntropyWithLogits)
from msops.nn.optim import SGD, Adam, AdamWeightDecay, Momentum, Optimizer
from msops.nn.metrics import MAE, MSE, Accuracy, Loss, Metric, get_metric_fn
from msops.nn.wrap import DistributedGradReducer, TrainOneStepCell, WithEvalCell, WithLossCell
from msops.nn.conv import Conv2d
from msops.nn.pooling import AvgPool2d, MaxPool2d
from msops.nn.prelu import PReLU
from msops.nn.learning_rate_schedule import (CosineDecayLR, ExponentialDecayLR, InverseDecayLR,
                                             LearningRateSchedule, NaturalExpDecayLR,
                                             PolynomialDecayLR, WarmUpLR)
from msops.nn.dynamic_lr import (cosine_decay_lr, exponential_decay_lr, inverse_decay_lr,
                                 natural_exp_decay_lr, piecewise_constant_lr,
                                 polynomial_decay_lr, warmup_lr)
from msops.nn.grad_accumulation import GradAccumulationCell
from msops.nn.pipeline_cell import PipelineCell, PipelineGradReducer
from msops.nn.micro_batches import MicroBatchInterleaved
from msops.nn.losses import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, HuberLoss,
                              KLDivLoss, SmoothL1Loss)
from msops.nn.normalization import GroupNorm
from msops.nn.conv import Conv1d, Conv2dTranspose
from msops.nn.activation import HSigmoid, HSwish, LeakyReLU, ReLU6, SiLU
from msops.nn.layers import get_activation
from msops.nn.grad_cells import ForwardValueAndGrad, Jvp, Vjp

__all__ = ["Cell", "Dense", "ReLU", "Flatten", "Dropout", "BatchNorm1d", "BatchNorm2d", "SequentialCell", "CellList", "CellDict", "Identity", "Linear",
           "LossBase", "SoftmaxCrossEntropyWithLogits", "MSELoss", "L1Loss", "CrossEntropyLoss",
           "initializer", "set_seed", "Optimizer", "SGD", "Momentum", "Adam", "AdamWeightDecay",
           "WithLossCell", "TrainOneStepCell", "DistributedGradReducer",
           "GELU", "FastGelu", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "Embedding",
           "LayerNorm"]
__all__ += ["WithEvalCell", "Metric", "Accuracy", "Loss", "MAE", "MSE", "get_metric_fn"]
__all__ += ["Conv2d", "MaxPool2d", "AvgPool2d", "PReLU"]
__all__ += ["LearningRateSchedule", "ExponentialDecayLR", "NaturalExpDecayLR", "InverseDecayLR",
            "CosineDecayLR", "PolynomialDecayLR", "WarmUpLR", "piecewise_constant_lr",
            "exponential_decay_lr", "natural_exp_decay_lr", "inverse_decay_lr",
            "cosine_decay_lr", "polynomial_decay_lr", "warmup_lr"]
__all__ += ["NLLLoss"]
__all__ += ["SmoothL1Loss", "HuberLoss", "BCEWithLogitsLoss", "BCELoss", "KLDivLoss", "GroupNorm",
            "Conv1d", "CosineEmbeddingLoss", "Conv2dTranspose"]
__all__ += ["GradAccumulationCell", "PipelineCell", "PipelineGradReducer",
            "MicroBatchInterleaved"]
__all__ += ["ReLU6", "HSwish", "HSigmoid", "SiLU", "LeakyReLU", "get_activation"]
from msops.nn.attention import MultiheadAttention
from msops.nn.transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer,
                                  TransformerEncoder, TransformerEncoderLayer)
__all__ += ["MultiheadAttention", "TransformerEncoderLayer", "TransformerDecoderLayer",
            "TransformerEncoder", "TransformerDecoder", "Transformer"]
from msops.nn.activation import (ELU, HShrink, Hardtanh, LogSigmoid,  # noqa: E402
                                 Mish, SeLU, Softsign, SoftShrink, Tanhshrink)
__all__ += ["ELU", "SeLU", "Softsign", "Mish", "SoftShrink", "HShrink", "LogSigmoid", "Hardtanh",
            "Tanhshrink"]
from msops.nn.rmsprop import Adagrad, RMSProp
from msops.nn.adamax import AdaMax
from msops.nn.lamb import Lamb
from msops.nn.lars import LARS
__all__ += ["RMSProp", "Adagrad", "AdaMax", "Lamb", "LARS"]
from msops.nn.classification_metrics import (F1, Fbeta, Precision, Recall,
                                              Top1CategoricalAccuracy, Top5CategoricalAccuracy,
                                              TopKCategoricalAccuracy)
__all__ += ["Precision", "Recall", "Fbeta", "F1", "TopKCategoricalAccuracy",
            "Top1CategoricalAccuracy", "Top5CategoricalAccuracy"]
from msops.nn.adadelta import Adadelta
from msops.nn.proximal import FTRL, ProximalAdagrad
from msops.nn.lazy_adam import LazyAdam
__all__ += ["Adadelta", "ProximalAdagrad", "FTRL", "LazyAdam"]
from msops.nn.upsample import Upsample  # noqa: E402
__all__ += ["Upsample"]
from msops.nn.utils import no_init_parameters  # noqa: E402
__all__ += ["no_init_parameters"]
from msops.nn.sync_batchnorm import SyncBatchNorm  # noqa: E402
__all__ += ["SyncBatchNorm"]
from msops.nn.normalization import BatchNorm3d  # noqa: E402
from msops.nn.instance_norm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: E402
__all__ += ["BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
from msops.nn.array_layers import (OneHot, PixelShuffle, PixelUnshuffle, Roll,  # noqa: E402
                                   Tril, Triu, Unflatten)
from msops.nn.dropout_layers import Dropout1d, Dropout2d, Dropout3d  # noqa: E402
from msops.nn.norm_layers import ClipByNorm, Norm  # noqa: E402
__all__ += ["Tril", "Triu", "OneHot", "Roll", "Unflatten", "Norm", "ClipByNorm",
            "PixelShuffle", "PixelUnshuffle", "Dropout1d", "Dropout2d", "Dropout3d"]
from msops.nn.diag_layers import MatrixDiag, MatrixDiagPart, MatrixSetDiag  # noqa: E402
__all__ += ["MatrixDiag", "MatrixDiagPart", "MatrixSetDiag"]
from msops.nn.math_layers import (DiGamma, IGamma, LBeta, LGamma, MatDet,  # noqa: E402
                                  MatInverse, MatMul, Moments, Range, ReduceLogSumExp)
__all__ += ["LGamma", "DiGamma", "IGamma", "LBeta", "MatDet", "MatInverse", "MatMul", "Moments",
            "Range", "ReduceLogSumExp"]
from msops.nn.padding import (ConstantPad1d, ConstantPad2d, ConstantPad3d, Pad,  # noqa: E402
                              ReflectionPad1d, ReflectionPad2d, ReflectionPad3d,
                              ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, ZeroPad2d)
__all__ += ["Pad", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
            "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
            "ReplicationPad2d", "ReplicationPad3d"]
from msops.nn.pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d,  # noqa: E402
                              AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d, MaxPool1d)
__all__ += ["AvgPool1d", "MaxPool1d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
            "AdaptiveMaxPool1d", "AdaptiveMaxPool2d"]
from msops.nn.conv import Conv1dTranspose, Conv3d, Conv3dTranspose  # noqa: E402
from msops.nn.pooling import AdaptiveAvgPool3d, AdaptiveMaxPool3d  # noqa: E402
from msops.nn.pooling_nd import *  # noqa: F401,F403,E402
from msops.nn.pooling_nd import __all__ as _pooling_nd_all  # noqa: E402
__all__ += ["Conv3d", "Conv3dTranspose", "Conv1dTranspose", "AdaptiveAvgPool3d",
            "AdaptiveMaxPool3d"] + list(_pooling_nd_all)
__all__ += ["Vjp", "Jvp", "ForwardValueAndGrad"]
from msops.nn.loss_scale import (DynamicLossScaleUpdateCell, FixedLossScaleUpdateCell,
                                 TrainOneStepWithLossScaleCell)
__all__ += ["TrainOneStepWithLossScaleCell", "DynamicLossScaleUpdateCell",
            "FixedLossScaleUpdateCell"]
from msops.nn.confusion_matrix import ConfusionMatrix
from msops.nn.perplexity import Perplexity
from msops.nn.roc import ROC, auc
from msops.nn.similarity_metrics import CosineSimilarity, Dice
from msops.nn.metrics import get_metrics, names
__all__ += ["ConfusionMatrix", "Perplexity", "ROC", "auc", "CosineSimilarity", "Dice",
            "get_metrics", "names"]
from msops.nn.margin_losses import *  # noqa: F401,F403
from msops.nn.margin_losses import __all__ as _margin_losses_all
__all__ += list(_margin_losses_all)
from msops.nn.segmentation_losses import *  # noqa: F401,F403
from msops.nn.segmentation_losses import __all__ as _segmentation_losses_all
__all__ += list(_segmentation_losses_all)
from msops.nn.rnn_cells import GRUCell, LSTMCell, RNNCell  # noqa: E402
from msops.nn.rnns import GRU, LSTM, RNN  # noqa: E402
__all__ += ["RNNCell", "LSTMCell", "GRUCell", "RNN", "LSTM", "GRU"]
from msops.nn.activation_ext import (CELU, GLU, LRN, RReLU, Softmax2d, Softmin,  # noqa: E402
                                    Threshold)
from msops.nn.array_layers import ChannelShuffle  # noqa: E402
from msops.nn.unfold import Unfold  # noqa: E402
from msops.nn.bidense import BiDense  # noqa: E402
from msops.nn.time_distributed import TimeDistributed  # noqa: E402
from msops.nn.combined import Conv2dBnAct, DenseBnAct  # noqa: E402
from msops.nn.image import CentralCrop, ImageGradients, MSSSIM, PSNR, SSIM  # noqa: E402
from msops.nn.embedding_lookup import EmbeddingLookup, MultiFieldEmbeddingLookup  # noqa: E402
__all__ += ["CELU", "GLU", "Softmin", "Softmax2d", "Threshold", "RReLU", "LRN",
            "ChannelShuffle", "Unfold", "BiDense", "TimeDistributed", "Conv2dBnAct",
            "DenseBnAct", "CentralCrop", "ImageGradients", "PSNR", "SSIM", "MSSSIM",
            "EmbeddingLookup", "MultiFieldEmbeddingLookup"]
# optimizers, losses and metrics of the training toolbox
from msops.nn.asgd import ASGD  # noqa: E402
from msops.nn.rprop import Rprop  # noqa: E402
from msops.nn.adafactor import AdaFactor  # noqa: E402
from msops.nn.ctc_loss import CTCLoss  # noqa: E402
from msops.nn.sampled_softmax_loss import SampledSoftmaxLoss  # noqa: E402
from msops.nn.metrics import rearrange_inputs  # noqa: E402
from msops.nn.bleu_score import BleuScore  # noqa: E402
from msops.nn.confusion_metrics import ConfusionMatrixMetric  # noqa: E402
from msops.nn.surface_distances import (HausdorffDistance, MeanSurfaceDistance,  # noqa: E402
                                        RootMeanSquareDistance)
from msops.nn.occlusion_sensitivity import OcclusionSensitivity  # noqa: E402
__all__ += ["ASGD", "Rprop", "AdaFactor", "CTCLoss", "SampledSoftmaxLoss", "rearrange_inputs",
            "BleuScore", "ConfusionMatrixMetric", "HausdorffDistance", "MeanSurfaceDistance",
            "RootMeanSquareDistance", "OcclusionSensitivity"]
