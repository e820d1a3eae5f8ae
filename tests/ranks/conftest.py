"""Runs inside every rank of `mpiexec -n N python -m pytest tests/ranks/<files>`.

The world is initialised once. A failing test prints its report and aborts the job,
so one rank's failure never leaves the others blocked in a collective.
"""
import os
import sys

import pytest
from mpi4py import MPI

import msops as ms
from msops.communication import init

init()


def pytest_configure(config):
    config.addinivalue_line("markers", "ranks(*counts): run this test only at these world "
                                       "sizes (a subset of its file's RANKS)")


def pytest_collection_modifyitems(config, items):
    """Deselect (never skip) the tests whose `ranks` marker leaves out this world size: a
    test that does not run is not reported as anything."""
    size = MPI.COMM_WORLD.size
    keep = [i for i in items if (m := i.get_closest_marker("ranks")) is None or size in m.args]
    if len(keep) < len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep


@pytest.fixture(autouse=True)
def _stand_alone_after_each_test():
    """The files of one rank count share these processes (test_ranks.py): no test leaves
    its auto-parallel context to the next file's tests."""
    yield
    ms.reset_auto_parallel_context()


#: where test_ranks.py reads each rank's outcomes ("<nodeid> <outcome>" a line)
_RESULTS = os.environ.get("MSOPS_RANK_RESULTS")


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    if _RESULTS and (report.when == "call" or report.failed):
        with open(os.path.join(_RESULTS, f"rank{MPI.COMM_WORLD.rank}.txt"), "a") as f:
            f.write(f"{report.nodeid} {report.outcome}\n")
    if report.failed:
        sys.stdout.write(f"\n[rank {MPI.COMM_WORLD.rank}] FAILED {report.nodeid}\n"
                         f"{report.longreprtext}\n")
        sys.stdout.flush()
        MPI.COMM_WORLD.Abort(1)
