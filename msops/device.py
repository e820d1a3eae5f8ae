"""MindSpore 2.5+'s device functions: `set_device`, `get_current_device`,
`set_deterministic`. They set the same context keys `set_context` does (`device_target`,
`device_id`, `deterministic`): the target is recorded as given, every kernel runs with
numpy on the CPU (msops.context)."""
from __future__ import annotations

import os
from typing import NamedTuple

from msops.common import validator
from msops.context import get_context, set_context

__all__ = ["DeviceInfo", "set_device", "get_current_device", "set_deterministic"]


class DeviceInfo(NamedTuple):
    """(device_target, device_id), as `get_current_device()` returns it."""
    device_target: str
    device_id: int


def set_device(device_target: str, device_id: int | None = None) -> None:
    """Set the device target ("CPU", "GPU" or "Ascend") and id. device_id None: the
    `DEVICE_ID` msrun gives each rank, else 0."""
    if device_id is None:
        device_id = int(os.environ.get("DEVICE_ID", "0"))
    validator.check_value_type("device_id", device_id, int, "set_device")
    set_context(device_target=device_target, device_id=device_id)


def get_current_device() -> DeviceInfo:
    """The device target and id set by `set_device` / `set_context` ("CPU", 0 by default)."""
    return DeviceInfo(get_context("device_target"), get_context("device_id"))


def set_deterministic(deterministic: bool) -> None:
    """Deterministic kernels on or off (`set_context(deterministic="ON" | "OFF")`). msops's
    numpy kernels and MPI reductions over a fixed world give the same bits run to run
    either way."""
    validator.check_bool("deterministic", deterministic, "set_deterministic")
    set_context(deterministic="ON" if deterministic else "OFF")
