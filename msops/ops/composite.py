"""`mindspore.ops.composite` (imported as `C` by MindSpore's training code): GradOperation.
It lives in the autodiff layer above msops.ops, so the package (msops/__init__.py) puts
it here, as it puts `ops.GradOperation`."""
from typing import Any

__all__ = ["GradOperation"]

GradOperation: Any          # msops.autodiff.GradOperation, set by the package
