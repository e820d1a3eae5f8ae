"""Graph mode: IR, tracer, dead-node elimination, executor and dumps."""
from msops.graph.ir import Graph, GraphError, Node

__all__ = ["Graph", "GraphError", "Node"]
