"""`mindspore.dataset.config`: the seed behind dataset shuffling."""
from __future__ import annotations

from msops.common import validator
from msops.common.initializer import get_seed as _global_seed

__all__ = ["set_seed", "get_seed"]

_seed: list = [None]        # None: follow msops.set_seed (the global seed)


def set_seed(seed: int) -> None:
    """Seed shuffling (a dataset built after this call draws from it)."""
    _seed[0] = validator.check_non_negative_int(seed, "seed", "set_seed")


def get_seed() -> int:
    """The dataset seed: `config.set_seed`'s value, else `msops.set_seed`'s (0 by default)."""
    return _global_seed() if _seed[0] is None else _seed[0]
