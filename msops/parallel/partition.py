"""The partition pass: from a traced global graph to this rank's local graph.

For every op the pass takes its strategy (or the data-parallel default), checks it,
derives the op's layouts from its family's dim spec, redistributes each input from
its producer's layout to the one the op needs, emits the op on local shapes, and
then the communication the op itself needs (AllReduce of partial sums, or
ReduceScatter when the out strategy asks for it). Graph inputs and parameters take
the layout of their first consumer and are sliced when fed, so no data moves for
them. Every emitted node is re-inferred on local shapes by `Graph.apply`.

The pass never moves data: it builds a graph of primitives. Sub-groups are created
here (a world-collective split, on MPI) so that the compiled step only runs kernels.
"""
from __future__ import annotations

from math import prod
from typing import Any, Callable, Sequence

import numpy as np

from msops.communication import create_group_partition, get_rank
from msops.graph.ir import Graph, Node
from msops.parallel import context as pctx
from msops.parallel.context import ParallelMode, is_parallel, parallel_device_num
from msops.parallel.device_matrix import groups_over
from msops.parallel.layout import TensorLayout
from msops.parallel.redistribution_emit import Redistributor
from msops.parallel.rules import spec_of
from msops.parallel.strategy import (OpSharding, check_divisible, check_strategy_format,
                                     data_parallel_strategy, shard)
from msops.primitives import comm_ops, math_ops

__all__ = ["apply_parallel"]


def apply_parallel(graph: Graph) -> Graph:
    """This rank's local graph for `graph`, or `graph` itself when running stand-alone."""
    if not is_parallel():
        return graph
    mode = pctx.get_auto_parallel_context("parallel_mode")
    if mode == ParallelMode.AUTO_PARALLEL:
        raise NotImplementedError("For 'set_auto_parallel_context', parallel_mode "
                                  "'auto_parallel' (strategy search) is not supported yet: "
                                  "use 'semi_auto_parallel' with shard() strategies.")
    return _Partitioner(graph, parallel_device_num(), get_rank(), mode).run()


def _slicer(layout: TensorLayout, rank: int) -> Callable[[np.ndarray], np.ndarray]:
    index = layout.slice_of(rank)
    return lambda full: np.ascontiguousarray(full[index])


class _Partitioner:
    """One pass over the global graph, building the local graph node by node."""

    def __init__(self, graph: Graph, device_num: int, rank: int, mode: str) -> None:
        self.g = graph
        self.n = device_num
        self.rank = rank
        self.use_strategies = mode == ParallelMode.SEMI_AUTO_PARALLEL
        self.full_batch = pctx.get_auto_parallel_context("full_batch")
        self.local = Graph(graph.name)
        self.redist = Redistributor(self.local, rank)
        self.env: dict[int, Node] = {}            # global node id -> local node
        self.global_of: dict[int, int] = {}       # local input id -> global input id

    # -- leaves ------------------------------------------------------------------------
    def run(self) -> Graph:
        for node in self.g.inputs:
            if not self.full_batch:               # each rank feeds its own batch slice
                layout = self._batch_layout(node.shape)
                self._bind_leaf(node, layout, feed=None)
        for node in self.g.nodes:
            self._visit(node)
        self.local.outputs = [self._value(o) for o in self.g.outputs]
        self.local.output_is_tuple = self.g.output_is_tuple
        # inputs never consumed still need a local node so the executor can bind them
        for node in self.g.inputs:
            if node.id not in self.env:
                self._bind_leaf(node, self._replicated(node.shape), None)
        for node in self.local.nodes:
            if node.is_communication and node.comm_bytes is None:
                node.comm_bytes = comm_bytes(node)
        order = {n.id: i for i, n in enumerate(self.g.inputs)}
        self.local.inputs.sort(key=lambda n: order[self.global_of[n.id]])
        return self.local

    def _batch_layout(self, shape: tuple) -> TensorLayout:
        split = bool(shape) and shape[0] % self.n == 0 and self.n > 1
        tmap = ((0,) if split else (-1,)) + (-1,) * (len(shape) - 1) if shape else ()
        return TensorLayout((self.n,), tmap, shape)

    def _replicated(self, shape: tuple) -> TensorLayout:
        return TensorLayout((self.n,), (-1,) * len(shape), shape)

    def _bind_leaf(self, node: Node, layout: TensorLayout, feed: Callable | None) -> Node:
        if node.kind == "input":
            local = self.local.add_input(layout.slice_shape, node.dtype, node.name)
            local.feed = feed
            self.global_of[local.id] = node.id
        elif node.kind == "parameter":
            local = self.local.add_parameter(node.value, layout.slice_shape)
            local.feed = feed
        else:                                     # tensor constant: slice it now
            local = self.local.add_const(feed(node.value) if feed else node.value)
        local.layout = layout
        self.env[node.id] = local
        return local

    def _value(self, node: Node) -> Node:
        """The local node of a visited global node; a leaf returned as it is gets bound here
        (an input keeps the batch layout, a parameter or constant stays whole)."""
        if node.id not in self.env:
            whole = node.kind == "input" and self.full_batch
            self._input_as(node, self._batch_layout(node.shape) if whole
                           else self._replicated(node.shape))
        return self.env[node.id]

    def _input_as(self, node: Node, layout: TensorLayout) -> Node:
        """The local value of global `node` laid out as `layout` (binding leaves lazily)."""
        if node.id not in self.env:
            feed = _slicer(layout, self.rank)
            if node.kind == "input" and self.full_batch:
                return self._bind_leaf(node, layout, feed)
            if node.kind in ("parameter", "const"):
                return self._bind_leaf(node, layout, feed)
            raise AssertionError(f"node {node} used before it was visited")
        local = self.env[node.id]
        return self.redist.convert(local, local.layout, layout, node.source)

    # -- ops ---------------------------------------------------------------------------
    def _visit(self, node: Node) -> None:
        prim = node.prim
        if prim.name == "TupleGetItem":
            src = self._value(node.inputs[0])
            index = node.inputs[1].value
            out = self.local.getitem(src, index, node.source)
            out.layout = src.layout[index]
            self.env[node.id] = out
            return
        if prim.name == "MakeTuple":              # consumers unpack it (see _tensor_inputs)
            return
        if prim.is_communication:
            raise ValueError(f"For '{prim.name}', explicit communication ops cannot be used "
                             f"inside a parallel graph (parallel_mode is set); the framework "
                             f"inserts the collectives that layouts need.\n  In {node.source}")
        family = getattr(prim, "sharding", None)
        if family == "reshape":
            self._visit_reshape(node)
            return
        tensors, consts = self._tensor_inputs(node)
        in_shapes = [t.shape for t in tensors]
        out_shapes = list(node.shape) if node.is_tuple else [node.shape]
        spec = spec_of(prim, in_shapes, out_shapes, consts)
        strategy = prim.in_strategy if (self.use_strategies and prim.in_strategy) else \
            data_parallel_strategy(spec, in_shapes, self.n)
        try:
            sh = shard(prim.name, spec, strategy, in_shapes, self.n)
        except ValueError as err:
            raise ValueError(f"{err}\n  In {node.source}") from None
        locals_ = [self._input_as(t, TensorLayout(sh.device_matrix, m, t.shape))
                   for t, m in zip(tensors, sh.in_maps)]
        out_layouts = [TensorLayout(sh.device_matrix, m, s)
                       for m, s in zip(sh.out_maps, out_shapes)]
        out = self._emit(node, locals_, consts, sh, out_layouts)
        self.env[node.id] = out

    def _tensor_inputs(self, node: Node) -> tuple[list[Node], dict]:
        """Global tensor inputs of `node` (a MakeTuple input is unpacked) and its consts."""
        tensors, consts = [], {}
        for i, inp in enumerate(node.inputs):
            if i in node.prim.const_inputs or (inp.kind == "const" and inp.dtype is None):
                consts[i] = inp.value
            elif inp.kind == "op" and inp.prim.name == "MakeTuple":
                tensors.extend(inp.inputs)
            else:
                tensors.append(inp)
        return tensors, consts

    def _emit(self, node: Node, locals_: list[Node], consts: dict, sh: OpSharding,
              out_layouts: list[TensorLayout]) -> Node:
        prim = node.prim
        args: list[Any] = []
        it = iter(locals_)
        for i, inp in enumerate(node.inputs):
            if i in consts:
                args.append(self.local.add_const(consts[i]))
            elif inp.kind == "op" and inp.prim.name == "MakeTuple":
                args.append(self.local.make_tuple([next(it) for _ in inp.inputs], node.source))
            else:
                args.append(next(it))
        expand = self._expansion(prim, sh)
        out = expand(node, args, sh) if expand else self.local.apply(prim, args, node.source)
        if sh.partial_axes:          # the op's own node holds partial sums in this layout
            out.layout = tuple(out_layouts) if node.is_tuple else out_layouts[0]
            out = self._reduce_partial(node, out, sh, out_layouts)
        if node.is_tuple:
            out.layout = tuple(out_layouts)
        else:
            out.layout = out_layouts[0]
        return out

    # -- op-internal communication -----------------------------------------------------
    def _group(self, dm: tuple, axes: Sequence[int]) -> str:
        return create_group_partition(groups_over(dm, tuple(axes)))

    def _reduce_partial(self, node: Node, out: Node, sh: OpSharding,
                        out_layouts: list[TensorLayout]) -> Node:
        """Sum the partial results over the reduced axes: AllReduce, or ReduceScatter when the
        out strategy splits dim 0 further; ReduceMean also divides by the split count."""
        prim = node.prim
        dm = sh.device_matrix
        k = prod(sh.axis_size(a) for a in sh.partial_axes)
        group = self._group(dm, sh.partial_axes)
        out_s = prim.out_strategy if self.use_strategies else None
        if out_s is not None:
            out, layout = self._reduce_scatter(node, out, sh, out_s, group, out_layouts[0])
            out_layouts[0] = layout
        else:
            op = getattr(prim, "partial_op", comm_ops.ReduceOp.SUM)
            out = self.local.apply(comm_ops.AllReduce(op, group), [out], node.source)
        if getattr(prim, "sharding", None) == "reduce" and prim.name == "ReduceMean":
            scale = np.asarray(1.0 / k, dtype=node.dtype.np_dtype)
            out = self.local.apply(math_ops.Mul(), [out, self.local.add_const(scale)],
                                   node.source)
        return out

    def _reduce_scatter(self, node: Node, out: Node, sh: OpSharding, out_s: tuple,
                        group: str, layout: TensorLayout) -> tuple[Node, TensorLayout]:
        """MatMul with out strategy ((.., a*b, c),): ReduceScatter the partial sum along the
        rows, which then split over their own axes and the reduction axis (b, minor)."""
        parts = [layout.dim_parts(d) for d in range(len(layout.tensor_shape))]
        if len(parts) != 2 or len(sh.partial_axes) != 1:
            raise ValueError(f"For '{node.prim.name}', an 'out_strategy' (a ReduceScatter along "
                             f"dim 0) needs a 2-D output and one split reduction dim, but got "
                             f"a {len(parts)}-D output and {len(sh.partial_axes)} split "
                             f"reduction dims.\n  In {node.source}")
        parts[-2] *= sh.axis_size(sh.partial_axes[0])
        if len(out_s) != 1 or tuple(out_s[0]) != tuple(parts):
            raise ValueError(f"For '{node.prim.name}', the 'out_strategy' should be "
                             f"({tuple(parts)},) (rows split by the reduction too, for a "
                             f"ReduceScatter), but got {out_s}.\n  In {node.source}")
        rows = layout.dim_axes[-2] + sh.partial_axes
        tmap = layout.tensor_map[:-2] + (rows if len(rows) > 1 else rows[0],
                                         layout.tensor_map[-1])
        rs = self.local.apply(comm_ops.ReduceScatter(comm_ops.ReduceOp.SUM, group), [out],
                              node.source)
        return rs, TensorLayout(sh.device_matrix, tmap, layout.tensor_shape)

    def _expansion(self, prim: Any, sh: OpSharding) -> Callable | None:
        """A local subgraph replacing the op when its split dims need cross-rank reductions
        inside it (not just before or after): training BatchNorm with a split batch, the
        softmax cross-entropy with a split class dim."""
        if prim.sharding == "batchnorm" and prim.attrs.get("is_training"):
            c_axis = prim.channel_axis(len(sh.in_maps[0]))
            if any(m != -1 for d, m in enumerate(sh.in_maps[0]) if d != c_axis):
                return self._batchnorm_global
        if prim.name == "SoftmaxCrossEntropyWithLogits" and sh.in_maps[0][1] != -1:
            return self._softmax_ce_split
        return None

    def _softmax_ce_split(self, node: Node, args: list[Node], sh: OpSharding) -> Node:
        """SoftmaxCrossEntropyWithLogits with the class dim split over a device axis: the row
        max, the sum of exponentials and the label dot-product are AllReduced across the class
        group (three (N,)-sized collectives instead of gathering (N, C) logits)."""
        g, src = self.local, node.source
        logits, labels = args
        group = self._group(sh.device_matrix, (sh.in_maps[0][1],))
        one = g.add_const((1,))

        def across(t: Node, op: str) -> Node:
            return g.apply(comm_ops.AllReduce(op, group), [t], src)

        row_max = across(g.apply(math_ops.ReduceMax(keep_dims=True), [logits, one], src),
                         comm_ops.ReduceOp.MAX)
        shifted = g.apply(math_ops.Sub(), [logits, row_max], src)
        exp = g.apply(math_ops.Exp(), [shifted], src)
        total = across(g.apply(math_ops.ReduceSum(keep_dims=True), [exp, one], src),
                       comm_ops.ReduceOp.SUM)
        log_p = g.apply(math_ops.Sub(), [shifted, g.apply(math_ops.Log(), [total], src)], src)
        dot = g.apply(math_ops.ReduceSum(keep_dims=False),
                      [g.apply(math_ops.Mul(), [labels, log_p], src), one], src)
        loss = g.apply(math_ops.Neg(), [across(dot, comm_ops.ReduceOp.SUM)], src)
        grad = g.apply(math_ops.Sub(), [g.apply(math_ops.RealDiv(), [exp, total], src), labels],
                       src)
        return g.make_tuple([loss, grad], src)

    def _batchnorm_global(self, node: Node, args: list[Node], sh: OpSharding) -> Node:
        """Training BatchNorm with a split batch: global mean and (biased) variance by two
        AllReduces, the inference-mode kernel normalises with them, and the moving
        statistics update as the serial op's do — so the sharded net equals the serial one."""
        from msops.primitives import array_ops, nn_ops
        x, scale, bias, moving_mean, moving_var = args
        g, src, prim = self.local, node.source, node.prim
        ndim = len(x.shape)
        c_axis = prim.channel_axis(ndim)
        split_axes = sorted({m for d, m in enumerate(sh.in_maps[0]) if d != c_axis and m != -1})
        group = self._group(sh.device_matrix, split_axes)
        red_axes = tuple(d for d in range(ndim) if d != c_axis)
        count = prod(node.inputs[0].shape[d] for d in red_axes)

        stats_dtype = moving_mean.dtype          # statistics live in the parameters' dtype
        xs = x if x.dtype == stats_dtype else \
            g.apply(math_ops.Cast(), [x, g.add_const(stats_dtype)], src)

        def const(v: float) -> Node:
            return g.add_const(np.asarray(v, dtype=stats_dtype.np_dtype))

        def global_mean(t: Node) -> Node:
            t = g.apply(math_ops.ReduceSum(keep_dims=False), [t, g.add_const(red_axes)], src)
            t = g.apply(comm_ops.AllReduce(comm_ops.ReduceOp.SUM, group), [t], src)
            return g.apply(math_ops.Mul(), [t, const(1.0 / count)], src)

        mean = global_mean(xs)
        bshape = tuple(x.shape[d] if d == c_axis else 1 for d in range(ndim))
        mean_b = g.apply(array_ops.Reshape(), [mean, g.add_const(bshape)], src)
        var = global_mean(g.apply(math_ops.Square(),
                                  [g.apply(math_ops.Sub(), [xs, mean_b], src)], src))
        infer_bn = nn_ops.BatchNorm(is_training=False, epsilon=prim.epsilon,
                                    momentum=prim.momentum, data_format=prim.data_format)
        y = g.getitem(g.apply(infer_bn, [x, scale, bias, mean, var], src), 0, src)
        m = prim.momentum

        def moving(old: Node, batch: Node) -> Node:
            keep = g.apply(math_ops.Mul(), [old, g.add_const(
                np.asarray(1 - m, dtype=old.dtype.np_dtype))], src)
            new = g.apply(math_ops.Mul(), [batch, g.add_const(
                np.asarray(m, dtype=batch.dtype.np_dtype))], src)
            return g.apply(math_ops.Add(), [keep, new], src)

        return g.make_tuple([y, moving(moving_mean, mean), moving(moving_var, var), mean, var],
                            src)

    # -- reshape -----------------------------------------------------------------------
    def _visit_reshape(self, node: Node) -> None:
        """Reshape keeps a dim-0 split when dim 0 is unchanged; otherwise it runs replicated."""
        prim = node.prim
        x = node.inputs[0]
        out_shape = node.shape
        strategy = prim.in_strategy if (self.use_strategies and prim.in_strategy) else None
        k = 1
        if strategy is not None:
            check_strategy_format(prim.name, strategy, [x.shape])
            check_divisible(prim.name, strategy, [x.shape])
            k = strategy[0][0] if x.shape else 1
            if any(v != 1 for v in strategy[0][1:]) or (k > 1 and (
                    not out_shape or out_shape[0] != x.shape[0])):
                raise ValueError(f"For '{prim.name}', only dim 0 may be split, and only when "
                                 f"the reshape keeps dim 0 ({x.shape} -> {out_shape}), but "
                                 f"got strategy {strategy}.\n  In {node.source}")
            if self.n % k:
                raise ValueError(f"For '{prim.name}', the strategy {strategy} uses {k} "
                                 f"devices, which should divide the device number {self.n}.")
        elif x.shape and out_shape and out_shape[0] == x.shape[0] and x.shape[0] % self.n == 0:
            k = self.n
        dm = (k, self.n // k) if self.n // k > 1 else (k,)
        if k > 1:
            in_map = (len(dm) - 1,) + (-1,) * (len(x.shape) - 1)
            out_map = (len(dm) - 1,) + (-1,) * (len(out_shape) - 1)
        else:
            dm, in_map, out_map = (self.n,), (-1,) * len(x.shape), (-1,) * len(out_shape)
        src = self._input_as(x, TensorLayout(dm, in_map, x.shape))
        out_layout = TensorLayout(dm, out_map, out_shape)
        out = self.local.apply(prim, [src, self.local.add_const(tuple(out_layout.slice_shape))],
                               node.source)
        out.layout = out_layout
        self.env[node.id] = out


def _nbytes(node: Node) -> int:
    return int(prod(node.shape)) * node.dtype.itemsize


def comm_bytes(node: Node) -> int:
    """Bytes one rank sends in a collective node (ring/pairwise algorithms): AllReduce
    2(k-1)/k·S, ReduceScatter (k-1)/k·S_in, AllGather (k-1)·S_in, AlltoAll (k-1)/k·S."""
    k = node.prim.rank_size
    s_in = _nbytes(node.inputs[0])
    return {"AllReduce": 2 * (k - 1) * s_in // k, "ReduceScatter": (k - 1) * s_in // k,
            "AllGather": (k - 1) * s_in, "AlltoAll": (k - 1) * s_in // k}.get(node.op, s_in)
