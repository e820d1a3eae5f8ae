"""Launch each tests/ranks/test_*.py under real MPI at the rank counts it declares.

A rank file declares `RANKS = (2, 4, 8)`; every rank runs the same pytest session,
so each assertion is checked on every rank against numpy.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
TIMEOUT_S = 300


def _counts(text: str, name: str, default: list[int]) -> list[int]:
    m = re.search(rf"^{name}\s*=\s*\(([^)]*)\)", text, re.M)
    return [int(v) for v in m.group(1).replace(",", " ").split()] if m else default


def _suites():
    for path in sorted((HERE / "ranks").glob("test_*.py")):
        text = path.read_text()
        for n in _counts(text, "RANKS", [2]):
            yield pytest.param(path, n, id=f"{path.stem}-n{n}")


@pytest.mark.parametrize("path,nranks", list(_suites()))
def test_ranks(path: Path, nranks: int):
    # Plugin autoload (hypothesis: ~1 s a process) is off; files that use a plugin import it.
    # A hang ends in the watchdog's report (which ranks wait where) well before TIMEOUT_S.
    env = dict(os.environ, MSOPS_UNDER_MPIEXEC="1", PYTHONUNBUFFERED="1",
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", MSOPS_OP_TIMEOUT="120")
    cmd = ["mpiexec", "-n", str(nranks), sys.executable, "-m", "pytest", str(path),
           "-o", "addopts=", "-q", "-p", "no:cacheprovider", "-x"]
    proc = subprocess.run(cmd, cwd=HERE.parent, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}"
    passed = re.findall(r"(\d+) passed", proc.stdout)
    assert len(passed) == nranks and all(int(p) > 0 for p in passed), proc.stdout[-3000:]
