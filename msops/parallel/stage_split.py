"""Pipeline stages: this rank's part of a compiled program, and the transfers between stages.

Every rank compiles the whole program (each stage's ops partitioned over a stage's devices,
differentiated, the optimizer's update traced after), then keeps its own stage's ops
(`split_stages`). An op runs on one stage: its cell's (`Cell.pipeline_stage`, recorded while
traced and carried through the passes; a backward node runs where its forward node does),
else the latest stage among its inputs'; an op reading no staged value (a step counter, a
learning-rate schedule, slicing the fed inputs) runs on every stage. A value read on another
stage is sent right after it is made, by each rank of its stage to the rank at the same
position of the reading stage (Send/Receive; a layout means the same slices in every stage).

Each rank runs its ops in the one order of the whole program, so every Send meets its
Receive at the same point on both sides: no deadlock, whatever the number of stages. The
order is 1F1B's (`one_forward_one_backward`: the program reordered by each node's
micro-batch block, `graph.micro_of`), or with `pipeline_scheduler="gpipe"` the traced one
(all micro-batches' forwards, then their backwards in reverse). The program's outputs are
sent from their stage to every other at the end, so every rank returns them.
"""
from __future__ import annotations

import itertools
from typing import Any

from msops.graph.ir import Graph, MakeTuple, Node, TupleGetItem
from msops.parallel.param_layout import forget_layout, record_stages
from msops.graph.schedule import order_dependencies, reorder
from msops.parallel.stages import (interleaved, pipeline_scheduler, stage_num, stage_of_rank,
                                   stage_peer)
from msops.primitives.comm_ops import Receive, Send
from msops.primitives.state_ops import Assign

__all__ = ["infer_stages", "physical", "split_stages", "one_forward_one_backward",
           "block_ticks"]

#: MPI's smallest guaranteed upper bound on tags is 32767
_TAGS = 32767


def _where(node: Node) -> str:
    return f"\n  In {node.source}" if node.source else ""


def infer_stages(graph: Graph) -> dict[int, int]:
    """Op-node id -> virtual stage, for every op that runs on one stage (the others run on
    all): the recorded one, else the latest among its inputs (a TupleGetItem or MakeTuple
    is where its inputs are). A cell's (stage s, segment v) is virtual stage v * S + s,
    which runs on stage s (`physical`); without interleaving v is 0 and the two agree. A Parameter written in place (an optimizer's update) is its
    writer's stage's: whoever reads it there reads the current value, so its readers count
    that stage too (found again until the owners settle)."""
    owners: dict[int, int] = {}
    for _ in range(8):
        out = _infer(graph, owners)
        found = {}
        for n in graph.nodes:
            k = n.prim.assigns_input
            if k is not None and n.id in out and n.inputs[k].kind == "parameter":
                found[n.inputs[k].id] = out[n.id]
        if found == owners:
            break
        owners = found
    return out


def physical(stages: dict[int, int]) -> dict[int, int]:
    """Op-node id -> the stage it runs on, from `infer_stages`'s virtual stages."""
    n = stage_num()
    return {k: v % n for k, v in stages.items()}


def _virtual(place: Any, n: Node, stages: int) -> int:
    """The virtual stage of a recorded place: a traced cell's (stage, segment) (-1: unset),
    or an int already inferred (a partitioned graph carries `infer_stages`'s)."""
    if isinstance(place, int):
        return place
    stage, segment = place
    if stage < 0:
        raise ValueError(f"For 'Cell', a cell with a 'pipeline_segment' should have a "
                         f"'pipeline_stage' (its own or an enclosing cell's), but op "
                         f"'{n.op}' has none.{_where(n)}")
    if stage >= stages:
        raise ValueError(f"For 'Cell', the 'pipeline_stage' should be < pipeline_stages "
                         f"{stages}, but got {stage} (op '{n.op}').{_where(n)}")
    if segment > 0 and not interleaved():
        raise ValueError(f"For 'Cell', a 'pipeline_segment' > 0 needs "
                         f"pipeline_config={{'pipeline_interleave': True}}, but got segment "
                         f"{segment} (op '{n.op}') without it.{_where(n)}")
    return max(segment, 0) * stages + stage


def _infer(graph: Graph, owners: dict[int, int]) -> dict[int, int]:
    stages = stage_num()
    out: dict[int, int] = {}
    for n in graph.nodes:
        s = graph.stage_of.get(n.id)
        if s is not None:
            s = _virtual(s, n, stages)
        read = [out[i.id] if i.id in out else owners[i.id] for i in n.inputs
                if i.id in out or i.id in owners]
        if read and (s is None or isinstance(n.prim, (TupleGetItem, MakeTuple))):
            s = max(read)
        if s is not None:
            out[n.id] = s
    return out


def _written_parameters(graph: Graph, stage: dict[int, int]) -> dict[int, tuple[int, int]]:
    """Parameter id -> (its writer's stage, the id of its last staged writer) of each
    Parameter a stage updates (an optimizer's update). Updates of one Parameter on two
    stages would leave two different values: refused."""
    written: dict[int, tuple[int, int]] = {}
    for n in graph.nodes:
        k = n.prim.assigns_input
        if k is None or n.id not in stage or n.inputs[k].kind != "parameter":
            continue
        p = n.inputs[k]
        if p.id in written and written[p.id][0] != stage[n.id]:
            raise ValueError(f"For 'pipeline_stages', the Parameter '{p.name}' should be "
                             f"updated on one pipeline stage, but it is updated on stages "
                             f"{sorted({written[p.id][0], stage[n.id]})}.{_where(n)}")
        written[p.id] = (stage[n.id], n.id)
    return written


def block_ticks(stages: int, micros: int, backward: bool, segments: int = 1) -> dict[tuple, int]:
    """(virtual stage, micro-batch, 0 forward / 1 backward) -> the step of the 1F1B timeline
    it runs in (`_stage_plan`: each stage's order of its blocks); a block starts once the
    block it receives from (the previous virtual stage's forward, the next one's backward)
    has run."""
    chunks = stages * segments
    plan = {s: _stage_plan(s, stages, micros, backward, segments) for s in range(stages)}
    at: dict[tuple, int] = {}
    nxt = [0] * stages
    tick = 0
    while any(nxt[s] < len(plan[s]) for s in range(stages)):
        ran = []
        for s in range(stages):
            if nxt[s] == len(plan[s]):
                continue
            c, m, phase = plan[s][nxt[s]]
            src = (c - 1, m, 0) if phase == 0 else \
                (c + 1, m, 1) if c + 1 < chunks else (c, m, 0)
            if not 0 <= src[0] < chunks or at.get(src, tick) < tick:
                ran.append((c, m, phase))
        assert ran, "the 1F1B plan cannot stall"
        for block in ran:
            at[block] = tick
            nxt[block[0] % stages] += 1
        tick += 1
    return at


def _stage_plan(s: int, stages: int, micros: int, backward: bool,
                segments: int) -> list[tuple[int, int, int]]:
    """Stage s's blocks (virtual stage, micro-batch, phase) in 1F1B order. One segment:
    min(S - s - 1, M) forwards first, then one forward and one backward in turn, then the
    remaining backwards. V segments (interleaved): the forwards go S micro-batches at a
    time through each of the stage's V chunks (chunk after chunk), the backwards the same
    with the chunks reversed; (S - s - 1) * 2 + (V - 1) * S forwards warm up before the
    alternation (Megatron-LM's interleaved schedule). Without a backward: the forwards,
    micro-batch after micro-batch."""
    if not backward:
        return [(v * stages + s, m, 0) for m in range(micros) for v in range(segments)]
    if segments == 1:
        w = min(stages - s - 1, micros)
        order = [(s, m, 0) for m in range(w)]
        for i in range(micros - w):
            order += [(s, w + i, 0), (s, i, 1)]
        return order + [(s, m, 1) for m in range(micros - w, micros)]

    def block(k: int, phase: int) -> tuple[int, int, int]:
        v = (k // stages) % segments
        m = (k // (stages * segments)) * stages + k % stages
        return ((segments - 1 - v) if phase else v) * stages + s, m, phase
    total = micros * segments
    w = min((stages - s - 1) * 2 + (segments - 1) * stages, total)
    order = [block(k, 0) for k in range(w)]
    for i in range(total - w):
        order += [block(w + i, 0), block(i, 1)]
    return order + [block(k, 1) for k in range(total - w, total)]


def one_forward_one_backward(graph: Graph, stage: dict[int, int]) -> None:
    """Reorder the whole program (in place) so that each stage runs its micro-batches in the
    1F1B order (`block_ticks`): a stage holds at most S - s micro-batches' activations at
    once instead of all of them (GPipe, the traced order). A node of no block (slicing the
    fed batch, the optimizer's update) runs as soon as its inputs are ready; every ordering
    constraint that is not a data edge is kept (`order_dependencies`)."""
    micro_of = graph.micro_of
    if not micro_of:
        return
    micros = 1 + max(m for m, _ in micro_of.values())
    stages = stage_num()
    segments = 1 + max(stage.values(), default=0) // stages
    backward = any(p for _, p in micro_of.values())
    if segments > 1 and backward and micros % stages:
        raise ValueError(f"For 'PipelineCell', with pipeline_interleave the 'micro_size' "
                         f"should be a multiple of pipeline_stages: {stages}, but got "
                         f"{micros}.")
    ticks = block_ticks(stages, micros, backward, segments)
    position = {n.id: k for k, n in enumerate(graph.nodes)}

    def key(n: Node) -> tuple:
        block = (stage.get(n.id),) + micro_of.get(n.id, (None, None))
        return (ticks.get(block, -1), block[0] or 0, position[n.id])
    reorder(graph, key, order_dependencies(graph))


def _receive_late(nodes: list[Node], receives: set[int]) -> list[Node]:
    """`nodes` with each receive (ids `receives`) moved after the compute that follows it,
    up to its first reader or the next communication node. The order of the communication is unchanged,
    and compute never waits on another rank, so this cannot deadlock; it lets the rank work
    while the sender still computes what it sends (placed where the send is in the global
    order, a receive would make the rank wait for the sender's unrelated work first)."""
    out = list(nodes)
    for k in range(len(out) - 1, -1, -1):
        r = out[k]
        if r.id not in receives:
            continue
        j = k + 1
        while j < len(out) and not out[j].is_communication and \
                all(i is not r for i in out[j].inputs):
            j += 1
        if j > k + 1:
            out[k:j] = out[k + 1:j] + [r]
    return out


def split_stages(graph: Graph) -> Graph:
    """This rank's stage of a compiled (local, partitioned) program, in place; the program
    itself when it is not pipelined."""
    stages = stage_num()
    if stages == 1:
        return graph
    stage = infer_stages(graph)
    if pipeline_scheduler() == "1f1b":
        one_forward_one_backward(graph, stage)
    stage = physical(stage)
    written = _written_parameters(graph, stage)
    me = stage_of_rank()
    everywhere = tuple(range(stages))
    # producer id -> the other stages reading it (an op reading a staged value is staged)
    readers: dict[int, set[int]] = {}
    holders: dict[int, set[int]] = {}          # Parameter id -> the stages reading it
    for n in graph.nodes:
        for i in n.inputs:
            if i.id in stage and stage[i.id] != stage[n.id]:
                readers.setdefault(i.id, set()).add(stage[n.id])
            if i.kind == "parameter":
                holders.setdefault(i.id, set()).update(
                    (stage[n.id],) if n.id in stage else everywhere)
    tags = itertools.count()
    received: dict[int, Node] = {}
    receives: set[int] = set()                 # the Receive nodes made here
    kept: list[Node] = []

    def transfer(node: Node, to: set[int]) -> None:
        """Send `node` from its stage to the stages `to` (this rank's side of it); a tuple
        (a multi-output op, a MakeTuple) goes element by element and is built again."""
        s = stage[node.id]
        if not node.is_tuple:
            recv = send_receive(node, s, to, node.shape, node.dtype, node.layout)
            if recv is not None:
                received[node.id] = recv
            return
        if any(isinstance(d, (tuple, list)) for d in node.dtype):
            raise NotImplementedError(f"For 'pipeline_stages', a tuple crossing pipeline "
                                      f"stages should hold Tensors, but the tuple of "
                                      f"'{node.op}' holds tuples.{_where(node)}")
        layouts = node.layout if isinstance(node.layout, (tuple, list)) else \
            (None,) * len(node.dtype)
        parts = []
        for k, (shape, dtype) in enumerate(zip(node.shape, node.dtype)):
            item = None
            if s == me:
                item = graph.getitem(node, k, node.source)
                kept.append(item)
            parts.append(send_receive(item, s, to, shape, dtype, layouts[k], node.source))
        if s != me and me in to:
            received[node.id] = graph.make_tuple(parts, node.source)
            kept.append(received[node.id])

    def send_receive(value: Node | None, s: int, to: set[int], shape: tuple, dtype: Any,
                     layout: Any, source: str | None = None) -> Node | None:
        """This rank's side of one Tensor sent from stage `s` (`value` there) to the stages
        `to`: the Sends, or the Receive (returned); every rank takes the same tag."""
        tag = next(tags) % _TAGS
        if s == me:
            for w in sorted(to):
                send = Send(tag, stage_peer(w)).add_prim_attr("side_effect_io", True)
                kept.append(graph.apply(send, [value], value.source))
            return None
        if me not in to:
            return None
        recv = graph.apply(Receive(tag, stage_peer(s), shape, dtype), [], source)
        recv.layout = layout
        kept.append(recv)
        receives.add(recv.id)
        return recv

    def sync(param: Node, write: Node, writer: int, to: set[int]) -> None:
        """Copy the Parameter `param`, just updated by `write` on stage `writer`, into the
        copies the stages `to` read (a Parameter shared by several stages: tied
        embeddings). A write returns the value written."""
        recv = send_receive(write if me == writer else None, writer, to, param.shape,
                            param.dtype, param.layout, param.source)
        if recv is not None:
            kept.append(graph.apply(Assign(), [param, recv], param.source))

    params = {p.id: p for p in graph.parameters}
    synced = {w: (pid, s) for pid, (s, w) in written.items()
              if holders.get(pid, set()) - {s}}
    for n in list(graph.nodes):
        s = stage.get(n.id)
        if s is None or s == me:
            n.inputs = [received.get(i.id, i) for i in n.inputs]
            kept.append(n)
        if n.id in readers:
            transfer(n, readers[n.id])
        if n.id in synced:
            pid, writer = synced[n.id]
            sync(params[pid], n, writer, holders[pid] - {writer})
    for o in graph.outputs:           # every rank returns the outputs
        if o.id in stage:
            to = set(everywhere) - {stage[o.id]} - readers.get(o.id, set())
            if to:
                transfer(o, to)
                readers.setdefault(o.id, set()).update(to)
    outputs = [received.get(o.id, o) for o in graph.outputs]
    graph.nodes = _receive_late(kept, receives)
    graph.outputs = outputs
    used = {i.id for n in kept for i in n.inputs} | {o.id for o in outputs}
    for p in graph.parameters:
        record_stages(p.value, frozenset(holders.get(p.id, everywhere)))
        if p.id not in used:           # another stage's: this rank neither reads nor lays it out
            forget_layout(p.value)
    graph.parameters = [p for p in graph.parameters if p.id in used]
    graph.consts = [c for c in graph.consts if c.id in used]
    graph.stage_of = {}
    return graph
