"""Training utilities above nn: checkpoint files (save, load, load into a network)."""
from msops.train.serialization import load_checkpoint, load_param_into_net, save_checkpoint

__all__ = ["save_checkpoint", "load_checkpoint", "load_param_into_net"]
