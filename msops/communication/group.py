"""A communication group: named, ordered world ranks, and (on MPI) its communicator."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class SimulationError(RuntimeError):
    """Raised when a simulated (dry-run) world is asked to move data."""


@dataclass(eq=False)
class Group:
    """Ranks `ranks` (world ranks, in group-rank order) under `name`.

    `rank` is this process's rank in the group, or None when it is not a member.
    `_comm` is the MPI communicator (None when simulated or not a member); `digests` the
    eager check's exchange on it (communication/digest_exchange.py, made with it).
    """

    name: str
    ranks: tuple[int, ...]
    rank: int | None
    simulated: bool
    _comm: Any = field(default=None, repr=False)
    digests: Any = field(default=None, repr=False)

    @property
    def size(self) -> int:
        return len(self.ranks)

    def comm(self, op_name: str = "") -> Any:
        """The MPI communicator; a clear error when the world is simulated or we are not in it."""
        if self._comm is not None:
            return self._comm
        who = f"For '{op_name}', " if op_name else ""
        if self.rank is None:        # checked first: a simulation fails as the real world would
            raise ValueError(f"{who}this process is not a member of group '{self.name}' "
                             f"(ranks {list(self.ranks)}).")
        raise SimulationError(
            f"{who}data cannot move in a simulated world (group '{self.name}' of "
            f"{self.size} ranks): init('simulation', ...) plans and infers only. "
            f"Run under mpiexec/msrun with init() to execute.")
