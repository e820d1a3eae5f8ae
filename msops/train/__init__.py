"""Training utilities above nn: checkpoint files (save, load, load into a network, reshard)."""
from msops.train.merge import load_distributed_checkpoint, merge_sliced_parameter
from msops.train.serialization import load_checkpoint, load_param_into_net, save_checkpoint
from msops.train.transform import transform_checkpoints

__all__ = ["save_checkpoint", "load_checkpoint", "load_param_into_net",
           "merge_sliced_parameter", "load_distributed_checkpoint", "transform_checkpoints"]
