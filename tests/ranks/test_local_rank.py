"""get_local_rank / get_local_rank_size under real MPI on 2 and 4 ranks, against an
independent reference: every rank's host name, gathered by mpi4py directly (and the
launcher's own local rank, where it sets one)."""
import os
import socket

from mpi4py import MPI

from msops.communication import (create_group, destroy_group, get_group_size, get_local_rank,
                                 get_local_rank_size, get_rank)

RANKS = (2, 4)
HOSTS = MPI.COMM_WORLD.allgather(socket.gethostname())


def expected(members):
    """(local rank, local size) of this rank among world ranks `members` on its host."""
    mine = [r for r in members if HOSTS[r] == HOSTS[MPI.COMM_WORLD.rank]]
    return mine.index(MPI.COMM_WORLD.rank), len(mine)


def test_world_local_rank_matches_the_host_names():
    assert (get_local_rank(), get_local_rank_size()) == expected(range(get_group_size()))


def test_launcher_local_rank_agrees():
    for var in ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK"):
        if var in os.environ:                # MPICH's hydra, Open MPI, msrun
            assert get_local_rank() == int(os.environ[var]), var
    for var in ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE"):
        if var in os.environ:
            assert get_local_rank_size() == int(os.environ[var]), var


def test_sub_group_local_rank():
    n = get_group_size()
    members = list(range(n - 1, -1, -2))      # every other rank, in reverse order
    create_group("every_other", members)
    if get_rank() in members:
        assert (get_local_rank("every_other"), get_local_rank_size("every_other")) == \
            expected(members)
    destroy_group("every_other")
