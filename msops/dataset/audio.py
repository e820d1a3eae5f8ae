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
    CMUArcticDataset       dataset_dir/cmu_us_<name>_arctic/etc/txt.done.data
                           ('( arctic_a0001 "text" )' per line) and .../wav/<id>.wav (16 kHz)
                           -> waveform, sample_rate (uint32), transcript (str),
                           utterance_id (str, the part after the last '_')
    LibriTTSDataset        dataset_dir/<usage>/<speaker>/<chapter>/*.trans.tsv
                           ('utterance<TAB>original<TAB>normalized' per line) and
                           <utterance>.wav (24 kHz) beside it -> waveform, sample_rate
                           (uint32), original_text, normalized_text (str), speaker_id,
                           chapter_id (uint32), utterance_id (str)
    TedliumDataset         TED-LIUM release1/2: dataset_dir/<usage>/stm/<talk>.stm and
                           <usage>/sph/<talk>.sph; release3: dataset_dir/data/stm, data/sph.
                           One row per STM line 'talk channel speaker start end <id>
                           transcript': waveform (the NIST SPHERE file's 16-bit samples from
                           start to end seconds, / 32767), sample_rate (int32), transcript,
                           talk_id, speaker_id, identifier (str); talks by name, lines in order

Files are listed by name (MindSpore takes the directory's order); rows sample as
MnistDataset (shuffled by default, shards, num_samples, sampler).
"""
from __future__ import annotations

import os
import wave
from typing import Any

import numpy as np

from msops.common import validator
from msops.dataset.files import FileDataset, ListedRows, check_dir, pick_usage
from msops.dataset.linefiles import read_text

__all__ = ["YesNoDataset", "SpeechCommandsDataset", "LJSpeechDataset", "CMUArcticDataset",
           "LibriTTSDataset", "TedliumDataset", "read_wav", "read_sph"]


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
        usage = pick_usage(usage, ["train", "valid", "test", "all"], api, "all")
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


def _fixed_rate(path: str, rate: int, api: str) -> tuple:
    """read_wav of `path`, which must be sampled at `rate` Hz (as MindSpore checks)."""
    wave_, got = read_wav(path, api)
    if int(got) != rate:
        raise RuntimeError(f"For '{api}', the sample rate of '{path}' should be {rate}, but got "
                           f"{int(got)}.")
    return wave_, np.uint32(rate)


_ARCTIC_NAMES = ("aew", "ahw", "aup", "awb", "axb", "bdl", "clb", "eey", "fem", "gka", "jmk",
                 "ksp", "ljm", "lnh", "rms", "rxr", "slp", "slt")


class CMUArcticDataset(FileDataset):
    """CMU Arctic as MindSpore's `CMUArcticDataset` (module docstring): speaker `name`
    (default 'aew')."""

    def __init__(self, dataset_dir: str, name: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | None = None, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        name = "aew" if name is None else name
        validator.check_string("name", name, list(_ARCTIC_NAMES), api)
        base = os.path.join(check_dir(dataset_dir, api), f"cmu_us_{name}_arctic")
        labels = os.path.join(base, "etc", "txt.done.data")
        if not os.path.isfile(labels):
            raise ValueError(f"For '{api}', the label file '{labels}' does not exist.")
        items = []
        for number, line in enumerate(read_text(labels, api).splitlines(), 1):
            if not line.strip():
                continue
            first = line.find('"')
            second = line.find('"', first + 1)
            if first < 0 or second < 0:
                raise RuntimeError(f"For '{api}', line {number} of '{labels}' should be "
                                   f"'( <id> \"<text>\" )', but got {line!r}.")
            ident = line[2:first - 1].strip()
            items.append((os.path.join(base, "wav", ident + ".wav"), line[first + 1:second],
                          ident.rsplit("_", 1)[-1]))

        def make_row(item: tuple) -> tuple:
            return _fixed_rate(item[0], 16000, api) + (np.array(item[1]), np.array(item[2]))
        super().__init__(ListedRows(items, make_row),
                         ["waveform", "sample_rate", "transcript", "utterance_id"],
                         num_samples, shuffle, sampler, num_shards, shard_id, cache)


_LIBRITTS_USAGES = ("dev-clean", "dev-other", "test-clean", "test-other", "train-clean-100",
                    "train-clean-360", "train-other-500")


class LibriTTSDataset(FileDataset):
    """LibriTTS as MindSpore's `LibriTTSDataset` (module docstring): `usage` one of
    'dev-clean', 'dev-other', 'test-clean', 'test-other', 'train-clean-100',
    'train-clean-360', 'train-other-500' or 'all'/None (those in turn, the ones present)."""

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | None = None, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        usage = pick_usage(usage, list(_LIBRITTS_USAGES) + ["all"], api, "all")
        items = []
        for part in (_LIBRITTS_USAGES if usage == "all" else (usage,)):
            for folder, _, files in sorted(os.walk(os.path.join(root, part))):
                for name in sorted(f for f in files if f.endswith(".trans.tsv")):
                    path = os.path.join(folder, name)
                    for line in read_text(path, api).splitlines():
                        if not line:
                            continue
                        fields = line.split("\t")
                        ident = fields[0]
                        parts = ident.split("_")
                        if len(fields) != 3 or len(parts) != 4 or not parts[0].isdigit() or \
                                not parts[1].isdigit():
                            raise RuntimeError(f"For '{api}', every line of '{path}' should be "
                                               f"'<speaker>_<chapter>_<n>_<m><TAB>original<TAB>"
                                               f"normalized', but got {line!r}.")
                        items.append((os.path.join(folder, ident + ".wav"), fields[1], fields[2],
                                      int(parts[0]), int(parts[1]), ident))

        def make_row(item: tuple) -> tuple:
            return _fixed_rate(item[0], 24000, api) + (
                np.array(item[1]), np.array(item[2]), np.uint32(item[3]), np.uint32(item[4]),
                np.array(item[5]))
        super().__init__(ListedRows(items, make_row),
                         ["waveform", "sample_rate", "original_text", "normalized_text",
                          "speaker_id", "chapter_id", "utterance_id"],
                         num_samples, shuffle, sampler, num_shards, shard_id, cache)


def read_sph(path: str, start: float, end: float, api: str) -> tuple[np.ndarray, np.int32]:
    """(waveform float32 (1, n) of the samples in [start, end) seconds / 32767, sample rate)
    of a NIST SPHERE file of 16-bit PCM: an ASCII header ('NIST_1A', its byte size, then
    'name -type value' lines up to 'end_head') followed by the samples, big-endian unless
    sample_byte_format is '01'."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise RuntimeError(f"For '{api}', the SPHERE file '{path}' could not be read: "
                           f"{exc}") from exc
    lines = data[:4096].split(b"\n")
    if len(lines) < 2 or lines[0].strip() != b"NIST_1A":
        raise RuntimeError(f"For '{api}', '{path}' is not a NIST SPHERE file.")
    size = int(lines[1])
    fields = {}
    for line in data[:size].split(b"\n")[2:]:
        parts = line.split(None, 2)
        if parts and parts[0] == b"end_head":
            break
        if len(parts) == 3:
            fields[parts[0].decode()] = parts[2].strip().decode()
    if fields.get("sample_n_bytes", "2") != "2" or \
            fields.get("sample_coding", "pcm").split(",")[0] != "pcm":
        raise RuntimeError(f"For '{api}', '{path}' should hold uncompressed 16-bit PCM, but its "
                           f"header says {fields}.")
    rate = int(fields.get("sample_rate", 16000))
    order = "<i2" if fields.get("sample_byte_format") == "01" else ">i2"
    samples = np.frombuffer(data[size:size + (len(data) - size) // 2 * 2], order)
    first, last = int(start * rate), int(end * rate)
    return (samples[first:last] / np.float32(32767.0)).astype(np.float32)[None], np.int32(rate)


class TedliumDataset(FileDataset):
    """TED-LIUM as MindSpore's `TedliumDataset` (module docstring): `release` 'release1',
    'release2' (usage 'train', 'test', 'dev' or 'all'/None) or 'release3' (usage 'all');
    `extensions` the audio suffix (default '.sph'). MindSpore's reader reads its samples from
    the wrong offset; msops reads the stated time span."""

    def __init__(self, dataset_dir: str, release: str, usage: str | None = None,
                 extensions: str | None = None, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | None = None,
                 sampler: Any = None, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        validator.check_string("release", release, ["release1", "release2", "release3"], api)
        if release == "release3":
            usage = pick_usage(usage, ["all"], api)
            parts = ["data"]
        else:
            usage = pick_usage(usage, ["train", "test", "dev", "all"], api)
            parts = ["train", "test", "dev"] if usage == "all" else [usage]
        extensions = ".sph" if extensions is None else extensions
        items = []
        for part in parts:
            stm = os.path.join(root, part, "stm")
            if not os.path.isdir(stm):
                raise ValueError(f"For '{api}', the folder '{stm}' does not exist.")
            for name in sorted(f for f in os.listdir(stm) if f.endswith(".stm")):
                audio = os.path.join(root, part, "sph", name[:-4] + extensions)
                for number, line in enumerate(read_text(os.path.join(stm, name), api)
                                              .splitlines(), 1):
                    fields = line.split(" ", 6)
                    if not line.strip():
                        continue
                    try:
                        if len(fields) < 7:
                            raise ValueError("too few fields")
                        start, end = float(fields[3]), float(fields[4])
                    except ValueError:
                        raise RuntimeError(f"For '{api}', line {number} of '{name}' should be "
                                           f"'talk channel speaker start end <id> transcript', "
                                           f"but got {line!r}.") from None
                    items.append((audio, start, end, fields[6], fields[0], fields[2], fields[5]))

        def make_row(item: tuple) -> tuple:
            return read_sph(item[0], item[1], item[2], api) + tuple(np.array(v) for v in item[3:])
        super().__init__(ListedRows(items, make_row),
                         ["waveform", "sample_rate", "transcript", "talk_id", "speaker_id",
                          "identifier"], num_samples, shuffle, sampler, num_shards, shard_id, cache)
