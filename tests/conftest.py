"""Single-process tests run on a simulated world; tests/ranks/ runs only under mpiexec."""
import os

import pytest

import msops as ms
from msops.communication import init, release

# tests/ranks/* are launched under mpiexec by test_ranks.py, never collected directly.
collect_ignore = [] if os.environ.get("MSOPS_UNDER_MPIEXEC") else ["ranks"]


@pytest.fixture
def sim():
    """Factory for a simulated world: sim(world_size, rank). Released afterwards."""
    def make(world_size: int = 8, rank: int = 0):
        init("simulation", world_size=world_size, rank=rank)
    yield make
    release()


@pytest.fixture(autouse=True)
def _fresh_context():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)
