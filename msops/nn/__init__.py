"""Cells, as `mindspore.nn`: the Cell base, layers and losses."""
from msops.nn.cell import Cell
from msops.nn.initializer import initializer, set_seed
from msops.nn.layers import BatchNorm1d, Dense, ReLU, SequentialCell
from msops.nn.losses import LossBase, SoftmaxCrossEntropyWithLogits

__all__ = ["Cell", "Dense", "ReLU", "BatchNorm1d", "SequentialCell", "LossBase",
           "SoftmaxCrossEntropyWithLogits", "initializer", "set_seed"]
