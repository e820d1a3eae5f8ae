"""The README's examples run as documented: under mpiexec on 4 ranks, asserting their results."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


@pytest.mark.parametrize("script,expect", [
    ("allgather.py", "AllGather on 4 ranks: [2, 3] -> [8, 3]"),
    ("semi_auto_parallel.py", "sharded output == serial output on 4 ranks"),
    ("quantized_alltoallv.py", "quantized AllToAllV pipeline on 4 ranks"),
])
def test_example_runs_on_4_ranks(script, expect):
    cmd = ["mpiexec", "-n", "4", sys.executable, "-m", "mpi4py", str(ROOT / "examples" / script)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert expect in proc.stdout
