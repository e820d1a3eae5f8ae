"""`mindspore.parallel.nn` (MindSpore 2.6+): the parallel training cells under the names
that API gives them. They are msops's nn cells (`PipelineCell`, `GradAccumulationCell`,
...), so this module sits in the `nn` layer though MindSpore spells it under `parallel`."""
from __future__ import annotations


from msops.nn.cell import Cell
from msops.nn.grad_accumulation import GradAccumulationCell
from msops.nn.micro_batches import MicroBatchInterleaved
from msops.nn.pipeline_cell import PipelineCell, PipelineGradReducer

__all__ = ["Pipeline", "PipelineGradReducer", "GradAccumulation", "MicroBatchInterleaved"]


class Pipeline(PipelineCell):
    """`Pipeline(network, micro_size=1, stage_config=None)`: `nn.PipelineCell` (the
    micro-batch loop over the stages), its `micro_size` defaulting to 1 as MindSpore's."""

    def __init__(self, network: Cell, micro_size: int = 1, stage_config: dict | None = None,
                 segment_config: dict | None = None) -> None:
        super().__init__(network, micro_size, stage_config, segment_config)


class GradAccumulation(GradAccumulationCell):
    """`GradAccumulation(network, micro_size)`: `nn.GradAccumulationCell`, the sum of
    `network`'s losses over `micro_size` dim-0 slices of its inputs."""

    def __init__(self, network: Cell, micro_size: int) -> None:
        super().__init__(network, micro_size)
