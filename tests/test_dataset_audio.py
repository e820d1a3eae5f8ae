"""YesNoDataset, SpeechCommandsDataset, LJSpeechDataset over WAV files written here with
struct (a hand-built RIFF header, not the reader's `wave` module), the waveforms compared
with int16 samples / 32767."""
import struct

import numpy as np
import pytest

from msops import dataset as ds


def write_wav(path, samples, rate=8000):
    """A mono 16-bit PCM WAV file of int16 `samples`, header built field by field."""
    data = np.asarray(samples, "<i2").tobytes()
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE" + b"fmt " + \
        struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16) + b"data" + \
        struct.pack("<I", len(data))
    path.write_bytes(header + data)


def rows(dataset):
    return list(dataset.create_tuple_iterator(output_numpy=True))


def test_yesno_waveforms_rates_and_labels(tmp_path):
    rng = np.random.default_rng(0)
    names = ["1_0_1_1_0_0_0_1.wav", "0_0_0_1_1_0_1_0.wav"]
    waves = {n: rng.integers(-32768, 32768, 20 + k) for k, n in enumerate(names)}
    for n in names:
        write_wav(tmp_path / n, waves[n], rate=8000)
    (tmp_path / "README").write_text("skipped")
    d = ds.YesNoDataset(str(tmp_path), shuffle=False)
    assert d.get_col_names() == ["waveform", "sample_rate", "labels"]
    got = rows(d)
    for (wave, rate, labels), name in zip(got, sorted(names)):
        assert wave.dtype == np.float32 and wave.shape == (1, len(waves[name]))
        np.testing.assert_allclose(wave[0], waves[name] / 32767.0, rtol=1e-6)
        assert rate.dtype == np.int32 and int(rate) == 8000
        assert labels.dtype == np.int32
        assert labels.tolist() == [int(v) for v in name[:-4].split("_")]
    assert len(rows(ds.YesNoDataset(str(tmp_path), num_shards=2, shard_id=1))) == 1


def test_speech_commands_usage_lists(tmp_path):
    files = {"yes/a1b2_nohash_0.wav": [1, 2], "yes/c3d4_nohash_1.wav": [3],
             "no/a1b2_nohash_2.wav": [-4, 5, 6], "_background_noise_/noise.wav": [0]}
    for rel, samples in files.items():
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        write_wav(tmp_path / rel, samples, rate=16000)
    (tmp_path / "validation_list.txt").write_text("yes/c3d4_nohash_1.wav\n")
    (tmp_path / "testing_list.txt").write_text("no/a1b2_nohash_2.wav\n")
    d = ds.SpeechCommandsDataset(str(tmp_path), "train", shuffle=False)
    assert d.get_col_names() == ["waveform", "sample_rate", "label", "speaker_id",
                                 "utterance_number"]
    (wave, rate, label, speaker, number), = rows(d)
    np.testing.assert_allclose(wave, [[1 / 32767.0, 2 / 32767.0]], rtol=1e-6)
    assert (int(rate), str(label), str(speaker), int(number)) == (16000, "yes", "a1b2", 0)
    assert number.dtype == np.int32
    (_, _, label, speaker, number), = rows(ds.SpeechCommandsDataset(str(tmp_path), "test"))
    assert (str(label), str(speaker), int(number)) == ("no", "a1b2", 2)
    every = rows(ds.SpeechCommandsDataset(str(tmp_path), shuffle=False))
    assert [(str(r[2]), int(r[4])) for r in every] == [("no", 2), ("yes", 0), ("yes", 1)]


def test_ljspeech_metadata_and_wavs(tmp_path):
    (tmp_path / "wavs").mkdir()
    write_wav(tmp_path / "wavs/LJ001-0001.wav", [100, -100, 32767], rate=22050)
    write_wav(tmp_path / "wavs/LJ001-0002.wav", [7], rate=22050)
    (tmp_path / "metadata.csv").write_text(
        "LJ001-0001|Printing, in the 1st sense|Printing, in the first sense\n"
        "LJ001-0002|in being comparatively modern.|in being comparatively modern.\n")
    d = ds.LJSpeechDataset(str(tmp_path), shuffle=False)
    assert d.get_col_names() == ["waveform", "sample_rate", "transcription",
                                 "normalized_transcription"]
    (wave, rate, text, norm), second = rows(d)
    np.testing.assert_allclose(wave, [[100 / 32767.0, -100 / 32767.0, 1.0]], rtol=1e-6)
    assert int(rate) == 22050 and str(text) == "Printing, in the 1st sense"
    assert str(norm) == "Printing, in the first sense"
    assert second[0].tolist() == [[np.float32(7 / 32767.0)]]
    (tmp_path / "metadata.csv").write_text("LJ001-0001|only two\n")
    with pytest.raises(RuntimeError, match="line 1 .* should be 'id\\|transcription"):
        ds.LJSpeechDataset(str(tmp_path))


def test_cmu_arctic_labels_and_rate(tmp_path):
    base = tmp_path / "cmu_us_slt_arctic"
    (base / "etc").mkdir(parents=True)
    (base / "wav").mkdir()
    (base / "etc/txt.done.data").write_text(
        '( arctic_a0001 "Author of the danger trail, Philip Steels, etc." )\n'
        '( arctic_b0002 "Not at this particular case, Tom." )\n')
    write_wav(base / "wav/arctic_a0001.wav", [1, -1], rate=16000)
    write_wav(base / "wav/arctic_b0002.wav", [5], rate=16000)
    d = ds.CMUArcticDataset(str(tmp_path), name="slt", shuffle=False)
    assert d.get_col_names() == ["waveform", "sample_rate", "transcript", "utterance_id"]
    (wave, rate, text, ident), (_, _, text2, ident2) = rows(d)
    np.testing.assert_allclose(wave, [[1 / 32767.0, -1 / 32767.0]], rtol=1e-6)
    assert rate.dtype == np.uint32 and int(rate) == 16000
    assert (str(text), str(ident)) == ("Author of the danger trail, Philip Steels, etc.", "a0001")
    assert (str(text2), str(ident2)) == ("Not at this particular case, Tom.", "b0002")
    write_wav(base / "wav/arctic_b0002.wav", [5], rate=8000)
    with pytest.raises(RuntimeError, match="sample rate .* should be 16000, but got 8000"):
        rows(ds.CMUArcticDataset(str(tmp_path), name="slt", shuffle=False))
    with pytest.raises(ValueError, match="'name' should be one of"):
        ds.CMUArcticDataset(str(tmp_path), name="xyz")


def test_libritts_transcripts_ids_and_usage(tmp_path):
    for usage, speaker, chapter in (("dev-clean", 84, 121123), ("train-clean-100", 19, 198)):
        folder = tmp_path / usage / str(speaker) / str(chapter)
        folder.mkdir(parents=True)
        ident = f"{speaker}_{chapter}_000007_000001"
        write_wav(folder / f"{ident}.wav", [speaker, chapter % 1000], rate=24000)
        (folder / f"{speaker}_{chapter}.trans.tsv").write_text(
            f"{ident}\tOriginal {usage}.\toriginal {usage}\n")
    d = ds.LibriTTSDataset(str(tmp_path), "train-clean-100", shuffle=False)
    assert d.get_col_names() == ["waveform", "sample_rate", "original_text", "normalized_text",
                                 "speaker_id", "chapter_id", "utterance_id"]
    (wave, rate, original, normalized, speaker, chapter, ident), = rows(d)
    np.testing.assert_allclose(wave, [[19 / 32767.0, 198 / 32767.0]], rtol=1e-6)
    assert (int(rate), str(original), str(normalized)) == \
        (24000, "Original train-clean-100.", "original train-clean-100")
    assert speaker.dtype == np.uint32 and (int(speaker), int(chapter)) == (19, 198)
    assert str(ident) == "19_198_000007_000001"
    every = rows(ds.LibriTTSDataset(str(tmp_path), shuffle=False))      # dev-clean first
    assert [int(r[4]) for r in every] == [84, 19]


def write_sph(path, samples, rate=16000, byte_format="10"):
    """A NIST SPHERE file: a 1024-byte ASCII header, then 16-bit PCM samples."""
    order = ">i2" if byte_format == "10" else "<i2"
    header = (f"NIST_1A\n   1024\nsample_count -i {len(samples)}\nsample_n_bytes -i 2\n"
              f"channel_count -i 1\nsample_byte_format -s2 {byte_format}\n"
              f"sample_rate -i {rate}\nsample_coding -s3 pcm\nend_head\n").encode()
    path.write_bytes(header.ljust(1024, b" ") + np.asarray(samples, order).tobytes())


def test_tedlium_stm_segments(tmp_path):
    rng = np.random.default_rng(7)
    audio = rng.integers(-32768, 32768, 40)
    for part in ("train", "test"):
        (tmp_path / part / "stm").mkdir(parents=True)
        (tmp_path / part / "sph").mkdir()
        write_sph(tmp_path / part / "sph" / "Talk_A.sph", audio, rate=10,
                  byte_format="10" if part == "train" else "01")
        (tmp_path / part / "stm" / "Talk_A.stm").write_text(
            "Talk_A 1 Talk_A 0.5 1.2 <o,f0,male> hello there\n"
            "Talk_A 1 Speaker_B 2.0 3.5 <o,f0,female> the second one\n")
    d = ds.TedliumDataset(str(tmp_path), "release1", "train", shuffle=False)
    assert d.get_col_names() == ["waveform", "sample_rate", "transcript", "talk_id",
                                 "speaker_id", "identifier"]
    (wave, rate, text, talk, speaker, ident), second = rows(d)
    np.testing.assert_allclose(wave, audio[None, 5:12] / 32767.0, rtol=1e-6)
    assert wave.dtype == np.float32 and rate.dtype == np.int32 and int(rate) == 10
    assert (str(text), str(talk), str(speaker), str(ident)) == \
        ("hello there", "Talk_A", "Talk_A", "<o,f0,male>")
    np.testing.assert_allclose(second[0], audio[None, 20:35] / 32767.0, rtol=1e-6)
    little = rows(ds.TedliumDataset(str(tmp_path), "release1", "test", shuffle=False))
    np.testing.assert_allclose(little[0][0], audio[None, 5:12] / 32767.0, rtol=1e-6)
    with pytest.raises(ValueError, match="dev/stm' does not exist"):     # 'all' needs dev too
        ds.TedliumDataset(str(tmp_path), "release2", "all")
    with pytest.raises(ValueError, match="'usage' should be one of \\['all'\\]"):
        ds.TedliumDataset(str(tmp_path), "release3", "train")
