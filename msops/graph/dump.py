"""Readable forms of a Graph: a text IR (one line a node) and Graphviz DOT.

Text:   %3 = MatMul(%0, %1) : [4, 16] Float32  layout=...  {transpose_b=True}  # net.py:12
DOT:    inputs/parameters as ellipses, ops as boxes, communication ops as filled red
        hexagons, edges labelled with the shape they carry.
"""
from __future__ import annotations

import itertools
import os

from msops import context
from msops.communication import get_rank, is_initialized
from msops.graph.ir import Graph, Node

__all__ = ["dump_text", "dump_dot", "format_abstract", "save_graph"]


def format_abstract(node: Node) -> str:
    """`[4, 16] Float32`, or `([4, 16], [16]) (Float32, Float32)` for a tuple value."""
    if node.is_tuple:
        shapes = ", ".join(str(list(s)) for s in node.shape)
        return f"({shapes}) ({', '.join(str(d) for d in node.dtype)})"
    if node.dtype is None:
        return "None"
    return f"{list(node.shape)} {node.dtype}"


def _is_value_const(node: Node) -> bool:
    """A Python-valued const (an index, a shape): shown inline, not as a node of its own."""
    return node.kind == "const" and node.dtype is None


def _operand(node: Node) -> str:
    return repr(node.value) if _is_value_const(node) else f"%{node.id}"


def _attrs(node: Node) -> str:
    attrs = node.prim.attrs
    return ", ".join(f"{k}={v!r}" for k, v in attrs.items()) if attrs else ""


def _short_source(source: str | None) -> str:
    """`file.py:12` from `path/file.py:12: code`."""
    if not source:
        return ""
    path, _, rest = source.partition(":")
    return f"{os.path.basename(path)}:{rest.split(':', 1)[0]}"


def _leaf_name(node: Node) -> str:
    """`input x`, `parameter dense.weight`, `const`."""
    return node.kind if node.name is None else f"{node.kind} {node.name}"


def _leaves(graph: Graph) -> list[Node]:
    """Inputs, parameters and tensor consts (the nodes no op makes)."""
    return graph.inputs + graph.parameters + [c for c in graph.consts if not _is_value_const(c)]


def _leaf_line(node: Node) -> str:
    line = f"  %{node.id} = {_leaf_name(node)} : {format_abstract(node)}"
    if node.layout is not None:
        line += f"  layout={node.layout}"
    if node.feed is not None:
        line += "  (fed slice)"
    return line


def dump_text(graph: Graph) -> str:
    """The graph as text IR: inputs, parameters, tensor consts, then ops in execution order."""
    lines = [f"graph {graph.name} ({len(graph.inputs)} inputs, {len(graph.parameters)} "
             f"parameters, {len(graph.nodes)} ops) {{"]
    lines += [_leaf_line(n) for n in _leaves(graph)]
    for node in graph.nodes:
        line = (f"  %{node.id} = {node.op}({', '.join(_operand(i) for i in node.inputs)}) : "
                f"{format_abstract(node)}")
        if node.layout is not None:
            line += f"  layout={node.layout}"
        if node.comm_bytes is not None:
            line += f"  bytes={node.comm_bytes}"
        attrs = _attrs(node)
        if attrs:
            line += f"  {{{attrs}}}"
        if node.source:
            line += f"  # {_short_source(node.source)}"
        lines.append(line)
    outs = ", ".join(f"%{n.id}" for n in graph.outputs)
    lines.append(f"  return {'(' + outs + ')' if graph.output_is_tuple else outs}")
    lines.append("}")
    return "\n".join(lines)


# -- DOT ---------------------------------------------------------------------------------
_LEAF_STYLE = {
    "input": 'shape=ellipse, style=filled, fillcolor="#dbeafe"',
    "parameter": 'shape=ellipse, style=filled, fillcolor="#dcfce7"',
    "const": 'shape=note, style=filled, fillcolor="#f3f4f6"',
}
_OP_STYLE = 'shape=box, style="rounded,filled", fillcolor="#ffffff"'
_COMM_STYLE = 'shape=hexagon, style="filled,bold", fillcolor="#fca5a5", color="#b91c1c"'


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _edge_label(node: Node) -> str:
    if node.is_tuple:
        return "(" + ", ".join(str(list(s)) for s in node.shape) + ")"
    return str(list(node.shape))


def _op_label(node: Node) -> str:
    consts = [repr(i.value) for i in node.inputs if _is_value_const(i)]
    head = node.op + (f"[{', '.join(consts)}]" if consts else "")
    label = f"{head}\n{format_abstract(node)}"
    if node.layout is not None:
        label += f"\n{node.layout}"
    if node.comm_bytes is not None:
        label += f"\n{node.comm_bytes} B/rank"
    return label


def dump_dot(graph: Graph) -> str:
    """Graphviz DOT of the graph; communication ops are red hexagons, edges carry shapes."""
    out = [f"digraph {_quote(graph.name)} {{", "  rankdir=TB;",
           '  node [fontname="Helvetica", fontsize=10];', '  edge [fontsize=9];']
    for n in _leaves(graph):
        out.append(f"  n{n.id} [label={_quote(_leaf_name(n) + chr(10) + format_abstract(n))}, "
                   f"{_LEAF_STYLE[n.kind]}];")
    for n in graph.nodes:
        style = _COMM_STYLE if n.is_communication else _OP_STYLE
        out.append(f"  n{n.id} [label={_quote(_op_label(n))}, {style}];")
    for n in graph.nodes:
        for i in n.inputs:
            if not _is_value_const(i):
                out.append(f"  n{i.id} -> n{n.id} [label={_quote(_edge_label(i))}];")
    out.append('  output [label="output", shape=doublecircle];')
    for n in graph.outputs:
        out.append(f"  n{n.id} -> output [label={_quote(_edge_label(n))}];")
    out.append("}")
    return "\n".join(out)


# -- save_graphs -------------------------------------------------------------------------
_dump_counter = itertools.count()


def save_graph(graph: Graph) -> list[str]:
    """With `set_context(save_graphs=True)`: write the compiled `graph` to `save_graphs_path`
    as `<n>_<name>_rank<r>.ir` (text IR) and `.dot`, n counting the compiles of this process.
    Returns the paths written ([] when save_graphs is off)."""
    folder = context.graph_dump_dir()
    if folder is None:
        return []
    os.makedirs(folder, exist_ok=True)
    rank = get_rank() if is_initialized() else 0
    stem = os.path.join(folder, f"{next(_dump_counter):04d}_{graph.name}_rank{rank}")
    paths = []
    for ext, text in ((".ir", dump_text(graph)), (".dot", dump_dot(graph))):
        with open(stem + ext, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        paths.append(stem + ext)
    return paths
