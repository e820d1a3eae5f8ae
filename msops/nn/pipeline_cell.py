"""Pipeline parallelism's training cell: `nn.PipelineCell` (as MindSpore's).

It is the micro-batch loop of `GradAccumulationCell` (the sum of the micro-batches'
losses) with the stages of its cells: with `pipeline_stages=S` in the auto-parallel
context, each rank keeps the ops of its stage and the micro-batches flow through the
stages (parallel/stage_split.py). `stage_config` sets `pipeline_stage` by cell name, and
`segment_config` `pipeline_segment` (virtual stages, with `pipeline_interleave`).
"""
from __future__ import annotations

from typing import Any

from msops.common import validator
from msops.common.tensor import Parameter
from msops.nn.cell import Cell
from msops.nn.grad_accumulation import GradAccumulationCell
from msops.nn.wrap import grads_of
from msops.parallel.stages import stage_num

__all__ = ["PipelineCell", "PipelineGradReducer"]


class PipelineCell(GradAccumulationCell):
    """`PipelineCell(network, micro_size, stage_config=None, segment_config=None)`: `network`
    (returning the loss) run on `micro_size` equal dim-0 slices of its inputs, returning
    the sum of the micro losses; `micro_size` should be at least `pipeline_stages`.

    stage_config: {cell name: stage}, names as `network.cells_and_names()` gives them
    (or prefixed with "network.", the name inside this cell); segment_config: {cell name:
    virtual segment} likewise (`pipeline_config={"pipeline_interleave": True}`).

    >>> net.layer1.pipeline_stage, net.layer2.pipeline_stage = 0, 1
    >>> step = nn.TrainOneStepCell(nn.PipelineCell(nn.WithLossCell(net, loss), 4), opt)
    """

    scheduled = True

    def __init__(self, network: Cell, micro_size: int, stage_config: dict | None = None,
                 segment_config: dict | None = None) -> None:
        super().__init__(network, micro_size)
        for arg, config, prop in (("stage_config", stage_config, "pipeline_stage"),
                                  ("segment_config", segment_config, "pipeline_segment")):
            if config is not None:
                self._configure(network, arg, config, prop)

    def _configure(self, network: Cell, arg: str, config: dict, prop: str) -> None:
        """Set `prop` of the cells `config` names ({cell name: value})."""
        validator.check_value_type(arg, config, dict, self.cls_name)
        cells = dict(network.cells_and_names())
        for name, value in config.items():
            key = name[len("network."):] if name not in cells and \
                name.startswith("network.") else name
            if key not in cells:
                raise ValueError(f"For '{self.cls_name}', the '{arg}' should name cells of "
                                 f"the network, but got '{name}' (cells: "
                                 f"{sorted(k for k in cells if k)[:8]}...).")
            setattr(cells[key], prop, value)

    def construct(self, *inputs: Any) -> Any:
        stages = stage_num()
        if self.micro_size < stages:
            raise ValueError(f"For '{self.cls_name}', the 'micro_size' should be >= "
                             f"pipeline_stages: {stages}, but got {self.micro_size}.")
        return super().construct(*inputs)


class PipelineGradReducer(Cell):
    """`PipelineGradReducer(parameters, scale_sense=1.0, opt_shard=None)`: the gradients of
    a PipelineCell's step, ready for the optimizer, divided by `scale_sense`.

    MindSpore's cell reads the micro-batches' gradients from accumulation buffers its
    compiler fills. msops's backward of a PipelineCell sums the micro-batches' gradients
    itself (and reduces them over a stage's replicas), so this cell only scales them; it is
    what MindSpore's functional pipeline step calls between `value_and_grad` and the
    optimizer:

    >>> reducer = nn.PipelineGradReducer(opt.parameters)
    >>> loss, grads = grad_fn(x, y); opt(reducer(grads))
    """

    def __init__(self, parameters: Any, scale_sense: float = 1.0,
                 opt_shard: bool | None = None) -> None:
        super().__init__(auto_prefix=False)
        name = self.cls_name
        params = tuple(parameters) if isinstance(parameters, (list, tuple)) else None
        if params is None or any(not isinstance(p, Parameter) for p in params):
            raise TypeError(f"For '{name}', the 'parameters' should be a list or tuple of "
                            f"Parameters (the optimizer's), but got {parameters!r:.80}.")
        validator.check_value_type("scale_sense", scale_sense, (int, float), name)
        if isinstance(scale_sense, bool) or not scale_sense > 0:
            raise ValueError(f"For '{name}', the 'scale_sense' should be a positive number, "
                             f"but got {scale_sense!r}.")
        if opt_shard is not None:
            validator.check_bool("opt_shard", opt_shard, name)
        self.parameters = params
        self.scale_sense = float(scale_sense)
        self.opt_shard = opt_shard

    def construct(self, grads: Any) -> tuple:
        grads = grads_of(self.cls_name, grads, self.parameters)
        if self.scale_sense == 1.0:
            return grads
        return tuple(g / self.scale_sense for g in grads)
