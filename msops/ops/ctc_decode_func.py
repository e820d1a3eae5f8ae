"""`ops.ctc_greedy_decoder`: the best path of CTC logits, as `mindspore.ops` (TensorFlow's
definition). Its outputs' shapes depend on the decoded values, so, like ops.nonzero, it
reads the logits at once: in PYNATIVE mode, or in a traced construct when they are known
then (else a ValueError). The outputs pass no gradient (MindSpore's op has none either)."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor, check_tensor
from msops.ops.value_shape_func import _values

__all__ = ["ctc_greedy_decoder"]


def ctc_greedy_decoder(inputs: Any, sequence_length: Any, merge_repeated: bool = True) -> tuple:
    """Greedy CTC decoding of inputs (max_time, batch, num_classes) (float32/float64; class
    num_classes - 1 is the blank) over the first sequence_length[b] (int32, <= max_time)
    steps of each batch entry: each step's most likely class (the first among equals),
    repeats merged when `merge_repeated`, blanks dropped. Returns (decoded_indices
    (total, 2) int64 of (batch, position), decoded_values (total,) int64, decoded_shape
    (batch, max decoded length) int64, log_probability (batch, 1): minus the sum of each
    step's largest logit, in inputs' dtype)."""
    name = "ctc_greedy_decoder"
    check_tensor(name, "inputs", inputs)
    check_tensor(name, "sequence_length", sequence_length)
    validator.check_bool("merge_repeated", merge_repeated, name)
    validator.check_tensor_dtype_valid("inputs", inputs.dtype, (mstype.float32, mstype.float64),
                                       name)
    validator.check_tensor_dtype_valid("sequence_length", sequence_length.dtype,
                                       (mstype.int32,), name)
    if len(inputs.shape) != 3 or tuple(sequence_length.shape) != (inputs.shape[1],):
        raise ValueError(f"For '{name}', the 'inputs' should be 3-D (max_time, batch_size, "
                         f"num_classes) and 'sequence_length' (batch_size,), but got shapes "
                         f"{list(inputs.shape)} and {list(sequence_length.shape)}.")
    logits = _values(name, "inputs", inputs)
    lengths = _values(name, "sequence_length", sequence_length)
    max_time, batch, classes = logits.shape
    if ((lengths < 0) | (lengths > max_time)).any():
        raise ValueError(f"For '{name}', every 'sequence_length' should be in [0, max_time = "
                         f"{max_time}], but got {lengths.tolist()}.")
    blank = classes - 1
    best = logits.argmax(-1)                                   # (max_time, batch)
    steps = np.arange(max_time)[:, None] < lengths[None, :]
    log_probability = -np.where(steps, logits.max(-1), 0).sum(0, keepdims=True).T
    decoded = []
    for b in range(batch):
        path = best[:lengths[b], b]
        keep = path != blank
        if merge_repeated and len(path):
            keep &= np.concatenate([[True], path[1:] != path[:-1]])
        decoded.append(path[keep])
    indices = np.array([(b, i) for b, seq in enumerate(decoded) for i in range(len(seq))],
                       np.int64).reshape(-1, 2)
    values = np.concatenate(decoded).astype(np.int64) if decoded else np.zeros(0, np.int64)
    shape = np.array([batch, max((len(d) for d in decoded), default=0)], np.int64)
    return (Tensor(indices), Tensor(values), Tensor(shape),
            Tensor(log_probability.astype(logits.dtype)))
