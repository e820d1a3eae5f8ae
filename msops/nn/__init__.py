"""Cells, as `mindspore.nn`: the Cell base, layers, losses, optimizers and training wrappers."""
from msops.nn.cell import Cell
from msops.nn.initializer import initializer, set_seed
from msops.nn.layers import BatchNorm1d, Dense, Dropout, Flatten, ReLU, SequentialCell
from msops.nn.losses import (CrossEntropyLoss, L1Loss, LossBase, MSELoss,
                              SoftmaxCrossEntropyWithLogits)
from msops.nn.optim import SGD, Adam, AdamWeightDecay, Momentum, Optimizer
from msops.nn.metrics import MAE, MSE, Accuracy, Loss, Metric, get_metric_fn
from msops.nn.wrap import DistributedGradReducer, TrainOneStepCell, WithEvalCell, WithLossCell

__all__ = ["Cell", "Dense", "ReLU", "Flatten", "Dropout", "BatchNorm1d", "SequentialCell",
           "LossBase", "SoftmaxCrossEntropyWithLogits", "MSELoss", "L1Loss", "CrossEntropyLoss",
           "initializer", "set_seed", "Optimizer", "SGD", "Momentum", "Adam", "AdamWeightDecay",
           "WithLossCell", "TrainOneStepCell", "DistributedGradReducer"]
__all__ += ["WithEvalCell", "Metric", "Accuracy", "Loss", "MAE", "MSE", "get_metric_fn"]
