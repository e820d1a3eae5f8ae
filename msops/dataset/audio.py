"""Readers of speech datasets stored as WAV files, as MindSpore's readers. A WAV file is
read with the standard `wave` module: 16-bit PCM, each sample divided by 32767 (as
MindSpore's reader) into a float32 `waveform` of shape (channels, frames); `sample_rate`
is an int32 scalar.

    YesNoDataset           dataset_dir/*.wav named '0_1_0_0_1_0_1_1.wav' -> waveform,
                           sample_rate, labels (int32 (8,), from the name)
    SpeechCommandsDataset  dataset_dir/<label>/<speaker>_nohash_<n>.wav, with
                           validation_list.txt and testing_list.txt; usage 'train' (the
                           files in neither list), 'valid', 'test' or 'all' (every file
                           but _background_noise_) -> waveform, sample_rate, label (str),
                           speaker_id (str), utterance_number (int32)
    LJSpeechDataset        dataset_dir/metadata.csv ('id|transcription|normalized' per
                           line) and dataset_dir/wavs/<id>.wav -> waveform, sample_rate,
                           transcription (str), normalized_transcription (str)

Files are listed by name (MindSpore takes the directory's order); rows sample as
MnistDataset (shuffled by default, shards, num_samples, sampler).
"""
from __future__ import annotations

import os
import wave
from typing import Any

import numpy as np

from msops.common import validator
from msops.dataset.files import FileDataset, ListedRows, check_dir
from msops.dataset.linefiles import read_text

__all__ = ["YesNoDataset", "SpeechCommandsDataset", "LJSpeechDataset", "read_wav"]


def read_wav(path: str, api: str) -> tuple[np.ndarray, np.ndarray]:
    """(waveform float32 (channels, frames) = int16 samples / 32767, sample_rate int32) of
    a 16-bit PCM WAV file."""
    try:
        with wave.open(path, "rb") as f:
            channels, width, rate = f.getnchannels(), f.getsampwidth(), f.getframerate()
            frames = f.readframes(f.getnframes())
    except (OSError, EOFError, wave.Error) as exc:
        raise RuntimeError(f"For '{api}', the WAV file '{path}' could not be read: {exc}") from exc
    if width != 2:
        raise RuntimeError(f"For '{api}', the WAV file '{path}' should hold 16-bit PCM samples, "
                           f"but it has {8 * width}-bit samples.")
    samples = np.frombuffer(frames, "<i2").reshape(-1, channels).T
    return (samples / np.float32(32767.0)).astype(np.float32), np.int32(rate)


class YesNoDataset(FileDataset):
    """YesNo as MindSpore's `YesNoDataset` (module docstring)."""

    def __init__(self, dataset_dir: str, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | None = None,
                 sampler: Any = None, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        items = []
        for name in sorted(os.listdir(root)):
            if name.endswith(".wav"):
                try:
                    labels = [int(v) for v in name[:-4].split("_") if v]
                except ValueError:
                    raise RuntimeError(f"For '{api}', the file name '{name}' should be 0/1 "
                                       f"labels joined by '_'.") from None
                items.append((os.path.join(root, name), np.array(labels, np.int32)))
        if not items:
            raise ValueError(f"For '{api}', the 'dataset_dir' should hold .wav files, but "
                             f"'{root}' has none.")

        def make_row(item: tuple) -> tuple:
            return read_wav(item[0], api) + (item[1],)
        super().__init__(ListedRows(items, make_row), ["waveform", "sample_rate", "labels"],
                         num_samples, shuffle, sampler, num_shards, shard_id, cache)


class SpeechCommandsDataset(FileDataset):
    """Speech Commands as MindSpore's `SpeechCommandsDataset` (module docstring)."""

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | None = None, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        usage = "all" if usage is None else usage
        validator.check_string("usage", usage, ["train", "valid", "test", "all"], api)
        lists = {}
        for part, name in (("valid", "validation_list.txt"), ("test", "testing_list.txt")):
            path = os.path.join(root, name)
            lists[part] = set(read_text(path, api).split()) if os.path.isfile(path) else set()
            if usage == part and not os.path.isfile(path):
                raise ValueError(f"For '{api}', usage '{usage}' needs '{name}', but '{path}' "
                                 f"does not exist.")
        items = []
        for label in sorted(os.listdir(root)):
            folder = os.path.join(root, label)
            if label == "_background_noise_" or not os.path.isdir(folder):
                continue
            for name in sorted(os.listdir(folder)):
                rel = f"{label}/{name}"
                if not name.endswith(".wav"):
                    continue
                part = "valid" if rel in lists["valid"] else "test" if rel in lists["test"] \
                    else "train"
                if usage in ("all", part):
                    speaker, _, number = name[:-4].partition("_nohash_")
                    try:
                        utterance = int(number)
                    except ValueError:
                        raise RuntimeError(f"For '{api}', the file '{rel}' should be named "
                                           f"'<speaker>_nohash_<n>.wav'.") from None
                    items.append((os.path.join(folder, name), label, speaker, utterance))
        if not items:
            raise ValueError(f"For '{api}', no .wav file of '{root}' is in usage '{usage}'.")

        def make_row(item: tuple) -> tuple:
            return read_wav(item[0], api) + (np.array(item[1]), np.array(item[2]),
                                             np.int32(item[3]))
        super().__init__(ListedRows(items, make_row),
                         ["waveform", "sample_rate", "label", "speaker_id", "utterance_number"],
                         num_samples, shuffle, sampler, num_shards, shard_id, cache)


class LJSpeechDataset(FileDataset):
    """LJ Speech as MindSpore's `LJSpeechDataset` (module docstring)."""

    def __init__(self, dataset_dir: str, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | None = None,
                 sampler: Any = None, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        path = os.path.join(root, "metadata.csv")
        if not os.path.isfile(path):
            raise ValueError(f"For '{api}', the 'dataset_dir' should hold 'metadata.csv', but "
                             f"'{path}' does not exist.")
        items = []
        for number, line in enumerate(read_text(path, api).splitlines(), 1):
            if not line.strip():
                continue
            fields = line.split("|")
            if len(fields) != 3:
                raise RuntimeError(f"For '{api}', line {number} of '{path}' should be "
                                   f"'id|transcription|normalized transcription', but got "
                                   f"{len(fields)} fields.")
            items.append((os.path.join(root, "wavs", fields[0] + ".wav"), fields[1], fields[2]))

        def make_row(item: tuple) -> tuple:
            return read_wav(item[0], api) + (np.array(item[1]), np.array(item[2]))
        super().__init__(ListedRows(items, make_row),
                         ["waveform", "sample_rate", "transcription", "normalized_transcription"],
                         num_samples, shuffle, sampler, num_shards, shard_id, cache)
