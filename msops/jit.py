"""`ms.jit`: a function, or a Cell's `construct`, compiled as a graph (as MindSpore 2.x).

    @ms.jit
    def train_step(x, y):
        loss, grads = grad_fn(x, y)      # a value_and_grad traced inline: one graph
        optimizer(grads)                 # the update's Assigns compiled in
        return loss

The function is traced once per call signature (Tensor shapes and dtypes, the other
arguments' values, the mode, the auto-parallel context) through the compile pipeline
(msops.pipeline), in either mode, and the compiled step runs after that. Inside a graph
being traced, or while a PYNATIVE gradient records a tape, a jit function runs its body
inline, so `jit` composes with `grad` / `value_and_grad` both ways and with Cells.
"""
from __future__ import annotations

import functools
import weakref
from typing import Any, Callable, Sequence

from msops.graph.executor import Executor
from msops.graph.ir import Graph
from msops.pipeline import CompileCache, compile_function
from msops.primitives import primitive as _primitive

__all__ = ["jit", "JitConfig"]

#: MindSpore's `mode` (2.0-2.2) and `capture_mode` (2.3+) values: every way of capturing
#: the function ends in the same traced graph here
_MODES = ("PSJit", "PIJit")
_CAPTURE_MODES = ("ast", "bytecode", "trace")
_JIT_LEVELS = ("O0", "O1", "O2")
_BACKENDS = ("", "ms_backend", "GE")


class JitConfig:
    """`JitConfig(jit_level="O1", exc_mode="auto", jit_syntax_level="", debug_level="RELEASE",
    infer_boost="off", **kwargs)`: accepted for MindSpore scripts; msops compiles every
    level the same way (its one graph pipeline), so the settings are recorded only."""

    def __init__(self, jit_level: str = "", exc_mode: str = "auto", jit_syntax_level: str = "",
                 debug_level: str = "RELEASE", infer_boost: str = "off", **kwargs: Any) -> None:
        if jit_level and jit_level not in _JIT_LEVELS:
            raise ValueError(f"For 'JitConfig', the 'jit_level' should be one of "
                             f"{_JIT_LEVELS}, but got {jit_level!r}.")
        self.jit_config_dict = dict(jit_level=jit_level, exc_mode=exc_mode,
                                    jit_syntax_level=jit_syntax_level,
                                    debug_level=debug_level, infer_boost=infer_boost, **kwargs)


def _check_options(mode: str, input_signature: Any, jit_config: Any, capture_mode: str,
                   jit_level: str, dynamic: int, backend: str, options: dict) -> None:
    """Accept what msops honours (or what changes nothing here); refuse the rest clearly."""
    if mode not in _MODES:
        raise ValueError(f"For 'jit', the 'mode' should be one of {_MODES}, but got {mode!r}.")
    if capture_mode not in _CAPTURE_MODES:
        raise ValueError(f"For 'jit', the 'capture_mode' should be one of {_CAPTURE_MODES}, "
                         f"but got {capture_mode!r}.")
    if jit_level not in _JIT_LEVELS:
        raise ValueError(f"For 'jit', the 'jit_level' should be one of {_JIT_LEVELS}, but got "
                         f"{jit_level!r}.")
    if backend not in _BACKENDS:
        raise ValueError(f"For 'jit', the 'backend' should be one of {_BACKENDS} (msops runs "
                         f"its own numpy/MPI backend), but got {backend!r}.")
    if input_signature is not None:
        raise NotImplementedError(
            "For 'jit', the 'input_signature' is not supported: msops compiles once per call "
            "signature (shapes and dtypes of the Tensors passed), so call the function "
            "without it; a new shape compiles a new graph.")
    if dynamic not in (0, 1):
        raise ValueError(f"For 'jit', the 'dynamic' should be 0 or 1, but got {dynamic!r}.")
    if jit_config is not None and not isinstance(jit_config, (JitConfig, dict)):
        raise TypeError(f"For 'jit', the 'jit_config' should be a JitConfig or a dict, but "
                        f"got {type(jit_config).__name__}.")
    unknown = set(options) - {"hash_args", "compile_once", "fullgraph", "exc_mode",
                              "jit_syntax_level", "debug_level", "infer_boost"}
    if unknown:
        raise TypeError(f"For 'jit', the keyword arguments {sorted(unknown)} are not "
                        f"supported.")


def jit(function: Callable | None = None, mode: str = "PSJit", input_signature: Any = None,
        jit_config: Any = None, *, capture_mode: str = "ast", jit_level: str = "O0",
        dynamic: int = 0, backend: str = "", **options: Any) -> Any:
    """Compile `function` (a function, or a Cell's `construct` as a decorator) as a graph.

    Used as `@jit`, `@jit(...)` or `jit(fn, ...)`. `mode` ("PSJit"/"PIJit"),
    `capture_mode`, `jit_level`, `jit_config`, `backend` ("" / "ms_backend"), `dynamic`,
    `hash_args`, `compile_once` and `fullgraph` are accepted: msops has one way to
    capture and compile (trace, then the pipeline), used for all. `input_signature` is
    refused (msops compiles per call signature). Returns the compiled callable; the same
    numbers as calling the function eagerly.
    """
    _check_options(mode, input_signature, jit_config, capture_mode, jit_level, dynamic,
                   backend, options)
    if function is None:
        return lambda fn: _JitFunction(fn)
    if not callable(function):
        raise TypeError(f"For 'jit', the 'function' should be a function or a Cell's "
                        f"construct, but got {type(function).__name__}.")
    return _JitFunction(function)


class _JitFunction:
    """A jit-compiled callable; as a method (a Cell's `construct`) it binds per instance,
    each instance with its own compiled graphs."""

    def __init__(self, fn: Callable) -> None:
        # the name and docstring only: merging fn's __dict__ would let a callable object's
        # own attributes (a gradient function's `fn`) replace this wrapper's
        functools.update_wrapper(self, fn, updated=())
        self.fn = fn
        self._cache = CompileCache(self._compile)
        self._bound: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        bound = self._bound.get(obj)
        if bound is None:
            bound = self._bound[obj] = _JitFunction(self.fn.__get__(obj, objtype))
        return bound

    def _compile(self, fn: Callable, args: Sequence[Any]) -> tuple[Graph, Executor]:
        return compile_function(fn, args, getattr(fn, "__qualname__", "jit"))

    @property
    def traces(self) -> int:
        """How many signatures were compiled."""
        return len(self._cache)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"For 'jit', the compiled function '{self.__name__}' should be "
                            f"called with positional arguments, but got keywords "
                            f"{sorted(kwargs)}.")
        if _primitive._trace_hook is not None:      # inside a trace or a gradient's tape
            return self.fn(*args)
        owner = getattr(self.fn, "__self__", None)
        flags = owner._tree_key() if hasattr(owner, "_tree_key") else ()
        return self._cache.run(self.fn, args, flags)
