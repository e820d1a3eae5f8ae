"""Graph mode: IR, tracer, compiler passes, executor and dumps."""
from msops.graph.ir import Graph, GraphError, Node

__all__ = ["Graph", "GraphError", "Node"]
