"""Dtypes, Tensor/Parameter and argument validation: the layer everything else stands on."""
from msops.common import dtype, validator
from msops.common.tensor import Parameter, Tensor

__all__ = ["dtype", "validator", "Tensor", "Parameter"]
