"""`mindspore.nn.utils`: `no_init_parameters`."""
from __future__ import annotations

import contextlib
from typing import Iterator

__all__ = ["no_init_parameters"]


@contextlib.contextmanager
def no_init_parameters() -> Iterator[None]:
    """MindSpore: Parameters created inside are initialised later (at compile or when a
    checkpoint is loaded), so building a large network takes no memory for values about
    to be overwritten. msops initialises a Parameter when it is created (the values are
    the same initialiser's), so inside this block nothing changes; scripts written for
    MindSpore's deferred initialisation run as they are."""
    yield
