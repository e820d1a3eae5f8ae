"""The parallel layer: tensor layouts and redistribution planning (semi-auto-parallel)."""
from msops.parallel.layout import TensorLayout
from msops.parallel.redistribution import explain, plan

__all__ = ["TensorLayout", "plan", "explain"]
