"""Graph IR: nodes that carry a primitive, their inputs and an abstract value.

A Graph is built by applying primitives to nodes (`Graph.apply`), which runs shape
and dtype inference on the spot, so every node carries its shape and dtype from
birth and an error names the op and the user's source line. Passes (the parallel
pass) build new graphs the same way, so rank-local graphs are re-inferred too.

Node kinds: "input" (a graph argument), "parameter" (a Parameter of the Cell),
"const" (a Python value), "op" (a primitive application). A primitive with several
outputs yields a tuple-valued node; `TupleGetItem` nodes select from it.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor
from msops.primitives.primitive import PrimitiveWithInfer, as_shape_tuple, prim_attr_register
from msops.primitives.rules import bprop, declare_without

__all__ = ["Node", "Graph", "TupleGetItem", "MakeTuple", "GraphError"]


class GraphError(Exception):
    """A construct that cannot be compiled (e.g. a data-dependent branch)."""


class TupleGetItem(PrimitiveWithInfer):
    """Select output `index` of a multi-output node."""

    const_inputs = (1,)

    @prim_attr_register
    def __init__(self) -> None:
        pass

    def infer_shape(self, shapes: tuple, index: int) -> list:
        return list(shapes[index])

    def infer_dtype(self, dtypes: tuple, index: int) -> mstype.Type:
        return dtypes[index]

    def kernel(self, values: tuple, index: int) -> Any:
        return values[index]


class MakeTuple(PrimitiveWithInfer):
    """Pack tensors into one tuple value (a tuple input of AddN, Concat, Broadcast)."""

    @prim_attr_register
    def __init__(self) -> None:
        pass

    def infer_shape(self, *shapes: list) -> tuple:
        return tuple(list(s) for s in shapes)

    def infer_dtype(self, *dtypes: mstype.Type) -> tuple:
        return tuple(dtypes)

    def kernel(self, *values: Any) -> tuple:
        return values


declare_without("sharding", TupleGetItem, MakeTuple,
                reason="a structural op has no sharding rule: the partition pass carries "
                       "its inputs' layouts through it")


@bprop(TupleGetItem, complex_values=True)
def tuple_getitem_bprop(prim: TupleGetItem, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout reaches output `index` of the tuple; its other outputs get none from here."""
    grads = [None] * len(inputs[0].dtype)
    grads[inputs[1].value] = dout
    return grads, None


@bprop(MakeTuple, complex_values=True)
def make_tuple_bprop(prim: MakeTuple, inputs: list, out: Any, dout: list, g: Any) -> tuple:
    """Each packed tensor gets its element's gradient."""
    return tuple(dout)


class Node:
    """One value of the graph: who makes it, from what, and its abstract value.

    `shape` is a tuple (a tuple of tuples for multi-output nodes), `dtype` a Type (or a
    tuple). `layout` is set by the parallel pass; `feed` (inputs/parameters) maps the full
    value fed by the user to this rank's slice; `source` is the user's line.
    """

    __slots__ = ("id", "kind", "prim", "inputs", "shape", "dtype", "value", "name",
                 "layout", "feed", "source", "comm_bytes")

    def __init__(self, id: int, kind: str, prim=None, inputs: Sequence["Node"] = (),
                 shape: tuple = (), dtype: Any = None, value: Any = None,
                 name: str | None = None, source: str | None = None) -> None:
        self.id = id
        self.kind = kind
        self.prim = prim
        self.inputs = list(inputs)
        self.shape = shape
        self.dtype = dtype
        self.value = value
        self.name = name
        self.layout = None
        self.feed: Callable | None = None
        self.source = source
        self.comm_bytes: int | None = None

    @property
    def op(self) -> str:
        """The primitive's name for op nodes; the kind ("input", "parameter", "const") otherwise."""
        return self.prim.name if self.prim is not None else self.kind

    @property
    def is_tuple(self) -> bool:
        return isinstance(self.dtype, tuple)

    @property
    def is_communication(self) -> bool:
        return self.prim is not None and self.prim.is_communication

    def __repr__(self) -> str:
        return f"%{self.id}:{self.op}{list(self.shape) if not self.is_tuple else self.shape}"


def _describe(inputs: Sequence[Node]) -> str:
    """`[2, 3] Float32, [4, 5] Float32` for an error message (const values as themselves)."""
    parts = []
    for n in inputs:
        if n.kind == "const" and n.dtype is None:
            parts.append(repr(n.value))
        elif n.is_tuple:
            parts.append("(" + ", ".join(f"{list(s)} {d}" for s, d in zip(n.shape, n.dtype)) + ")")
        else:
            parts.append(f"{list(n.shape)} {n.dtype}")
    return ", ".join(parts)


def flatten_outputs(result: Any) -> tuple[list, Any]:
    """(`result`'s leaves in order, its nesting for `nest_outputs`, or None when `result` is
    a leaf or a flat tuple/list)."""
    items: list = []

    def walk(r: Any) -> Any:
        if isinstance(r, (tuple, list)):
            return type(r)(walk(v) for v in r)
        items.append(r)
        return len(items) - 1
    tree = walk(result)
    nested = isinstance(result, (tuple, list)) and any(isinstance(r, (tuple, list))
                                                        for r in result)
    return items, tree if nested else None


def nest_outputs(values: Sequence[Any], tree: Any) -> Any:
    """`values` (one per flat output) arranged as `tree`: an int is that output, a tuple or
    list their arrangement."""
    if isinstance(tree, int):
        return values[tree]
    return type(tree)(nest_outputs(values, t) for t in tree)


class Graph:
    """A traced network: `inputs`, `parameters`, op `nodes` in execution order, `outputs`."""

    def __init__(self, name: str = "graph") -> None:
        self.name = name
        self.inputs: list[Node] = []
        self.parameters: list[Node] = []
        self.consts: list[Node] = []
        self.nodes: list[Node] = []
        self.outputs: list[Node] = []
        self.output_is_tuple = False
        #: the nesting of a construct's result when its tuples hold tuples (output indices in
        #: that structure, `nest_outputs`); None: the outputs as they are
        self.output_tree: Any = None
        #: host callables the executor runs before each step (an optimizer writing this
        #: step's learning rate into its Parameter); passes carry them to the graphs they build
        self.pre_run: list[Callable[[], Any]] = []
        #: the op-node ids of each recomputed cell call (Cell.recompute; graph/recompute.py)
        self.recompute: list[frozenset[int]] = []
        #: op-node id -> the pipeline stage it runs on, for the nodes whose stage is set (a
        #: Cell's `pipeline_stage`, carried through passes; parallel/stage_split.py)
        self.stage_of: dict[int, int] = {}
        #: op-node id -> (micro-batch, 0 forward / 1 backward) of the nodes a micro-batch
        #: loop made (nn.MicroBatches) and their backward nodes: a pipeline's 1F1B order
        self.micro_of: dict[int, tuple[int, int]] = {}
        self._next_id = 0

    def _new(self, kind: str, **kw: Any) -> Node:
        node = Node(self._next_id, kind, **kw)
        self._next_id += 1
        return node

    # -- building --------------------------------------------------------------------
    def add_input(self, shape: Sequence[int], dtype: mstype.Type, name: str | None = None) -> Node:
        node = self._new("input", shape=tuple(shape), dtype=dtype, name=name)
        self.inputs.append(node)
        return node

    def add_parameter(self, param: Any, shape: Sequence[int] | None = None) -> Node:
        """A node for Parameter `param` (its whole shape, even when it holds a slice after a
        parallel compile, unless `shape` is given)."""
        if shape is None:
            shape = getattr(param, "_full_shape", param.shape)
        node = self._new("parameter", shape=tuple(shape),
                         dtype=param.dtype, value=param, name=param.name)
        self.parameters.append(node)
        return node

    def add_const(self, value: Any) -> Node:
        """A constant: a Python value (for `const_inputs`) or an array (a captured Tensor)."""
        if isinstance(value, Tensor):
            value = value.asnumpy()
        if isinstance(value, np.ndarray):
            node = self._new("const", value=value, shape=value.shape,
                             dtype=mstype.from_numpy(value.dtype))
        else:
            node = self._new("const", value=value)
        self.consts.append(node)
        return node

    def apply(self, prim: Any, inputs: Sequence[Node], source: str | None = None) -> Node:
        """Append `prim(*inputs)`, inferring its shape and dtype (errors name op and source)."""
        shapes, dtypes = [], []
        for i, n in enumerate(inputs):
            if i in prim.const_inputs or (n.kind == "const" and n.dtype is None):
                shapes.append(n.value)
                dtypes.append(n.value)
            elif n.is_tuple:                        # multi-output or MakeTuple
                shapes.append([list(s) for s in n.shape])
                dtypes.append(list(n.dtype))
            else:
                shapes.append(list(n.shape))
                dtypes.append(n.dtype)
        try:
            shape, dtype = prim.infer(shapes, dtypes)
        except (ValueError, TypeError, IndexError) as err:
            where = f"\n  In {source}" if source else ""
            raise type(err)(f"{err}\n  Inputs of '{prim.name}': {_describe(inputs)}{where}") \
                from err
        node = self._new("op", prim=prim, inputs=inputs, shape=as_shape_tuple(shape),
                         dtype=tuple(dtype) if isinstance(dtype, (list, tuple)) else dtype,
                         source=source)
        self.nodes.append(node)
        return node

    def getitem(self, node: Node, index: int, source: str | None = None) -> Node:
        """The `index`-th output of a multi-output node."""
        return self.apply(TupleGetItem(), [node, self.add_const(index)], source)

    def make_tuple(self, nodes: Sequence[Node], source: str | None = None) -> Node:
        """One tuple-valued node from several tensor nodes."""
        return self.apply(MakeTuple(), list(nodes), source)

    # -- inspection -------------------------------------------------------------------
    def all_nodes(self) -> list[Node]:
        return self.inputs + self.parameters + self.nodes

    def dump(self) -> str:
        """Readable text IR: one line a node (id, op, inputs, shape, dtype, layout, attrs)."""
        from msops.graph.dump import dump_text
        return dump_text(self)

    def to_dot(self) -> str:
        """Graphviz DOT; communication ops drawn apart."""
        from msops.graph.dump import dump_dot
        return dump_dot(self)

    def __repr__(self) -> str:
        return (f"Graph({self.name}: {len(self.inputs)} inputs, {len(self.parameters)} "
                f"parameters, {len(self.nodes)} nodes)")
