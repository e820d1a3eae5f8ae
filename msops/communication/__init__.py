"""Communication groups over MPI (or a simulated world for dry runs)."""
from msops.communication.group import Group, SimulationError
from msops.communication.management import (GlobalComm, create_group, create_group_partition,
                                            destroy_group, get_group, get_group_rank_from_world_rank,
                                            get_group_size, get_rank, get_world_rank_from_group_rank,
                                            group_name_of, init, is_initialized, is_simulation,
                                            release)

__all__ = ["GlobalComm", "Group", "SimulationError", "init", "release", "get_rank",
           "get_group_size", "create_group", "destroy_group", "get_group", "is_initialized",
           "is_simulation", "create_group_partition", "group_name_of",
           "get_world_rank_from_group_rank", "get_group_rank_from_world_rank"]
from msops.communication.management import (HCCL_WORLD_COMM_GROUP,  # noqa: E402
                                            MCCL_WORLD_COMM_GROUP, NCCL_WORLD_COMM_GROUP)

__all__ += ["HCCL_WORLD_COMM_GROUP", "NCCL_WORLD_COMM_GROUP", "MCCL_WORLD_COMM_GROUP"]
from msops.communication.management import get_local_rank, get_local_rank_size  # noqa: E402

__all__ += ["get_local_rank", "get_local_rank_size"]
from msops.communication.management import get_comm_name, get_process_group_ranks  # noqa: E402

__all__ += ["get_comm_name", "get_process_group_ranks"]
