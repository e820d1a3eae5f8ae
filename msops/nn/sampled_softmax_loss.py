"""SampledSoftmaxLoss (as `mindspore.nn.SampledSoftmaxLoss`): the softmax cross entropy of
each example's true classes against a random sample of the other classes, for training
with very many classes without scoring all of them."""
from __future__ import annotations

from typing import Any, Sequence

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import check_tensor
from msops.nn.losses import LossBase
from msops.ops._tensor_args import check_float, const
from msops.primitives.random_ops import UniformRealOf

__all__ = ["SampledSoftmaxLoss"]


class SampledSoftmaxLoss(LossBase):
    """`SampledSoftmaxLoss(num_sampled, num_classes, num_true=1, sampled_values=None,
    remove_accidental_hits=True, seed=0, reduction='none')(weights, biases, labels,
    logits)`: weights (num_classes, dim), biases (num_classes,), labels (batch, num_true)
    int32/int64 class indices, logits (batch, dim).

    num_sampled distinct classes are drawn uniformly (a fresh sample each call, from the
    global seed, `set_seed`, and `seed`; eager and compiled draw the same), with
    `remove_accidental_hits` from the classes no example of the batch has as a true one.
    Each example's row is its true logits x.w[l] + b[l] then the sampled ones; the loss is
    -sum over its true classes of 1/num_true * log(softmax(row) + 1e-20) (MindSpore's
    formula: a loss is at most -log(1e-20)). The uniform sampler's expected counts are one
    value for every class, so subtracting their logs (MindSpore's subtract_log_q) leaves
    the softmax unchanged and is skipped; with `sampled_values` = (sampled (num_sampled,),
    true_expected_count (batch, num_true), sampled_expected_count (num_sampled,)) those
    classes and counts are used, the logs subtracted. When fewer classes than num_sampled
    are left after removing the true ones, the true classes drawn count as no class
    (their logits are left out of the softmax)."""

    def __init__(self, num_sampled: int, num_classes: int, num_true: int = 1,
                 sampled_values: Sequence[Any] | None = None,
                 remove_accidental_hits: bool = True, seed: int = 0,
                 reduction: str = "none") -> None:
        super().__init__(reduction)
        name = self.cls_name
        for arg, value in (("num_sampled", num_sampled), ("num_classes", num_classes),
                           ("num_true", num_true)):
            validator.check_positive_int(value, arg, name)
        validator.check_non_negative_int(seed, "seed", name)
        if num_sampled > num_classes or num_true > num_classes:
            raise ValueError(f"For '{name}', the 'num_sampled' and 'num_true' should be <= "
                             f"'num_classes' {num_classes}, but got {num_sampled} and "
                             f"{num_true}.")
        if sampled_values is not None:
            if not isinstance(sampled_values, (list, tuple)):
                raise TypeError(f"For '{name}', the 'sampled_values' should be a list or tuple, "
                                f"but got {type(sampled_values).__name__}.")
            if len(sampled_values) != 3:
                raise ValueError(f"For '{name}', the 'sampled_values' should hold 3 Tensors "
                                 f"(sampled, true_expected_count, sampled_expected_count), "
                                 f"but got {len(sampled_values)}.")
        self.num_sampled, self.num_classes, self.num_true = num_sampled, num_classes, num_true
        self.sampled_values = sampled_values
        self.remove_accidental_hits = validator.check_bool("remove_accidental_hits",
                                                           remove_accidental_hits, name)
        self.seed = seed
        self.draw = UniformRealOf(seed=seed, dtype=mstype.float64)
        self.top_k = ops.TopK()
        self.one_hot = ops.OneHot()
        self.gather = ops.Gather()
        self.matmul = ops.MatMul(transpose_b=True)

    def _sample(self, labels: Any, dtype: Any) -> tuple:
        """(sampled class ids (num_sampled,) int32, 0 for a usable sample and -inf for a
        true class drawn only because too few others remain)."""
        keys = self.draw((self.num_classes,))                      # uniform in [0, 1)
        if self.remove_accidental_hits:
            hot = self.one_hot(labels.reshape(-1), self.num_classes, const(1.0, mstype.float64),
                               const(0.0, mstype.float64))
            keys = keys + hot.max(0) * 2.0                         # true classes rank last
        smallest, sampled = self.top_k(-keys, self.num_sampled)
        zeros = ops.zeros((self.num_sampled,), dtype)
        return sampled, ops.select(-smallest < 1.0, zeros, zeros - float("inf"))

    def construct(self, weights: Any, biases: Any, labels: Any, logits: Any) -> Any:
        name = self.cls_name
        check_float(name, "weights", weights)
        check_float(name, "logits", logits)
        check_float(name, "biases", biases)
        check_tensor(name, "labels", labels)
        if labels.dtype not in (mstype.int32, mstype.int64):
            raise TypeError(f"For '{name}', the 'labels' should be int32 or int64 class "
                            f"indices, but got {labels.dtype}.")
        if len(weights.shape) != 2 or tuple(weights.shape[:1]) != (self.num_classes,) or \
                tuple(biases.shape) != (self.num_classes,) or len(logits.shape) != 2 or \
                logits.shape[1] != weights.shape[1]:
            raise ValueError(f"For '{name}', the 'weights' should be (num_classes={self.num_classes}"
                             f", dim), 'biases' (num_classes,) and 'logits' (batch, dim), but "
                             f"got {list(weights.shape)}, {list(biases.shape)} and "
                             f"{list(logits.shape)}.")
        dtype = logits.dtype
        labels = ops.cast(labels, mstype.int32).reshape(-1, self.num_true)
        if labels.shape[0] != logits.shape[0]:
            raise ValueError(f"For '{name}', the 'labels' should hold {self.num_true} classes "
                             f"for each of the {logits.shape[0]} examples, but got shape "
                             f"{list(labels.shape)}.")
        if self.sampled_values is None:
            sampled, dropped = self._sample(labels, dtype)
            true_shift, sampled_shift = None, dropped
        else:
            sampled, true_count, sampled_count = self.sampled_values
            sampled = ops.cast(sampled, mstype.int32)
            true_shift = -ops.log(ops.cast(true_count, dtype))
            sampled_shift = -ops.log(ops.cast(sampled_count, dtype))
        true_w = self.gather(weights, labels, 0)                    # (batch, num_true, dim)
        true_logits = (true_w * logits.expand_dims(1)).sum(-1) + self.gather(biases, labels, 0)
        sampled_logits = self.matmul(logits, self.gather(weights, sampled, 0)) + \
            self.gather(biases, sampled, 0) + sampled_shift
        if true_shift is not None:
            true_logits = true_logits + true_shift
        row = ops.concat((true_logits, sampled_logits), 1)
        row = row - ops.stop_gradient(row.max(1, keepdims=True))
        exp = ops.exp(row)
        pred = exp / exp.sum(1, keepdims=True)
        picked = ops.log(pred[:, :self.num_true] + 1e-20).sum(1)
        return self.get_loss(-picked / self.num_true)
