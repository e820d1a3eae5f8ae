"""Strategy search for `parallel_mode="auto_parallel"`: sharding propagation and a local search.

Every op of the global graph gets a strategy. Ops whose primitive was given one by
`shard` keep it (a tuple or Layout strategy). The others choose among candidates
enumerated from their own sharding rule: every split of the rule's splittable letters by
divisors of the device count that the rule and the shapes accept. A candidate is priced
against the neighbours already decided, lexicographically:

1. bytes one rank sends: redistributing each decided producer's output into the
   candidate's input layout and the candidate's output into each decided consumer's
   input layout (`redistribution_plan.plan`, the planner the pass itself uses), plus the
   candidate's own combination of partial sums (AllReduce 2(k-1)/k, ReduceScatter
   (k-1)/k of the partial output, as those collectives' `comm_bytes` count it);
2. bytes of the op's local inputs and outputs (memory and work: finer splits win ties);
3. the enumeration order (deterministic, so every rank chooses alike).

`search_mode="sharding_propagation"` (MindSpore's): breadth-first from the configured
ops over the graph's edges, forwards and backwards; each unconfigured op reached takes
its cheapest candidate given its decided neighbours. When the queue empties with ops
left (no configured op reaches them), the first of them in execution order takes the
data-parallel default and the walk goes on from it.
`"recursive_programming"` / `"dynamic_programming"`: the same walk, then sweeps in which
every unconfigured op re-chooses given all its neighbours, until no op changes (a local
search over the same cost model, not MindSpore's algorithms).

Graph inputs fed per rank (full_batch=False) have their fed layout (dataset_strategy) and
Parameters with a `parameter_plan` their planned one; other inputs, parameters and
constants take the layout of their first consumer (the pass slices them
when fed), so only their later consumers pay to redistribute them. The pass names no op.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import prod
from typing import Iterator, Sequence

from msops.graph.ir import Graph, MakeTuple, Node, TupleGetItem
from msops.parallel import context as pctx
from msops.parallel.algo_parameter_config import algo_parameter
from msops.parallel.layout import TensorLayout
from msops.parallel.op_sharding import fed_layout, resolve, strategy_shapes, tensor_inputs
from msops.parallel.param_plan import planned_layout
from msops.parallel.redistribution_plan import plan, plan_bytes
from msops.parallel.strategy import data_parallel_strategy
from msops.primitives.sharding import DimSpec, spec_of

__all__ = ["propagate"]

_SWEEPS = 8          # local-search rounds at most (each is one pass over the ops)


@dataclass(frozen=True)
class _Choice:
    """One strategy of an op: its input and output layouts and its own costs."""

    strategy: tuple
    ins: tuple[TensorLayout, ...]
    outs: tuple[TensorLayout, ...]
    own_bytes: int
    local_bytes: int


class _Op:
    """One op of the global graph as the search sees it."""

    def __init__(self, node: Node, n: int) -> None:
        self.node = node
        self.tensors, self.consts = tensor_inputs(node)
        self.in_shapes = strategy_shapes(node, self.tensors)
        self.lead = len(self.in_shapes) - len(self.tensors)   # a shape input's entry
        self.out_shapes = [tuple(s) for s in node.shape] if node.is_tuple else [tuple(node.shape)]
        dtypes = node.dtype if node.is_tuple else (node.dtype,)
        self.itemsizes = [t.dtype.itemsize for t in self.tensors]
        self.out_itemsizes = [d.itemsize for d in dtypes]
        self.spec: DimSpec = spec_of(node.prim, self.in_shapes, self.out_shapes, self.consts)
        self.n = n
        self._candidates: list[_Choice] | None = None

    def choice(self, strategy: tuple, out_strategy: tuple | None = None) -> _Choice:
        prim = self.node.prim
        sh, out_maps, scattered = resolve(prim, self.spec, strategy, out_strategy,
                                          self.in_shapes, self.out_shapes, self.n)
        dm = sh.device_matrix
        ins = tuple(TensorLayout(dm, m, s) for m, s in zip(sh.in_maps, self.in_shapes)
                    )[self.lead:]
        outs = tuple(TensorLayout(dm, m, s) for m, s in zip(out_maps, self.out_shapes))
        own = 0
        if sh.partial_axes:
            part = TensorLayout(dm, sh.out_maps[0], self.out_shapes[0])
            size = prod(part.slice_shape) * self.out_itemsizes[0]
            summed = prod(sh.axis_size(a) for a in sh.partial_axes if a not in scattered)
            spread = prod(sh.axis_size(a) for a in scattered)
            own = 2 * (summed - 1) * size // summed + (spread - 1) * size // spread
        local = sum(prod(lay.slice_shape) * b for lay, b in zip(ins, self.itemsizes)) + \
            sum(prod(lay.slice_shape) * b for lay, b in zip(outs, self.out_itemsizes))
        return _Choice(strategy, ins, outs, own, local)

    def candidates(self) -> list[_Choice]:
        """Every strategy the rule and shapes accept, each split a divisor of n (made once);
        with fully_use_devices only those using all n devices, when the op has any."""
        if self._candidates is None:
            made: list[tuple[_Choice, int]] = []
            for strategy, used in _strategies(self.spec, self.in_shapes, self.n):
                try:
                    made.append((self.choice(strategy), used))
                except ValueError:
                    continue
            full = [c for c, used in made if used == self.n]
            self._candidates = full if full and algo_parameter("fully_use_devices") \
                else [c for c, _ in made]
        return self._candidates

    def elementwise(self) -> bool:
        """One output whose dims are the inputs' dims, aligned from the right (ReLU, Add,
        Cast, ...): nothing reduced, moved or made."""
        if len(self.spec.outs) != 1:
            return False
        out = self.spec.outs[0]
        return all(len(ins) <= len(out) and all(
            a is None or a == b for a, b in zip(ins, out[len(out) - len(ins):]))
            for ins in self.spec.ins) and set(out) <= {a for ins in self.spec.ins for a in ins}


def _strategies(spec: DimSpec, shapes: Sequence[tuple], n: int) -> Iterator[tuple[tuple, int]]:
    """(strategy, devices it uses) of every split of the splittable letters by divisors
    of n whose product divides n."""
    forbidden = {letter for letter, _ in spec.unsplittable}
    size: dict[str, int] = {}
    for ins, shp in zip(spec.ins, shapes):
        for letter, d in zip(ins, shp):
            if letter is not None and letter not in forbidden:
                size[letter] = d if letter not in size else min(size[letter], d)
    letters = list(size)
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    options = [[f for f in divisors if size[l] >= 0 and size[l] % f == 0] for l in letters]
    for combo in itertools.product(*options):
        if n % prod(combo):
            continue
        split = dict(zip(letters, combo))
        yield tuple(tuple(split.get(l, 1) for l in ins) for ins in spec.ins), prod(combo)


class _Search:
    """The graph's ops, their edges, and the choices made so far."""

    def __init__(self, graph: Graph, n: int) -> None:
        self.n = n
        self.full_batch = pctx.get_auto_parallel_context("full_batch")
        self.alltoall = pctx.get_auto_parallel_context("enable_alltoall")   # as the pass plans
        self.ops = {node.id: _Op(node, n) for node in graph.nodes
                    if not isinstance(node.prim, (TupleGetItem, MakeTuple))}
        self.order = list(self.ops)
        self.input_index = {node.id: k for k, node in enumerate(graph.inputs)}
        # producers[c][j] = (op id, output index) | ("leaf", leaf node); consumers likewise
        self.producers: dict[int, list] = {}
        self.consumers: dict[int, list[tuple[int, int, int]]] = {i: [] for i in self.ops}
        self.leaf_first: dict[int, tuple[int, int]] = {}  # leaf id -> (first consumer, input)
        self.leaf_uses: dict[int, list[tuple[int, int]]] = {}
        for cid in self.order:
            row = []
            for j, t in enumerate(self.ops[cid].tensors):
                src = _source(t)
                if src is None or src[0] not in self.ops:
                    self.leaf_first.setdefault(t.id, (cid, j))
                    self.leaf_uses.setdefault(t.id, []).append((cid, j))
                    row.append(("leaf", t))
                else:
                    row.append(src)
                    self.consumers[src[0]].append((cid, j, src[1]))
            self.producers[cid] = row
        self.chosen: dict[int, _Choice] = {}
        self.fixed: set[int] = set()
        self.planned: dict[int, TensorLayout | None] = {}   # parameter leaf id -> its plan

    # -- costs ----------------------------------------------------------------------------
    def _move(self, src: TensorLayout, dst: TensorLayout, itemsize: int) -> int:
        return 0 if src == dst else plan_bytes(plan(src, dst, itemsize, self.alltoall))[0]

    def _leaf_layout(self, leaf: Node, cid: int, j: int) -> TensorLayout | None:
        """The layout leaf `leaf` is bound with, seen from input j of op `cid`; None when
        this input binds it (free) or its binder is undecided."""
        if leaf.kind == "input" and not self.full_batch:
            return fed_layout(self.input_index[leaf.id], tuple(leaf.shape), self.n)
        if leaf.kind == "parameter":
            if leaf.id not in self.planned:
                self.planned[leaf.id] = planned_layout(leaf.value, leaf.shape, self.n)
            if self.planned[leaf.id] is not None:
                return self.planned[leaf.id]
        first = self.leaf_first.get(leaf.id)
        if first is None or first == (cid, j) or first[0] not in self.chosen:
            return None
        return self.chosen[first[0]].ins[first[1]]

    def cost(self, cid: int, c: _Choice) -> tuple[int, int]:
        op = self.ops[cid]
        moved = c.own_bytes
        for j, src in enumerate(self.producers[cid]):
            if src[0] == "leaf":
                lay = self._leaf_layout(src[1], cid, j)
            else:
                lay = self.chosen[src[0]].outs[src[1]] if src[0] in self.chosen else None
            if lay is not None:
                moved += self._move(lay, c.ins[j], op.itemsizes[j])
        for did, j, k in self.consumers[cid]:
            if did in self.chosen:
                moved += self._move(c.outs[k], self.chosen[did].ins[j], op.out_itemsizes[k])
        for leaf_j, src in enumerate(self.producers[cid]):   # leaves this op binds
            if src[0] == "leaf" and self._leaf_layout(src[1], cid, leaf_j) is None:
                for did, j in self.leaf_uses[src[1].id]:
                    if did != cid and did in self.chosen:
                        moved += self._move(c.ins[leaf_j], self.chosen[did].ins[j],
                                            op.itemsizes[leaf_j])
        return moved, c.local_bytes

    def best(self, cid: int) -> _Choice:
        cands = self.ops[cid].candidates()
        if not cands:
            node = self.ops[cid].node
            raise ValueError(f"For '{node.prim.name}', sharding propagation found no strategy "
                             f"its sharding rule accepts for input shapes "
                             f"{self.ops[cid].in_shapes} on {self.n} devices.\n  In {node.source}")
        return min(cands, key=lambda c: self.cost(cid, c))

    # -- the walk ---------------------------------------------------------------------------
    def neighbours(self, cid: int) -> list[int]:
        ups = [src[0] for src in self.producers[cid] if src[0] != "leaf"]
        return ups + [did for did, _, _ in self.consumers[cid]]

    def configure(self) -> list[int]:
        seeds = []
        for cid in self.order:
            node = self.ops[cid].node
            if node.prim.in_strategy:
                try:
                    self.chosen[cid] = self.ops[cid].choice(node.prim.in_strategy,
                                                            node.prim.out_strategy)
                except ValueError as err:
                    raise ValueError(f"{err}\n  In {node.source}") from None
                self.fixed.add(cid)
                seeds.append(cid)
        return seeds

    def walk(self, queue: list[int]) -> None:
        head = 0
        while True:
            while head < len(queue):
                for nid in self.neighbours(queue[head]):
                    if nid not in self.chosen:
                        self.chosen[nid] = self.best(nid)
                        queue.append(nid)
                head += 1
            rest = [cid for cid in self.order if cid not in self.chosen]
            if not rest:
                return
            op = self.ops[rest[0]]
            self.chosen[rest[0]] = op.choice(data_parallel_strategy(op.spec, op.in_shapes,
                                                                    self.n, op.out_shapes))
            queue.append(rest[0])

    def follow(self) -> None:
        """elementwise_op_strategy_follow: each element-wise op, last first, takes the
        strategy whose output is its first consumer's input layout (when it has one)."""
        for cid in reversed(self.order):
            op = self.ops[cid]
            if cid in self.fixed or not self.consumers[cid] or not op.elementwise():
                continue
            did, j, _ = self.consumers[cid][0]
            want = self.chosen[did].ins[j]
            same = [c for c in op.candidates() if c.outs[0] == want]
            if same:
                self.chosen[cid] = min(same, key=lambda c: self.cost(cid, c))

    def sweep(self) -> None:
        for _ in range(_SWEEPS):
            changed = False
            for cid in self.order:
                if cid in self.fixed:
                    continue
                best = self.best(cid)
                if self.cost(cid, best) < self.cost(cid, self.chosen[cid]):
                    self.chosen[cid] = best
                    changed = True
            if not changed:
                return


def _source(t: Node) -> tuple[int, int] | None:
    """(producing op id, output index) of tensor `t`; None for leaves."""
    if t.kind != "op":
        return None
    if isinstance(t.prim, TupleGetItem):
        inner = t.inputs[0]
        return (inner.id, t.inputs[1].value) if inner.kind == "op" else None
    return (t.id, 0)


def propagate(graph: Graph, device_num: int) -> dict[int, tuple]:
    """Node id -> the strategy chosen for every op of `graph` that `shard` did not
    configure, by the context's search_mode."""
    mode = pctx.get_auto_parallel_context("search_mode")
    search = _Search(graph, device_num)
    search.walk(search.configure())
    if mode != "sharding_propagation":
        search.sweep()
    if algo_parameter("elementwise_op_strategy_follow"):
        search.follow()
    return {cid: c.strategy for cid, c in search.chosen.items() if cid not in search.fixed}
