"""set_device / get_current_device / set_deterministic: the context keys they set."""
import warnings

import pytest

import msops as ms


@pytest.fixture(autouse=True)
def _restore():
    yield
    ms.set_context(device_target="CPU", device_id=0, deterministic="OFF")


def test_set_device_sets_target_and_id(monkeypatch):
    ms.set_device("CPU", 3)
    assert ms.get_current_device() == ("CPU", 3)
    assert (ms.get_context("device_target"), ms.get_context("device_id")) == ("CPU", 3)
    monkeypatch.setenv("DEVICE_ID", "5")                 # msrun's per-rank id
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ms.set_device("Ascend")
    info = ms.get_current_device()
    assert (info.device_target, info.device_id) == ("Ascend", 5)


def test_set_deterministic():
    ms.set_deterministic(True)
    assert ms.get_context("deterministic") == "ON"
    ms.set_deterministic(False)
    assert ms.get_context("deterministic") == "OFF"


def test_bad_arguments_name_the_function():
    with pytest.raises(ValueError, match="device_target"):
        ms.set_device("TPU")
    with pytest.raises(TypeError, match="For 'set_device', the type of 'device_id' should be int"):
        ms.set_device("CPU", "0")
    with pytest.raises(TypeError, match="For 'set_deterministic'"):
        ms.set_deterministic("ON")
