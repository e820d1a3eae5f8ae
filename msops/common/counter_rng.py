"""Counter-based random numbers: the value at element i depends only on (seed, counter, i).

A SplitMix64 finaliser over the element's global flat index, offset by a key mixed from
the seed and the call's counter, so any slice of a tensor draws the values the whole
tensor would at the same positions (a sharded op can match the serial one).
"""
from __future__ import annotations

import numpy as np

__all__ = ["splitmix64", "uniform_at"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def splitmix64(z: np.ndarray) -> np.ndarray:
    """The SplitMix64 finaliser of uint64 values (wrapping arithmetic), element-wise."""
    z = np.asarray(z, np.uint64).copy()
    with np.errstate(over="ignore"):
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z


def uniform_at(seed: int, counter: int, index: np.ndarray) -> np.ndarray:
    """Uniform [0, 1) float64 values at the global flat positions `index` for (seed, counter)."""
    words = np.array([seed & (2**64 - 1), counter & (2**64 - 1)], np.uint64)
    with np.errstate(over="ignore"):
        key = splitmix64(splitmix64(words[:1])[0] ^ words[1:])[0]
        z = (np.asarray(index, np.uint64) + np.uint64(1)) * _GOLDEN + key
    return (splitmix64(z) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
