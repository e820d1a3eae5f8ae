"""Running a function eagerly and inside a compiled Cell (GRAPH_MODE), for tests that check
both paths give the reference values."""
import msops as ms
from msops import Tensor, nn


class Call(nn.Cell):
    """A Cell whose construct is `fn`."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def construct(self, *xs):
        return self.fn(*xs)


def compiled(fn, *tensors):
    """fn(*tensors) inside a compiled Cell; PYNATIVE_MODE restored afterwards."""
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        return Call(fn)(*tensors)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def eager_and_compiled(fn, *arrays):
    """(fn eagerly, fn compiled) on Tensors of `arrays` (numpy arrays or Tensors)."""
    tensors = [a if isinstance(a, Tensor) else Tensor(a) for a in arrays]
    return fn(*tensors), compiled(fn, *tensors)
