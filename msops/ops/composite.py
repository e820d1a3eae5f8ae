"""`mindspore.ops.composite` (imported as `C` by MindSpore's training code): GradOperation,
from the autodiff layer (above msops.ops, so read when first asked for)."""
from typing import Any

__all__ = ["GradOperation"]


def __getattr__(name: str) -> Any:
    if name == "GradOperation":
        from msops.autodiff import GradOperation
        return GradOperation
    raise AttributeError(f"module 'msops.ops.composite' has no attribute '{name}'")
