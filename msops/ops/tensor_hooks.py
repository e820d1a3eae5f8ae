"""`Tensor.register_hook(hook)`: a backward hook on one Tensor (as MindSpore's).

The Tensor becomes the output of an `InsertGradientOf(hook)` applied to it, so every use
after the registration reads a value whose backward passes the gradient through the hook
(the total gradient of those uses). A traced Tensor is rebound to the new node (GRAPH_MODE,
ms.jit: the hook is traced into the backward, made of ops); a Tensor recorded on a
gradient's tape is rebound on the tape (PYNATIVE_MODE: the hook runs on the values). A
Tensor neither traced nor recorded keeps its hooks until a gradient function takes it as
an input (PYNATIVE_MODE) and applies them there.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable

from msops.common.tensor import Parameter, Tensor, register_methods
from msops.primitives import primitive as _primitive
from msops.primitives.debug_ops import InsertGradientOf

__all__ = ["register_hook", "TensorHookHandle", "apply_leaf_hooks", "leaf_hooks_refused"]

_ids = itertools.count()


class TensorHookHandle:
    """What `register_hook` returns: `remove()` stops the hook (a backward already built
    passes the gradient through unchanged from then on)."""

    def __init__(self, hooks: dict, key: int) -> None:
        self._hooks, self._key = hooks, key

    def remove(self) -> None:
        self._hooks.pop(self._key, None)


def _while_registered(hooks: dict, key: int) -> Callable[[Any], Any]:
    def hooked(grad: Any) -> Any:
        hook = hooks.get(key)
        if hook is None:
            return grad
        got = hook(grad)
        if got is None:
            raise TypeError("For 'Tensor.register_hook', the hook should return the new "
                            "gradient (a Tensor), but got None.")
        return got
    return hooked


def register_hook(self: Tensor, hook: Callable) -> TensorHookHandle:
    """`hook(grad) -> new grad` on this Tensor's gradient; a handle to remove it."""
    if isinstance(self, Parameter):
        raise NotImplementedError("For 'Tensor.register_hook', a hook on a Parameter is not "
                                  "supported; hook the gradient of the value computed from "
                                  "it (e.g. ops.InsertGradientOf on its use).")
    if not callable(hook):
        raise TypeError(f"For 'Tensor.register_hook', the 'hook' should be a function, but "
                        f"got {type(hook).__name__}.")
    hooks = self.__dict__.setdefault("_grad_hooks", {})
    key = next(_ids)
    hooks[key] = hook
    recorder = getattr(_primitive._trace_hook, "__self__", None)
    if hasattr(self, "_node"):                       # traced: rebound to the hook's node
        self._node = InsertGradientOf(_while_registered(hooks, key))(self)._node
    elif hasattr(recorder, "rebind") and recorder.records(self):   # on a gradient's tape
        recorder.rebind(self, InsertGradientOf(_while_registered(hooks, key))(self))
    return TensorHookHandle(hooks, key)


def apply_leaf_hooks(original: Tensor, leaf: Tensor) -> Tensor:
    """`leaf` (a gradient function's input standing for `original`) through the hooks
    registered on `original` outside any recording, in registration order."""
    for key in list(original.__dict__.get("_grad_hooks", {})):
        leaf = InsertGradientOf(_while_registered(original._grad_hooks, key))(leaf)
    return leaf


def leaf_hooks_refused(api: str, args: Any) -> None:
    """A compiled gradient function's inputs carry no hooks registered outside it: its
    graph is traced on fresh inputs, which would drop them silently."""
    for k, a in enumerate(args):
        if isinstance(a, Tensor) and a.__dict__.get("_grad_hooks"):
            raise NotImplementedError(
                f"For '{api}', the input {k} has a hook (Tensor.register_hook) registered "
                f"outside the function: in GRAPH_MODE hooks work on Tensors the function "
                f"computes (register it inside), or use PYNATIVE_MODE.")


register_methods({"register_hook": register_hook})
