"""`mindspore.mint.nn`: PyTorch-style layers over msops.nn (`layers`) and the functional API
(`functional`)."""
from msops.mint.nn import functional
from msops.mint.nn.layers import *  # noqa: F401,F403
from msops.mint.nn.layers import __all__ as _layers_all

__all__ = ["functional"] + list(_layers_all)
