"""`mindspore.mint` (MindSpore 2.3+): PyTorch-style functions (`dim`, `keepdim`, `input`,
`other`) over msops.ops, and the packages `nn` (layers over msops.nn, `nn.functional`),
`optim` (AdamW), `linalg` and `distributed` (torch.distributed's API over MPI).
`nn` and `optim` are built on msops.nn (a layer above this one): they are imported when
first used (`mint.nn.Linear`), so importing mint (the parallel layer's collectives do)
never imports msops.nn."""
import importlib
from typing import Any

from msops.mint import distributed, linalg
from msops.mint.creation import *  # noqa: F401,F403
from msops.mint.creation import __all__ as _creation_all
from msops.mint.indexing import *  # noqa: F401,F403
from msops.mint.indexing import __all__ as _indexing_all
from msops.mint.pointwise import *  # noqa: F401,F403
from msops.mint.pointwise import __all__ as _pointwise_all
from msops.mint.reduction import *  # noqa: F401,F403
from msops.mint.reduction import __all__ as _reduction_all
from msops.mint.shape import *  # noqa: F401,F403
from msops.mint.shape import __all__ as _shape_all

__all__ = ["distributed", "linalg", "nn", "optim"] + list(_pointwise_all) + \
    list(_reduction_all) + list(_creation_all) + list(_shape_all) + list(_indexing_all)


def __getattr__(name: str) -> Any:
    """`mint.nn` and `mint.optim`, imported on first use (PEP 562)."""
    if name in ("nn", "optim"):
        return importlib.import_module(f"msops.mint.{name}")
    raise AttributeError(f"module 'msops.mint' has no attribute '{name}'")
