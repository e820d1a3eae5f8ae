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
order is the traced one (all micro-batches' forwards, then their backwards in reverse: the
GPipe schedule). The program's outputs are sent from their stage to every other at the
end, so every rank returns them.
"""
from __future__ import annotations

import itertools

from msops.graph.ir import Graph, MakeTuple, Node, TupleGetItem
from msops.parallel.param_layout import forget_layout, record_stages
from msops.parallel.stages import stage_num, stage_of_rank, stage_peer
from msops.primitives.comm_ops import Receive, Send
from msops.primitives.state_ops import Assign

__all__ = ["infer_stages", "split_stages"]

#: MPI's smallest guaranteed upper bound on tags is 32767
_TAGS = 32767


def _where(node: Node) -> str:
    return f"\n  In {node.source}" if node.source else ""


def infer_stages(graph: Graph) -> dict[int, int]:
    """Op-node id -> stage, for every op that runs on one stage (the others run on all):
    the recorded stage, else the latest stage among its inputs (a TupleGetItem or MakeTuple
    is where its inputs are). A Parameter written in place (an optimizer's update) is its
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


def _infer(graph: Graph, owners: dict[int, int]) -> dict[int, int]:
    stages = stage_num()
    out: dict[int, int] = {}
    for n in graph.nodes:
        s = graph.stage_of.get(n.id)
        if s is not None and s >= stages:
            raise ValueError(f"For 'Cell', the 'pipeline_stage' should be < pipeline_stages "
                             f"{stages}, but got {s} (op '{n.op}').{_where(n)}")
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


def split_stages(graph: Graph) -> Graph:
    """This rank's stage of a compiled (local, partitioned) program, in place; the program
    itself when it is not pipelined."""
    stages = stage_num()
    if stages == 1:
        return graph
    stage = infer_stages(graph)
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
    kept: list[Node] = []

    def transfer(node: Node, to: set[int]) -> None:
        """Send `node` from its stage to the stages `to` (this rank's side of it)."""
        if node.is_tuple:
            raise NotImplementedError(f"For 'pipeline_stages', a value crossing pipeline "
                                      f"stages should be a Tensor, but got the tuple of "
                                      f"'{node.op}'.{_where(node)}")
        tag = next(tags) % _TAGS
        s = stage[node.id]
        if s == me:
            for w in sorted(to):
                send = Send(tag, stage_peer(w)).add_prim_attr("side_effect_io", True)
                kept.append(graph.apply(send, [node], node.source))
        elif me in to:
            recv = graph.apply(Receive(tag, stage_peer(s), node.shape, node.dtype), [],
                               node.source)
            recv.layout = node.layout
            received[node.id] = recv
            kept.append(recv)

    def sync(param: Node, write: Node, writer: int, to: set[int]) -> None:
        """Copy the Parameter `param`, just updated by `write` on stage `writer`, into the
        copies the stages `to` read (a Parameter shared by several stages: tied
        embeddings). A write returns the value written."""
        tag = next(tags) % _TAGS
        if me == writer:
            for w in sorted(to):
                send = Send(tag, stage_peer(w)).add_prim_attr("side_effect_io", True)
                kept.append(graph.apply(send, [write], param.source))
        elif me in to:
            recv = graph.apply(Receive(tag, stage_peer(writer), param.shape, param.dtype), [],
                               param.source)
            recv.layout = param.layout
            kept.extend((recv, graph.apply(Assign(), [param, recv], param.source)))

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
    graph.nodes = kept
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
