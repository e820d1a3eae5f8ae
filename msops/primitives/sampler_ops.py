"""Candidate sampling for sampled softmax (ops.uniform_candidate_sampler and
ops.log_uniform_candidate_sampler): `CandidateSampler(seed, seed2, ...)(true_classes)`.

TensorFlow's RangeSampler rule, which MindSpore's samplers follow: draw classes in
[0, range_max) one after another from the distribution (uniform, or log-uniform
P(k) = log((k + 2) / (k + 1)) / log(range_max + 1)), keeping a draw unless it repeats a kept
one (`unique`) or is one of the true classes (`remove_accidental_hits`), until num_sampled
are kept. Each expected count is p * num_sampled when every draw was kept, else the chance
a class shows up in the `tries` draws made, 1 - (1 - p) ** tries.

The draws are msops' counter-based stream (msops.primitives.random_ops): draw j of a call
is the uniform at flat position j of the call's counter and the key of (global seed, seed,
seed2), so a call is the same eagerly, compiled and on every rank. How many draws a call
makes depends on the values, so its outputs are never split (every rank samples alike).
Internal; the functional forms are the public face.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.counter_rng import uniform_at
from msops.common.initializer import next_draw
from msops.common.tensor import contiguous
from msops.primitives.primitive import prim_attr_register
from msops.primitives.random_ops import _RandomOp, random_key
from msops.primitives.rules import sharding_rule
from msops.primitives.sharding import DimSpec

__all__: list = []

#: uniforms drawn at a time while fewer than num_sampled are kept
_BLOCK = 256


class CandidateSampler(_RandomOp):
    """`CandidateSampler(seed=0, seed2=0, kind="uniform", num_true=1, num_sampled=1,
    unique=True, range_max=1, remove_accidental_hits=False)(true_classes)` ->
    (sampled_candidates (num_sampled,) in true_classes' dtype, true_expected_count
    (batch, num_true) float32, sampled_expected_count (num_sampled,) float32)."""

    shape_input = False
    const_inputs: tuple = ()

    @prim_attr_register
    def __init__(self, seed: int = 0, seed2: int = 0, kind: str = "uniform", num_true: int = 1,
                 num_sampled: int = 1, unique: bool = True, range_max: int = 1,
                 remove_accidental_hits: bool = False) -> None:
        _RandomOp.__init__(self, seed, seed2)
        validator.check_string("kind", kind, ("uniform", "log_uniform"), self.name)
        for arg, value in (("num_true", num_true), ("num_sampled", num_sampled),
                           ("range_max", range_max)):
            validator.check_positive_int(value, arg, self.name)
        validator.check_bool("unique", unique, self.name)
        validator.check_bool("remove_accidental_hits", remove_accidental_hits, self.name)
        if unique and num_sampled > range_max:
            raise ValueError(f"For '{self.name}', the 'num_sampled' should be at most "
                             f"'range_max' {range_max} when 'unique' is True, but got "
                             f"{num_sampled}.")

    def infer_shape(self, true_classes: list) -> tuple:
        if len(true_classes) != 2 or true_classes[1] != self.num_true:
            raise ValueError(f"For '{self.name}', the 'true_classes' should be (batch_size, "
                             f"num_true) = (batch_size, {self.num_true}), but got "
                             f"{list(true_classes)}.")
        return [self.num_sampled], list(true_classes), [self.num_sampled]

    def infer_dtype(self, true_classes: mstype.Type) -> tuple:
        validator.check_tensor_dtype_valid("true_classes", true_classes,
                                           (mstype.int32, mstype.int64), self.name)
        return true_classes, mstype.float32, mstype.float32

    def probability(self, k: np.ndarray) -> np.ndarray:
        """P(class k) of the sampling distribution, float64."""
        if self.kind == "uniform":
            return np.full(np.shape(k), 1.0 / self.range_max)
        k = np.asarray(k, np.float64)
        return (np.log(k + 2.0) - np.log(k + 1.0)) / np.log(self.range_max + 1.0)

    def classes(self, u: np.ndarray) -> np.ndarray:
        """The classes of uniform draws u (inverse CDFs, clamped into range)."""
        if self.kind == "uniform":
            k = np.floor(u * self.range_max)
        else:
            k = np.floor(np.exp(u * np.log(self.range_max + 1.0))) - 1.0
        return np.clip(k, 0, self.range_max - 1).astype(np.int64)

    def kernel(self, true_classes: np.ndarray) -> tuple:
        avoid = set(np.asarray(true_classes).ravel().tolist()) \
            if self.remove_accidental_hits else set()
        allowed = self.range_max - len({k for k in avoid if 0 <= k < self.range_max})
        if (self.unique and self.num_sampled > allowed) or allowed <= 0:
            raise ValueError(f"For '{self.name}', {allowed} classes of range_max "
                             f"{self.range_max} are left to sample once the true classes are "
                             f"removed, which cannot give {self.num_sampled} "
                             f"{'distinct ' if self.unique else ''}candidates.")
        key, counter = random_key(self.seed, self.seed2), next_draw()
        kept: list = []
        seen: set = set()
        tries = 0
        while len(kept) < self.num_sampled:
            block = self.classes(uniform_at(key, counter, np.arange(tries, tries + _BLOCK)))
            for k in block.tolist():
                tries += 1
                if k in avoid or (self.unique and k in seen):
                    continue
                kept.append(k)
                seen.add(k)
                if len(kept) == self.num_sampled:
                    break
        sampled = np.array(kept, np.int64)

        def expected(k: np.ndarray) -> np.ndarray:
            p = self.probability(k)
            if tries == self.num_sampled:
                return (p * self.num_sampled).astype(np.float32)
            return (-np.expm1(tries * np.log1p(-p))).astype(np.float32)
        return (contiguous(sampled.astype(true_classes.dtype)),
                contiguous(expected(true_classes)), contiguous(expected(sampled)))


@sharding_rule(CandidateSampler)
def candidate_sampler_spec(prim: CandidateSampler, ins: list, outs: list,
                           consts: dict) -> DimSpec:
    """Nothing splits: the draws kept depend on all earlier ones and on every true class."""
    why = "the sampled candidates depend on every true class and every earlier draw"
    return DimSpec((("b", "t"),), ((None,), ("b", "t"), (None,)),
                   unsplittable=(("b", why), ("t", why)))
