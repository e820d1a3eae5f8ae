"""The partition pass: from a traced global graph to this rank's local graph.

For every op the pass takes its strategy (or the data-parallel default) and reads the
rules registered beside the op's class (msops.primitives.rules): the sharding rule's
dim spec gives the op's layouts (`strategy.shard`), an out-strategy rule the output
split an out strategy asks for, an expansion rule a local subgraph replacing the op.
It redistributes each input from its producer's layout to the one the op needs, emits
the op (or its expansion) on local shapes, then combines partial results: AllReduce
over the reduced device axes the output leaves out, ReduceScatter over those the
output splits its dim 0 by. Graph inputs and parameters take the layout of their first
consumer (a Parameter with a `parameter_plan`, its planned one): inputs are sliced when
fed, and a Parameter holds only its slice of that layout once the graph's executor is
built (parallel/param_store.py), so no data moves. Every emitted node is re-inferred on
local shapes by `Graph.apply`. The pass names no op: the graph's
structural TupleGetItem and MakeTuple it knows by class.

The pass never moves data: it builds a graph of primitives. Sub-groups are created
here (a world-collective split, on MPI) so that the compiled step only runs kernels.
"""
from __future__ import annotations

from math import prod
from typing import Callable, Sequence

import numpy as np

from msops.common.tensor import contiguous
from msops.graph.ir import Graph, MakeTuple, Node, TupleGetItem
from msops.parallel import context as pctx
from msops.parallel.batch_dims import BatchDims
from msops.parallel.context import ParallelMode, is_parallel, parallel_device_num
from msops.parallel.device_matrix import groups_over
from msops.common.shard_layout import Layout
from msops.parallel.layout import TensorLayout
from msops.parallel.opt_gather import shard_gather
from msops.parallel.opt_shard import OptShard, opt_shard_plan
from msops.parallel.param_layout import record_layout, record_opt_shard_group
from msops.parallel.param_plan import planned_layout
from msops.parallel import param_store  # noqa: F401  (the executor's relayout hook)
from msops.parallel.redistribution_emit import Redistributor
from msops.parallel.op_sharding import (batch_layout, fed_layout, resolve, strategy_shapes,
                                        tensor_inputs)
from msops.parallel.propagation import propagate
from msops.parallel.strategy import OpSharding, data_parallel_strategy, letter_strategy
from msops.parallel.stage_split import infer_stages
from msops.parallel.stages import create_stage_groups, layout_rank, stage_num
from msops.parallel.strategy_ckpt import record_stage, record_strategy
from msops.primitives.comm_ops import AllReduce, ReduceOp, ReduceScatter
from msops.primitives.math_ops import Mul
from msops.primitives.rules import rule_of
from msops.primitives.sharding import DimSpec, ShardedCall, spec_of

__all__ = ["apply_parallel", "annotate_comm_bytes"]


def apply_parallel(graph: Graph) -> Graph:
    """This rank's local graph for `graph`, or `graph` itself when running stand-alone."""
    if not is_parallel():
        return graph
    mode = pctx.get_auto_parallel_context("parallel_mode")
    n = parallel_device_num()
    chosen = propagate(graph, n) if mode == ParallelMode.AUTO_PARALLEL else {}
    return _Partitioner(graph, n, layout_rank(), mode, chosen).run()


def _is_make_tuple(node: Node) -> bool:
    return node.kind == "op" and isinstance(node.prim, MakeTuple)


def _slicer(layout: TensorLayout, rank: int) -> Callable[[np.ndarray], np.ndarray]:
    index = layout.slice_of(rank)
    return lambda full: contiguous(full[index])


class _Partitioner:
    """One pass over the global graph, building the local graph node by node."""

    def __init__(self, graph: Graph, device_num: int, rank: int, mode: str,
                 chosen: dict[int, tuple]) -> None:
        self.g = graph
        self.n = device_num
        self.rank = rank
        self.use_strategies = mode in (ParallelMode.SEMI_AUTO_PARALLEL,
                                       ParallelMode.AUTO_PARALLEL)
        self.chosen = chosen                      # node id -> strategy propagation chose
        self.full_batch = pctx.get_auto_parallel_context("full_batch")
        self.local = Graph(graph.name)
        self.local.pre_run = list(graph.pre_run)
        self.redist = Redistributor(self.local, rank)
        self.env: dict[int, Node] = {}            # global node id -> local node
        self.global_of: dict[int, int] = {}       # local input id -> global input id
        self.gathered: dict[int, Node] = {}       # opt-sharded parameter id -> its gather
        self.batch = BatchDims(graph.inputs) if mode == ParallelMode.DATA_PARALLEL else None

    # -- leaves ------------------------------------------------------------------------
    def run(self) -> Graph:
        for k, node in enumerate(self.g.inputs):
            if not self.full_batch:               # each rank feeds its own batch slice
                self._bind_leaf(node, self._fed_layout(k, node.shape), feed=None)
        made: dict[int, list[int]] = {}          # global node id -> the local op nodes
        for node in self.g.nodes:
            start = len(self.local.nodes)
            self._visit(node)
            made[node.id] = [n.id for n in self.local.nodes[start:]]
        # a recomputed cell's span (Cell.recompute): the local nodes made for its nodes
        self.local.recompute = [frozenset(k for g in span for k in made.get(g, ()))
                                for span in self.g.recompute]
        # pipeline stages: the local nodes made for a node run on its stage (stage_split)
        if stage_num() > 1:
            stages = infer_stages(self.g)
            self.local.stage_of = {k: s for g, s in stages.items() for k in made.get(g, ())}
            for node in self.g.nodes:
                if node.id in stages:
                    record_stage(node.prim, stages[node.id] % stage_num())
            self.local.micro_of = {k: m for g, m in self.g.micro_of.items()
                                   for k in made.get(g, ())}
        self.local.outputs = [self._value(o) for o in self.g.outputs]
        self.local.output_is_tuple = self.g.output_is_tuple
        self.local.output_tree = self.g.output_tree
        # inputs never consumed still need a local node so the executor can bind them
        for node in self.g.inputs:
            if node.id not in self.env:
                self._bind_leaf(node, self._replicated(node.shape), None)
        annotate_comm_bytes(self.local)
        order = {n.id: i for i, n in enumerate(self.g.inputs)}
        self.local.inputs.sort(key=lambda n: order[self.global_of[n.id]])
        return self.local

    def _batch_layout(self, shape: tuple) -> TensorLayout:
        return batch_layout(shape, self.n)

    def _fed_layout(self, index: int, shape: tuple) -> TensorLayout:
        return fed_layout(index, shape, self.n)

    def _replicated(self, shape: tuple) -> TensorLayout:
        return TensorLayout((self.n,), (-1,) * len(shape), shape)

    def _bind_leaf(self, node: Node, layout: TensorLayout, feed: Callable | None) -> Node:
        if node.kind == "input":
            local = self.local.add_input(layout.slice_shape, node.dtype, node.name)
            local.feed = feed
            self.global_of[local.id] = node.id
        elif node.kind == "parameter":     # it holds this slice once the graph is built
            local = self.local.add_parameter(node.value, layout.slice_shape)
            record_layout(node.value, layout)
        else:                                     # tensor constant: slice it now
            local = self.local.add_const(feed(node.value) if feed else node.value)
        local.layout = layout
        self.env[node.id] = local
        return local

    def _value(self, node: Node) -> Node:
        """The local node of a visited global node; a leaf returned as it is gets bound here
        (an input keeps the batch layout, a parameter its plan, else it stays whole)."""
        if node.id not in self.env:
            whole = node.kind == "input" and self.full_batch
            self._input_as(node, self._batch_layout(node.shape) if whole
                           else self._planned(node) or self._replicated(node.shape))
        return self.env[node.id]

    def _planned(self, node: Node) -> TensorLayout | None:
        """The layout a Parameter's `parameter_plan` stores it in (strategies count)."""
        if node.kind != "parameter" or not self.use_strategies:
            return None
        return planned_layout(node.value, node.shape, self.n)

    def _input_as(self, node: Node, layout: TensorLayout) -> Node:
        """The local value of global `node` laid out as `layout` (binding leaves lazily: a
        planned Parameter in its plan, then moved)."""
        if node.id not in self.env:
            planned = self._planned(node)
            if planned is None or planned == layout:
                return self._bind_as(node, layout)
            self._bind_as(node, planned)
        local = self.gathered.get(node.id, self.env[node.id])
        return self.redist.convert(local, local.layout, layout, node.source)

    def _bind_as(self, node: Node, layout: TensorLayout) -> Node:
        """Leaf `node` bound in `layout` (a Parameter the parallel optimizer shards: as its
        stored shard, gathered to `layout`)."""
        feed = _slicer(layout, self.rank)
        if node.kind == "input" and self.full_batch:
            return self._bind_leaf(node, layout, feed)
        plan = opt_shard_plan(node.value, layout) if node.kind == "parameter" else None
        if plan is not None:                  # the parallel optimizer: stored as a shard
            return self._gather_shard(node, plan, layout)
        if node.kind in ("parameter", "const"):
            return self._bind_leaf(node, layout, feed)
        raise AssertionError(f"node {node} used before it was visited")

    def _gather_shard(self, node: Node, plan: OptShard, layout: TensorLayout) -> Node:
        """The parallel optimizer: `node`'s Parameter bound as its stored shard and gathered
        to `layout` once for the graph, by the op the training step chooses (`opt_gather`):
        one AllGather along dim 0 over the shard group, whose axes are dim 0's minor ones."""
        stored = plan.stored
        local = self._bind_leaf(node, stored, None)        # it holds its shard once built
        group = create_stage_groups(groups_over(stored.device_matrix, plan.shard_axes))
        record_opt_shard_group(node.value, group)
        prim, z = shard_gather(node.value, group)
        # fusion id 1 (MindSpore's for these gathers): one bucket at step start, and their
        # gradients' reduce-scatters fused as the backward completes them
        prim.add_prim_attr("fusion", 1)
        inputs = [local]
        if z is not None:                     # the accumulation buffer, laid out as the gather
            buf = self.local.add_parameter(z, layout.slice_shape)
            buf.layout = layout
            record_layout(z, layout)
            inputs.append(buf)
        out = self.local.apply(prim, inputs, node.source)
        out.layout = layout
        self.gathered[node.id] = out
        return out

    # -- ops ---------------------------------------------------------------------------
    def _visit(self, node: Node) -> None:
        prim = node.prim
        if isinstance(prim, TupleGetItem):
            src = self._value(node.inputs[0])
            index = node.inputs[1].value
            out = self.local.getitem(src, index, node.source)
            out.layout = src.layout[index]
            self.env[node.id] = out
            if self.batch is not None:
                self.batch.getitem(node, node.inputs[0], index)
            return
        if isinstance(prim, MakeTuple):           # consumers unpack it (see _tensor_inputs)
            return
        tensors, consts = self._tensor_inputs(node)
        in_shapes = strategy_shapes(node, tensors)
        lead = len(in_shapes) - len(tensors)          # a shape input's entry comes first
        out_shapes = list(node.shape) if node.is_tuple else [node.shape]
        spec, sh, out_maps, scattered = self._sharding(node, tensors, in_shapes, out_shapes,
                                                       consts)
        dm = sh.device_matrix
        in_layouts = [TensorLayout(dm, m, t.shape) for t, m in zip(tensors, sh.in_maps[lead:])]
        locals_ = [self._input_as(t, lay) for t, lay in zip(tensors, in_layouts)]
        own_outs = [TensorLayout(dm, m, s) for m, s in zip(sh.out_maps, out_shapes)]
        call = ShardedCall(self.local, self._arg_nodes(node, locals_, consts), consts,
                           in_shapes[lead:], [lay.dim_axes for lay in in_layouts],
                           [lay.slice_shape for lay in own_outs],
                           lambda axes: self._group(dm, axes), node.source,
                           [tuple(s.start for s in lay.slice_of(self.rank))
                            for lay in in_layouts],
                           [tuple(s.start for s in lay.slice_of(self.rank)) for lay in own_outs])
        expand = rule_of("expansion", prim)
        out = expand(prim, call) if expand else None
        if out is None:
            out = self.local.apply(prim, call.args(), node.source)
        if sh.partial_axes:       # the op's own node holds partial results in the spec's layout
            out.layout = TensorLayout(dm, sh.out_maps[0], out_shapes[0])
            out = self._combine_partial(node, out, spec, sh, scattered)
        layouts = [TensorLayout(dm, m, s) for m, s in zip(out_maps, out_shapes)]
        out.layout = tuple(layouts) if node.is_tuple else layouts[0]
        self.env[node.id] = out

    def _sharding(self, node: Node, tensors: list, in_shapes: list, out_shapes: list,
                  consts: dict) -> tuple[DimSpec, OpSharding, tuple, tuple]:
        """(spec, sharding, output maps, ReduceScatter axes) of one op, from its rules and
        its strategy (or the data-parallel default); errors name the user's line."""
        prim = node.prim
        try:
            spec = spec_of(prim, in_shapes, out_shapes, consts)
            if prim.assigns_input is not None:      # a write keeps its Parameter's layout
                strategy, out_s = self._written_layout(node, len(in_shapes)), None
            elif node.id in self.chosen:            # sharding propagation's choice
                strategy, out_s = self.chosen[node.id], None
            elif self.use_strategies and prim.in_strategy:
                strategy, out_s = prim.in_strategy, prim.out_strategy
            elif self.batch is not None:            # data_parallel: split the batch only
                letter = self.batch.letter(tensors, spec, len(in_shapes) - len(tensors))
                self.batch.record(node, spec, letter)
                strategy = letter_strategy(spec, in_shapes, self.n, out_shapes, letter)
                out_s = None
            else:
                strategy, out_s = data_parallel_strategy(spec, in_shapes, self.n, out_shapes), None
            sh, out_maps, scattered = resolve(prim, spec, strategy, out_s, in_shapes,
                                              out_shapes, self.n)
            record_strategy(prim, sh.strategy)
            return spec, sh, out_maps, scattered
        except ValueError as err:
            raise ValueError(f"{err}\n  In {node.source}") from None

    def _written_layout(self, node: Node, n_inputs: int) -> tuple:
        """The strategy of an op writing a Parameter in place (`assigns_input`): the layout
        the Parameter is bound with (replicated if nothing read it yet), for every input."""
        local = self._value(node.inputs[node.prim.assigns_input])
        lay = local.layout
        names = tuple(f"axis{i}" for i in range(len(lay.device_matrix)))

        def alias(k: int) -> str:
            return "None" if k == -1 else names[len(names) - 1 - k]
        dims = tuple(tuple(alias(k) for k in m) if isinstance(m, tuple) else alias(m)
                     for m in lay.tensor_map)
        return (Layout(tuple(lay.device_matrix), names)(*dims),) * n_inputs

    def _tensor_inputs(self, node: Node) -> tuple[list[Node], dict]:
        return tensor_inputs(node)

    def _arg_nodes(self, node: Node, locals_: list[Node], consts: dict) -> list[Node | None]:
        """Per input of `node`: its local tensor (a tuple input packed again), None for consts."""
        out: list[Node | None] = []
        it = iter(locals_)
        for i, inp in enumerate(node.inputs):
            if i in consts:
                out.append(None)
            elif _is_make_tuple(inp):
                out.append(self.local.make_tuple([next(it) for _ in inp.inputs], node.source))
            else:
                out.append(next(it))
        return out

    # -- op-internal communication -----------------------------------------------------
    def _group(self, dm: tuple, axes: Sequence[int]) -> str:
        return create_stage_groups(groups_over(dm, tuple(axes)))

    def _combine_partial(self, node: Node, out: Node, spec: DimSpec, sh: OpSharding,
                         scattered: tuple[int, ...]) -> Node:
        """Combine the partial results over `sh.partial_axes`: ReduceScatter over the
        `scattered` axes, AllReduce over the others; a "mean" sums, then divides by the parts."""
        dm, src = sh.device_matrix, node.source
        summed = tuple(a for a in sh.partial_axes if a not in scattered)
        op = ReduceOp.SUM if spec.partial_op == "mean" else spec.partial_op
        if summed:
            out = self.local.apply(AllReduce(op, self._group(dm, summed)), [out], src)
        if scattered:
            out = self.local.apply(ReduceScatter(op, self._group(dm, scattered)), [out], src)
        if spec.partial_op == "mean":
            parts = prod(sh.axis_size(a) for a in sh.partial_axes)
            scale = self.local.add_const(np.asarray(1.0 / parts, dtype=node.dtype.np_dtype))
            out = self.local.apply(Mul(), [out, scale], src)
        return out


def annotate_comm_bytes(graph: Graph) -> None:
    """Give every communication node without one its bytes per rank (dumps show them)."""
    for node in graph.nodes:
        if node.is_communication and node.comm_bytes is None:
            node.comm_bytes = node.prim.comm_bytes(_nbytes(node.inputs[0]))


def _nbytes(node: Node) -> int:
    return int(prod(node.shape)) * node.dtype.itemsize
