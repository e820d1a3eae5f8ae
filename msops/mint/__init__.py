"""`mindspore.mint` (MindSpore 2.5+): here only its torch-style `distributed` package."""
from msops.mint import distributed

__all__ = ["distributed"]
