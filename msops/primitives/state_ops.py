"""State ops: primitives that write a Parameter (`Assign`), the optimizers' in-graph update.

A Parameter is the one value a compiled graph may write. `Assign()(variable, value)`
copies `value` into the Parameter's own array (never handing the Parameter a buffer of
the graph, so the buffer planner cannot alias it) and returns `value`. In a traced
construct the reads of the Parameter after the Assign see the new value (the tracer
rebinds the Parameter to the Assign's output: `Primitive.assigns_input`); the reads before
it see the old one, since the graph runs in trace order.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Parameter, Tensor
from msops.primitives import primitive as _primitive
from msops.primitives.math_ops import elementwise_spec
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.rules import bprop, sharding_rule

__all__ = ["Assign"]


class Assign(PrimitiveWithInfer):
    """`Assign()(variable, value)`: write `value` into the Parameter `variable` in place and
    return `value` (as `mindspore.ops.Assign`). Shapes and dtypes must be equal.

    Compiled, the write goes into the Parameter's own array (after a parallel compile it
    holds this rank's slice, which is what the graph's node stands for) and bumps
    `Parameter.version`.
    No gradient flows through an Assign.

    >>> p = Parameter(Tensor(np.zeros(2, np.float32)), name="p")
    >>> _ = Assign()(p, Tensor(np.ones(2, np.float32))); p.asnumpy()
    array([1., 1.], dtype=float32)
    """

    #: the input this op writes: the tracer makes later reads of that Parameter read the output
    assigns_input = 0

    @prim_attr_register
    def __init__(self) -> None:
        # a side effect: dead-node elimination keeps it although nobody reads its value
        self.add_prim_attr("side_effect_mem", True)

    def infer_shape(self, variable_shape: list, value_shape: list) -> list:
        if list(variable_shape) != list(value_shape):
            raise ValueError(f"For '{self.name}', the 'value' shape should be the 'variable' "
                             f"shape: {list(variable_shape)}, but got {list(value_shape)}.")
        return list(value_shape)

    def infer_dtype(self, variable_dtype: mstype.Type, value_dtype: mstype.Type) -> mstype.Type:
        validator.check_tensor_dtype_valid("variable", variable_dtype, mstype.all_types,
                                           self.name)
        if variable_dtype != value_dtype:
            raise TypeError(f"For '{self.name}', the 'value' dtype should be the 'variable' "
                            f"dtype: {variable_dtype}, but got {value_dtype}.")
        return value_dtype

    def __call__(self, *args: Any) -> Any:
        """Eagerly: the write itself (the Parameter object is needed, not only its array)."""
        if _primitive._trace_hook is not None:
            return _primitive._trace_hook(self, args)
        if len(args) != 2:
            raise TypeError(f"For '{self.name}', the inputs should be (variable, value), but "
                            f"got {len(args)} inputs.")
        variable, value = args
        if not isinstance(variable, Parameter):
            raise TypeError(f"For '{self.name}', the 'variable' should be a Parameter, but "
                            f"got {type(variable).__name__}.")
        values = self._eager_values(args)
        self.infer([list(v.shape) for v in values],
                   [mstype.from_numpy(v.dtype) for v in values])
        np.copyto(variable._data, values[1])
        variable.version += 1
        return value if isinstance(value, Tensor) else Tensor._wrap(values[1])

    def kernel(self, variable: np.ndarray, value: np.ndarray) -> np.ndarray:
        """On arrays (no Parameter known): write into `variable`'s memory."""
        np.copyto(variable, value)
        return value

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        """The write into the Parameter the compiled graph's variable node holds (after a
        parallel compile the Parameter's array is this rank's slice: the node's)."""
        var = in_abstracts[0]
        param = var.value if getattr(var, "kind", None) == "parameter" else None
        if not isinstance(param, Parameter):
            got = getattr(getattr(var, "prim", None), "name", None) or getattr(var, "kind", "?")
            raise TypeError(f"For '{self.name}', the 'variable' should be a Parameter of the "
                            f"graph, but got the value of '{got}' (in a parallel graph the "
                            f"Parameter's layout must be the one the Assign uses).")

        def assign(variable: np.ndarray, value: np.ndarray) -> np.ndarray:
            np.copyto(param._data, value)   # the Parameter holds exactly the node's slice
            param.version += 1
            return value
        return assign


sharding_rule(Assign)(elementwise_spec)


@bprop(Assign)
def assign_bprop(prim: Assign, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """A write is not differentiated: no gradient reaches the variable or the value."""
    return None, None
