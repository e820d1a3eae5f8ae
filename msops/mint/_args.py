"""Argument checks shared by the mint adapters: errors name `mint.<function>`, the argument,
what was expected and what was got, before a wrapped op sees the value."""
from __future__ import annotations

from typing import Any

from msops.common.tensor import Tensor


def check_tensor(name: str, arg: str, value: Any) -> Tensor:
    """`value` itself when it is a Tensor (or a traced one), else a TypeError."""
    if not isinstance(value, Tensor):
        raise TypeError(f"For 'mint.{name}', the '{arg}' should be a Tensor, but got "
                        f"{type(value).__name__}.")
    return value


def check_dim(name: str, dim: Any, ndim: int, arg: str = "dim") -> int:
    """`dim` (an int in [-ndim, ndim - 1]; a 0-d tensor takes -1 and 0) made non-negative."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"For 'mint.{name}', the '{arg}' should be an int, but got "
                        f"{type(dim).__name__}.")
    rank = max(ndim, 1)
    if not -rank <= dim < rank:
        raise ValueError(f"For 'mint.{name}', the '{arg}' should be in [{-rank}, {rank - 1}], "
                         f"but got {dim}.")
    return dim % rank


def check_no_generator(name: str, generator: Any) -> None:
    """msops draws from its seeded counter RNG (ms.set_seed); a torch-style Generator
    object has no counterpart, so only None is accepted."""
    if generator is not None:
        raise TypeError(f"For 'mint.{name}', the 'generator' should be None (msops draws from "
                        f"the global seed, ms.set_seed), but got {type(generator).__name__}.")
