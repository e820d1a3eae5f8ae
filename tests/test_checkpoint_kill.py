"""A process killed during a save leaves the previous checkpoint intact (both formats).

The child saves new values and is held inside the save, after the temporary file is
written and before the rename (its fsync stalls); the parent kills it with SIGKILL
there, then reads the old file back."""
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import msops as ms
from msops import Tensor

ROOT = Path(__file__).parents[1]
CHILD = """
import os, sys, time
import numpy as np
import msops as ms
def stall(fd):
    print("inside the save", flush=True)
    time.sleep(60)
os.fsync = stall
ms.save_checkpoint({"w": ms.Tensor(np.full((256, 1024), 2.0, np.float32))}, sys.argv[1])
print("save finished", flush=True)
"""


@pytest.mark.parametrize("suffix", ["safetensors", "ckpt"])
def test_killed_mid_save_leaves_previous_checkpoint(tmp_path, suffix):
    path = str(tmp_path / f"net.{suffix}")
    old = np.full((256, 1024), 1.0, np.float32)
    ms.save_checkpoint({"w": Tensor(old)}, path)
    before = open(path, "rb").read()
    child = subprocess.Popen([sys.executable, "-c", CHILD, path], cwd=ROOT,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "inside the save"
        tmp = [f for f in os.listdir(tmp_path) if f.startswith(".tmp-")]
        assert tmp and os.path.getsize(tmp_path / tmp[0]) > old.nbytes     # new data written
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL
    assert open(path, "rb").read() == before
    np.testing.assert_array_equal(ms.load_checkpoint(path)["w"].asnumpy(), old)
