"""Graph.dump() text IR and Graph.to_dot() Graphviz output of a small graph.

Node ids (`%7`) are incidental: the tests read a dump back into its structure (ops,
operands by what they are, shapes, dtypes, layouts, attrs, order) and check that.
"""
import re

import numpy as np

from msops import Parameter, Tensor, nn, ops


class Small(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(8, 4, has_bias=True)
        self.allgather = ops.AllGather()
        self.scale = Parameter(Tensor(np.ones((4,), np.float32)))

    def construct(self, x):
        y = self.dense(x)
        return self.allgather(y * self.scale)


def _graph(sim):
    sim(2, 0)
    return Small().compile(Tensor(np.ones((3, 8), np.float32)))


_LINE = re.compile(r"  %(?P<id>\d+) = (?P<head>.+?) : (?P<abstract>.+?)"
                   r"(?:  layout=(?P<layout>.+?))?(?:  \{(?P<attrs>.*)\})?(?:  # (?P<source>.+))?$")


def _names(ids_and_ops):
    """id -> a stable name: the leaf's name, else the op (op.k for its k-th repeat)."""
    names, seen = {}, {}
    for i, op in ids_and_ops:
        k = seen[op] = seen.get(op, -1) + 1
        names[i] = op if k == 0 else f"{op}.{k}"
    return names


def read_dump(text):
    """(header, leaves, ops, returned) of a dump, every %id replaced by the name of what it is:
    leaves {name: abstract}; ops [(name, [operands], abstract, layout, attrs, source)]."""
    lines = text.splitlines()
    parsed = [(m, m["head"]) for m in map(_LINE.fullmatch, lines[1:-2])]
    assert all(m is not None for m, _ in parsed), text
    heads = {}
    for m, head in parsed:
        op = re.match(r"(\w+)\(", head)
        heads[m["id"]] = op.group(1) if op else head
    names = _names(heads.items())

    def name(ref):
        return re.sub(r"%(\d+)", lambda r: names[r.group(1)], ref)
    leaves = {head: m["abstract"] for m, head in parsed if "(" not in head}
    ops_ = [(names[m["id"]], [name(a) for a in _operands(head)], m["abstract"], m["layout"],
             m["attrs"], m["source"]) for m, head in parsed if "(" in head]
    returned = name(lines[-2].removeprefix("  return "))
    return lines[0], leaves, ops_, returned


def _operands(head):
    """The operands of `Op(%0, (4, 2), %1)`: top-level comma-separated items."""
    inner, items, depth, item = head[head.index("(") + 1:-1], [], 0, ""
    for ch in inner + ",":
        if ch == "," and depth == 0:
            items.append(item.strip())
            item = ""
            continue
        depth += (ch in "([") - (ch in ")]")
        item += ch
    return [i for i in items if i]


def test_nodes_in_execution_order_with_op_shape_dtype(sim):
    g = _graph(sim)
    assert [(n.op, n.shape, str(n.dtype)) for n in g.nodes] == [
        ("MatMul", (3, 4), "Float32"), ("Add", (3, 4), "Float32"),
        ("Mul", (3, 4), "Float32"), ("AllGather", (6, 4), "Float32")]


def test_dump_text(sim):
    header, leaves, ops_, returned = read_dump(_graph(sim).dump())
    assert header == "graph Small (1 inputs, 3 parameters, 4 ops) {"
    assert leaves == {"input x": "[3, 8] Float32", "parameter dense.weight": "[4, 8] Float32",
                      "parameter dense.bias": "[4] Float32", "parameter scale": "[4] Float32"}
    assert [op[:3] for op in ops_] == [
        ("MatMul", ["input x", "parameter dense.weight"], "[3, 4] Float32"),
        ("Add", ["MatMul", "parameter dense.bias"], "[3, 4] Float32"),
        ("Mul", ["Add", "parameter scale"], "[3, 4] Float32"),
        ("AllGather", ["Mul"], "[6, 4] Float32")]
    attrs = {name: a for name, _, _, _, a, _ in ops_}
    assert attrs["MatMul"] == "transpose_a=False, transpose_b=True"
    assert re.fullmatch(r"group='\w+', rank_size=2, rank=0, fusion=0, mean_flag=False, "
                        r"no_eliminate=True", attrs["AllGather"])
    assert all(re.fullmatch(r"test_graph_dump\.py:\d+", src) for *_, src in ops_)
    assert returned == "AllGather"


def test_dump_shows_layout_when_set(sim):
    g = _graph(sim)
    g.nodes[0].layout = "L(dev=[2], map=[0, -1])"
    _, _, ops_, _ = read_dump(g.dump())
    assert [(name, layout) for name, _, _, layout, _, _ in ops_] == [
        ("MatMul", "L(dev=[2], map=[0, -1])"), ("Add", None), ("Mul", None),
        ("AllGather", None)]


def read_dot(dot):
    """({node id: (label, style)}, [(from label, to label, edge label)]) of a DOT text."""
    nodes = {m[1]: (m[2].encode().decode("unicode_escape"), m[3])
             for m in re.finditer(r'^  (n\d+|output) \[label="(.*?)", (.*)\];$', dot, re.M)}
    edges = [(nodes[a][0], nodes[b][0], label)
             for a, b, label in re.findall(r'^  (n\d+) -> (n\d+|output) \[label="(.*)"\];$',
                                           dot, re.M)]
    return nodes, edges


def test_dot_marks_communication_and_labels_edges(sim):
    dot = _graph(sim).to_dot()
    assert dot.startswith('digraph "Small" {') and dot.rstrip().endswith("}")
    nodes, edges = read_dot(dot)
    by_label = {label.split("\n")[0]: style for label, style in nodes.values()}
    assert "shape=hexagon" in by_label["AllGather"] and '"#fca5a5"' in by_label["AllGather"]
    assert "shape=box" in by_label["MatMul"] and "hexagon" not in by_label["MatMul"]
    labels = sorted(label for label, _ in nodes.values())
    assert labels == sorted([
        "input x\n[3, 8] Float32", "parameter dense.weight\n[4, 8] Float32",
        "parameter dense.bias\n[4] Float32", "parameter scale\n[4] Float32",
        "MatMul\n[3, 4] Float32", "Add\n[3, 4] Float32", "Mul\n[3, 4] Float32",
        "AllGather\n[6, 4] Float32", "output"])
    short = [(a.split("\n")[0], b.split("\n")[0], label) for a, b, label in edges]
    assert short == [                                # every data edge, in execution order
        ("input x", "MatMul", "[3, 8]"), ("parameter dense.weight", "MatMul", "[4, 8]"),
        ("MatMul", "Add", "[3, 4]"), ("parameter dense.bias", "Add", "[4]"),
        ("Add", "Mul", "[3, 4]"), ("parameter scale", "Mul", "[4]"),
        ("Mul", "AllGather", "[3, 4]"), ("AllGather", "output", "[6, 4]")]


def test_dump_multi_output_and_const_operands():
    from msops.graph.tracer import trace
    split = ops.Split(axis=0, output_num=2)
    g = trace(lambda x: split(ops.Reshape()(x, (4, 2)))[1], [Tensor(np.ones(8, np.float32))])
    _, leaves, ops_, returned = read_dump(g.dump())
    assert leaves == {"input x": "[8] Float32"}
    assert [op[:3] for op in ops_] == [
        ("Reshape", ["input x", "(4, 2)"], "[4, 2] Float32"),
        ("Split", ["Reshape"], "([2, 2], [2, 2]) (Float32, Float32)"),
        ("TupleGetItem", ["Split", "0"], "[2, 2] Float32"),
        ("TupleGetItem.1", ["Split", "1"], "[2, 2] Float32")]
    assert ops_[1][4] == "axis=0, output_num=2" and returned == "TupleGetItem.1"
    _, edges = read_dot(g.to_dot())
    assert ("Split\n([2, 2], [2, 2]) (Float32, Float32)", "TupleGetItem[1]\n[2, 2] Float32",
            "([2, 2], [2, 2])") in edges
