"""load_checkpoint_async (train.serialization) and load_segmented_checkpoints
(parallel.checkpoint_transform), with MindSpore's load arguments: `filter_prefix`,
`specify_prefix` (deprecated there, still honoured: either one replaces `choice_func`),
`dec_key` / `dec_mode` (encryption, which msops does not have: a ValueError).

The async load runs load_checkpoint on one worker thread (the reading and the checksums
release the GIL, so the caller's work goes on meanwhile) and returns its Future.
"""
from __future__ import annotations

import glob
import os
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Sequence

import numpy as np

from msops.common.tensor import Parameter
from msops.nn.cell import Cell
from msops.train.serialization import (checkpoint_parameters, load_checkpoint,
                                       load_param_into_net)

__all__ = ["load_checkpoint_async", "load_segmented_checkpoints", "prefix_choice"]

Choice = Callable[[str], bool]


def _prefixes(api: str, arg: str, value: Any) -> tuple[str, ...]:
    items = (value,) if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not items or \
            not all(isinstance(p, str) and p for p in items):
        raise TypeError(f"For '{api}', the '{arg}' should be a non-empty str or a list or "
                        f"tuple of them, but got {value!r:.80}.")
    return tuple(items)


def prefix_choice(api: str, filter_prefix: str | Sequence[str] | None,
                  specify_prefix: str | Sequence[str] | None,
                  choice_func: Choice | None, dec_key: Any, dec_mode: str) -> Choice | None:
    """The name filter MindSpore's load arguments make: with `specify_prefix` names must
    start with one of them, with `filter_prefix` must not (either replaces `choice_func`)."""
    if dec_key is not None:
        raise ValueError(f"For '{api}', encrypted checkpoints are not supported by msops, but "
                         f"got a 'dec_key' ({dec_mode}).")
    if choice_func is not None and not callable(choice_func):
        raise TypeError(f"For '{api}', the 'choice_func' should be a function of the "
                        f"parameter name, but got {type(choice_func).__name__}.")
    if filter_prefix is None and specify_prefix is None:
        return choice_func
    keep = _prefixes(api, "specify_prefix", specify_prefix) if specify_prefix is not None \
        else None
    drop = _prefixes(api, "filter_prefix", filter_prefix) if filter_prefix is not None \
        else ()
    return lambda name: (keep is None or name.startswith(keep)) and not name.startswith(drop)


def load_checkpoint_async(ckpt_file_name: str, net: Cell | None = None,
                          strict_load: bool = False,
                          filter_prefix: str | Sequence[str] | None = None,
                          dec_key: Any = None, dec_mode: str = "AES-GCM",
                          specify_prefix: str | Sequence[str] | None = None,
                          choice_func: Choice | None = None) -> Future:
    """Start loading `ckpt_file_name` (.ckpt or .safetensors) on a worker thread; the
    returned Future's `result()` is what load_checkpoint returns (name -> Parameter, after
    loading them into `net` when given) or raises what it raises."""
    api = "load_checkpoint_async"
    if not isinstance(ckpt_file_name, str) or not ckpt_file_name.endswith(
            (".ckpt", ".safetensors")):
        raise ValueError(f"For '{api}', the 'ckpt_file_name' should be a .ckpt or "
                         f".safetensors file name, but got {ckpt_file_name!r}.")
    if not os.path.isfile(ckpt_file_name):
        raise FileNotFoundError(f"For '{api}', the checkpoint file '{ckpt_file_name}' does "
                                f"not exist.")
    choice = prefix_choice(api, filter_prefix, specify_prefix, choice_func, dec_key, dec_mode)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="msops-load")
    future = pool.submit(load_checkpoint, ckpt_file_name, net, strict_load, choice)
    pool.shutdown(wait=False)                  # the thread ends when the load has
    return future


def load_segmented_checkpoints(ckpt_file_dir: str, net: Cell | None = None,
                               strict_load: bool = False,
                               filter_prefix: str | Sequence[str] | None = None,
                               dec_key: Any = None, dec_mode: str = "AES-GCM",
                               specify_prefix: str | Sequence[str] | None = None,
                               choice_func: Choice | None = None) -> dict[str, Parameter]:
    """name -> Parameter of every `.ckpt` file in the folder `ckpt_file_dir` (a checkpoint
    saved in segments, each file some of the parameters), each file's checksums checked;
    loaded into `net` when given. A name in two files with different values, or no
    parameter loaded at all, is a ValueError."""
    api = "load_segmented_checkpoints"
    if not isinstance(ckpt_file_dir, str):
        raise TypeError(f"For '{api}', the 'ckpt_file_dir' should be a str, but got "
                        f"{type(ckpt_file_dir).__name__}.")
    if not os.path.isdir(ckpt_file_dir):
        raise ValueError(f"For '{api}', the 'ckpt_file_dir' should be an existing folder, "
                         f"but got '{ckpt_file_dir}'.")
    choice = prefix_choice(api, filter_prefix, specify_prefix, choice_func, dec_key, dec_mode)
    files = sorted(glob.glob(os.path.join(glob.escape(ckpt_file_dir), "*.ckpt")))
    out: dict[str, Parameter] = {}
    origin: dict[str, str] = {}
    for path in files:
        for name, param in checkpoint_parameters(path, choice, "ckpt", api).items():
            if name in out and not (out[name].shape == param.shape and np.array_equal(
                    out[name].asnumpy(), param.asnumpy(), equal_nan=True)):
                raise ValueError(f"For '{api}', the parameter '{name}' should be in one "
                                 f"segment, but '{origin[name]}' and '{path}' hold different "
                                 f"values of it.")
            out[name], origin[name] = param, path
    if not out:
        why = f"its {len(files)} .ckpt files hold none that the filters keep" if files \
            else "it holds no .ckpt file"
        raise ValueError(f"For '{api}', no parameter was loaded from '{ckpt_file_dir}': "
                         f"{why}.")
    if net is not None:
        load_param_into_net(net, out, strict_load=strict_load)
    return out
