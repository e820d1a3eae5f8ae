"""`mindspore.mint.distributed` (MindSpore 2.5+): torch.distributed's API over msops's
MPI collectives. Collectives write into the caller's Tensors and return None or a
completed CommHandle; `src`/`dst`/`peer` are global ranks; a group is its name."""
from msops.communication._comm_call import CommHandle
from msops.mint.distributed.collectives import *  # noqa: F401,F403
from msops.mint.distributed.collectives import __all__ as _collectives_all
from msops.mint.distributed.objects import *  # noqa: F401,F403
from msops.mint.distributed.objects import __all__ as _objects_all
from msops.mint.distributed.process_group import *  # noqa: F401,F403
from msops.mint.distributed.process_group import __all__ as _groups_all
from msops.mint.distributed.uneven import *  # noqa: F401,F403
from msops.mint.distributed.uneven import __all__ as _uneven_all
from msops.primitives.collective import ReduceOp

__all__ = list(_groups_all) + list(_collectives_all) + list(_uneven_all) + \
    list(_objects_all) + ["CommHandle", "ReduceOp"]
