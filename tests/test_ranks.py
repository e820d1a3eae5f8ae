"""Launch each tests/ranks/test_*.py under real MPI at the rank counts it declares.

A rank file declares `RANKS = (2, 4, 8)`; every rank runs the same pytest session, so each
assertion is checked on every rank against numpy. The selected files of one rank count
run in one `mpiexec` (a launch costs 1.5-4.5 s of interpreter and MPI start-up, more than
most files' tests); each rank records its tests' outcomes (tests/ranks/conftest.py), and
each (file, rank count) item passes when every rank ran and passed that file's tests.
A failing test aborts its launch (no rank is left waiting in a collective): its item
shows the failure, the files after it report that they were not reached.
"""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).parent
#: one launch runs every selected file of its rank count; a hang ends in the watchdog's
#: report (MSOPS_OP_TIMEOUT) long before this
TIMEOUT_S = 1200


def _counts(text: str, name: str, default: list[int]) -> list[int]:
    m = re.search(rf"^{name}\s*=\s*\(([^)]*)\)", text, re.M)
    return [int(v) for v in m.group(1).replace(",", " ").split()] if m else default


def _suites():
    for path in sorted((HERE / "ranks").glob("test_*.py")):
        text = path.read_text()
        for n in _counts(text, "RANKS", [2]):
            yield pytest.param(path, n, id=f"{path.stem}-n{n}")


class _Launch:
    """One `mpiexec -n N` over `paths`: its output and each rank's recorded outcomes."""

    def __init__(self, nranks: int, paths: list[Path], **extra_env: str) -> None:
        self.nranks = nranks
        with tempfile.TemporaryDirectory() as results:
            # Plugin autoload (hypothesis: ~1 s a process) is off; files that use one import it.
            env = dict(os.environ, MSOPS_UNDER_MPIEXEC="1", PYTHONUNBUFFERED="1",
                       PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", MSOPS_OP_TIMEOUT="120",
                       MSOPS_RANK_RESULTS=results, **extra_env)
            self.cmd = ["mpiexec", "-n", str(nranks), sys.executable, "-m", "pytest",
                        *map(str, paths), "-o", "addopts=", "-q", "-p", "no:cacheprovider",
                        "-x"]
            try:
                proc = subprocess.run(self.cmd, cwd=HERE.parent, env=env, capture_output=True,
                                      text=True, timeout=TIMEOUT_S)
                self.returncode, self.stdout, self.stderr = \
                    proc.returncode, proc.stdout, proc.stderr
            except subprocess.TimeoutExpired as err:
                self.returncode, self.stdout, self.stderr = None, str(err.stdout), ""
            # rank -> [(file name, test id, outcome)]
            self.outcomes = {r: _read(Path(results) / f"rank{r}.txt") for r in range(nranks)}

    def check(self, path: Path) -> None:
        """Assert every rank ran `path`'s tests and each passed (at least one each)."""
        tail = f"{' '.join(self.cmd)}\n{self.stdout[-6000:]}\n{self.stderr[-3000:]}"
        failed = [(r, t) for r, rows in self.outcomes.items() for f, t, o in rows
                  if f == path.name and o == "failed"]
        assert not failed, f"{path.name} failed on ranks {failed}:\n{tail}"
        for r, rows in self.outcomes.items():
            passed = [t for f, t, o in rows if f == path.name and o == "passed"]
            if not passed:
                stop = next((f"{f}::{t}" for rr in self.outcomes.values() for f, t, o in rr
                             if o == "failed"), "no failure recorded")
                raise AssertionError(f"{path.name} did not run on rank {r} of {self.nranks} "
                                     f"(the launch stopped at: {stop}; exit code "
                                     f"{self.returncode}):\n{tail}")


def _read(path: Path) -> list[tuple[str, str, str]]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        nodeid, outcome = line.rsplit(" ", 1)
        file, _, test = nodeid.partition("::")
        rows.append((Path(file).name, test, outcome))
    return rows


@pytest.fixture(scope="session")
def launches(request):
    """Rank count -> its one launch over the files this session selected for it."""
    selected: dict[int, list[Path]] = {}
    for item in request.session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if item.originalname == "test_ranks" and "nranks" in params:
            selected.setdefault(params["nranks"], []).append(params["path"])
    done: dict[int, _Launch] = {}

    def launch(nranks: int) -> _Launch:
        if nranks not in done:
            done[nranks] = _Launch(nranks, selected[nranks])
        return done[nranks]
    return launch


@pytest.mark.parametrize("path,nranks", list(_suites()))
def test_ranks(path: Path, nranks: int, launches):
    launches(nranks).check(path)


#: the files that exercise the eager check's exchange (communication/digest_exchange.py)
_EXCHANGE_FILES = ("test_desync.py", "test_comm_collectives.py", "test_groups.py")


@pytest.mark.parametrize("nranks,kind", [(2, "blocking"), (4, "persistent")])
def test_both_check_exchanges(nranks: int, kind: str):
    """The check's exchange is persistent or blocking by the host's cores (so this machine's
    launches run one kind at 2 ranks, the other at 4 and 8): each file again with the other."""
    launch = _Launch(nranks, [HERE / "ranks" / f for f in _EXCHANGE_FILES],
                     MSOPS_CHECK_EXCHANGE=kind)
    for f in _EXCHANGE_FILES:
        launch.check(HERE / "ranks" / f)
