"""ModelCheckpoint + CheckpointConfig: save the network every N steps (or seconds) with
`msops.save_checkpoint`, keeping the newest `keep_checkpoint_max` files."""
from __future__ import annotations

import os
import time
from typing import Any

from msops.common import validator
from msops.communication import get_rank, is_initialized
from msops.parallel.context import is_parallel
from msops.primitives.comm_ops import Barrier
from msops.train.callback._callback import Callback, RunContext
from msops.train.serialization import save_checkpoint

__all__ = ["CheckpointConfig", "ModelCheckpoint"]

_EXT = {"safetensors": ".safetensors", "ckpt": ".ckpt"}


class CheckpointConfig:
    """When and how ModelCheckpoint saves: every `save_checkpoint_steps` steps (or, when
    `save_checkpoint_seconds` > 0, that often), keeping at most `keep_checkpoint_max`
    files (plus one every `keep_checkpoint_per_n_minutes` when > 0). `integrated_save`,
    `append_info` (a list of 'epoch_num' / 'step_num' or dicts) and `format` go to
    save_checkpoint (msops's default format is safetensors). `saved_network` saves that
    Cell instead of the trained one. Encryption and async saving are not supported."""

    def __init__(self, save_checkpoint_steps: int = 1, save_checkpoint_seconds: int = 0,
                 keep_checkpoint_max: int = 5, keep_checkpoint_per_n_minutes: int = 0,
                 integrated_save: bool = True, async_save: bool = False,
                 saved_network: Any = None, append_info: list | None = None,
                 enc_key: Any = None, enc_mode: str = "AES-GCM",
                 exception_save: bool = False, format: str = "safetensors",
                 **kwargs: Any) -> None:
        api = "CheckpointConfig"
        self.save_checkpoint_steps = validator.check_non_negative_int(
            save_checkpoint_steps, "save_checkpoint_steps", api)
        self.save_checkpoint_seconds = validator.check_non_negative_int(
            save_checkpoint_seconds, "save_checkpoint_seconds", api)
        if not self.save_checkpoint_steps and not self.save_checkpoint_seconds:
            raise ValueError(f"For '{api}', one of 'save_checkpoint_steps' and "
                             f"'save_checkpoint_seconds' should be > 0, but both are 0.")
        self.keep_checkpoint_max = validator.check_non_negative_int(
            keep_checkpoint_max, "keep_checkpoint_max", api)
        self.keep_checkpoint_per_n_minutes = validator.check_non_negative_int(
            keep_checkpoint_per_n_minutes, "keep_checkpoint_per_n_minutes", api)
        self.integrated_save = validator.check_bool("integrated_save", integrated_save, api)
        for key, value, off in (("async_save", async_save, False), ("enc_key", enc_key, None),
                                ("exception_save", exception_save, False)):
            if value != off:
                raise ValueError(f"For '{api}', the '{key}' is not supported by msops (leave "
                                 f"it {off}), but got {value!r}.")
        if kwargs:
            raise TypeError(f"For '{api}', got an unexpected argument '{sorted(kwargs)[0]}'.")
        if format not in _EXT:
            raise ValueError(f"For '{api}', the 'format' should be one of {sorted(_EXT)}, but "
                             f"got {format!r}.")
        self.saved_network = saved_network
        self.append_info = list(append_info or [])
        for item in self.append_info:
            if not (item in ("epoch_num", "step_num") or isinstance(item, dict)):
                raise ValueError(f"For '{api}', every 'append_info' item should be "
                                 f"'epoch_num', 'step_num' or a dict, but got {item!r}.")
        self.enc_mode = enc_mode
        self.format = format


class ModelCheckpoint(Callback):
    """Saves `<directory>/<prefix>-<epoch>_<step in epoch><ext>` by `config`'s schedule
    and after the last step. In a parallel run every rank takes part (an integrated save
    gathers the split parameters and rank 0 writes; with integrated_save=False each rank
    writes its own slices, its rank in the file name). A name already present gets a
    `_<n>` suffix on the prefix, as MindSpore."""

    def __init__(self, prefix: str = "CKP", directory: str | None = None,
                 config: CheckpointConfig | None = None) -> None:
        super().__init__()
        validator.check_value_type("prefix", prefix, str, "ModelCheckpoint")
        if not prefix or "/" in prefix:
            raise ValueError(f"For 'ModelCheckpoint', the 'prefix' should be a non-empty "
                             f"file-name prefix without '/', but got {prefix!r}.")
        if config is None:
            config = CheckpointConfig()
        validator.check_value_type("config", config, CheckpointConfig, "ModelCheckpoint")
        self.config = config
        self.directory = os.path.abspath(directory or os.getcwd())
        self.prefix = prefix
        self._saved: list[str] = []           # files this callback wrote, oldest first
        self._kept_by_minutes: set[str] = set()
        self._last_step = 0
        self._last_time = time.time()
        self._last_keep_time = time.time()
        self.latest_ckpt_file_name = ""

    def on_train_begin(self, run_context: RunContext) -> None:
        os.makedirs(self.directory, exist_ok=True)
        ext = _EXT[self.config.format]
        base, n = self.prefix, 1
        # a second run in the same folder does not overwrite the first: CKP_1, CKP_2, ...
        while any(f.startswith(self.prefix + "-") and f.endswith(ext)
                  for f in os.listdir(self.directory)):
            self.prefix = f"{base}_{n}"
            n += 1
        if _parallel():           # no rank writes before every rank has chosen its prefix
            Barrier()()

    def on_train_step_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        steps = self.config.save_checkpoint_steps
        due = steps and cb.cur_step_num - self._last_step >= steps
        if self.config.save_checkpoint_seconds:
            due = time.time() - self._last_time >= self.config.save_checkpoint_seconds
        if due:
            self._save(cb)

    def on_train_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        if cb.cur_step_num != self._last_step:
            self._save(cb)

    def _save(self, cb: Any) -> None:
        step_in_epoch = (cb.cur_step_num - 1) % cb.batch_num + 1
        rank_tag = ""
        if not self.config.integrated_save and _parallel():
            rank_tag = f"_rank{get_rank()}"
        name = f"{self.prefix}{rank_tag}-{cb.cur_epoch_num}_{step_in_epoch}" \
               f"{_EXT[self.config.format]}"
        path = os.path.join(self.directory, name)
        network = self.config.saved_network or cb.train_network
        append = {}
        for item in self.config.append_info:
            if item == "epoch_num":
                append["epoch_num"] = cb.cur_epoch_num
            elif item == "step_num":
                append["step_num"] = cb.cur_step_num
            else:
                append.update(item)
        save_checkpoint(network, path, integrated_save=self.config.integrated_save,
                        append_dict=append or None, format=self.config.format)
        self._last_step, self._last_time = cb.cur_step_num, time.time()
        self.latest_ckpt_file_name = path
        if path in self._saved:
            self._saved.remove(path)
        self._saved.append(path)
        self._prune()

    def _prune(self) -> None:
        """Delete the oldest files beyond keep_checkpoint_max (0: keep all), sparing one
        every keep_checkpoint_per_n_minutes."""
        minutes = self.config.keep_checkpoint_per_n_minutes
        if minutes and time.time() - self._last_keep_time >= minutes * 60:
            self._kept_by_minutes.add(self._saved[-1])
            self._last_keep_time = time.time()
        limit = self.config.keep_checkpoint_max
        candidates = [p for p in self._saved if p not in self._kept_by_minutes]
        while limit and len(candidates) > limit:
            old = candidates.pop(0)
            self._saved.remove(old)
            # an integrated save in parallel: rank 0 wrote the file, and removes it
            mine = not (self.config.integrated_save and _parallel()) or get_rank() == 0
            if mine and os.path.exists(old):
                os.remove(old)


def _parallel() -> bool:
    """A parallel run over an initialized world (every rank runs the callback)."""
    return is_parallel() and is_initialized()

