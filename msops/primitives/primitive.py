"""Primitive: an op's attributes, shape/dtype inference, kernel and sharding strategy.

A primitive subclass declares
  * `__init__` decorated with `prim_attr_register` (its arguments become attrs, each
    readable as `prim.attrs[name]` and as the attribute `prim.<name>`),
  * `infer_shape(*shapes)` / `infer_dtype(*dtypes)` — pure; tensor inputs arrive as a
    shape list / msops Type, inputs listed in `const_inputs` arrive as Python values,
  * `kernel(*values)` — numpy arrays in, numpy array(s) out (comm kernels call MPI); an
    op declaring `writes_output` takes `out=None`, an array to write its one output into,
  * optionally `lower(in_abstracts, out_abstract)` returning a kernel specialised for
    one signature (MPI types, bound methods, shapes chosen once): eager calls and the
    compiled executor both run that.

Calling a primitive runs it eagerly or, while a graph is being traced, records it: the
tracer installs a hook, so this layer never imports it. An eager call is: the call's
signature (input shapes and dtypes, constant values) → the kernel lowered for it (inferred
and lowered on the first call with that signature, then kept) → a fresh output → a
Tensor; a signature called again runs as one generated function (`_fast_call`). msops
keeps no reference to what it hands out.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common.shard_layout import Layout
from msops.common.codegen import MISS, Source, inline_lines, miss
from msops.common.state_epoch import bump
from msops.common.tensor import Tensor, refuse_placeholder
from msops.primitives.lowering import Abstract

__all__ = ["Primitive", "PrimitiveWithInfer", "prim_attr_register", "set_trace_hook",
           "signature_of"]

# Set by msops.graph.tracer while a construct is traced: hook(prim, args) -> outputs.
_trace_hook: Callable | None = None


def set_trace_hook(hook: Callable | None) -> Callable | None:
    """Install the tracer's call hook (None to remove); returns the previous one."""
    global _trace_hook
    prev, _trace_hook = _trace_hook, hook
    return prev


def prim_attr_register(fn: Callable) -> Callable:
    """Decorate a primitive's `__init__`: record every argument (defaults too) as an attr.

    A subclass's decorated `__init__` may call its parent's: the base is set up once,
    so the attrs the subclass recorded are kept.
    """
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        bound = sig.bind(self, *args, **kwargs)
        bound.apply_defaults()
        if "attrs" not in self.__dict__:
            Primitive.__init__(self, type(self).__name__)
        for name, value in list(bound.arguments.items())[1:]:
            if sig.parameters[name].kind in (inspect.Parameter.VAR_POSITIONAL,
                                             inspect.Parameter.VAR_KEYWORD):
                continue
            self.add_prim_attr(name, value)
            self.init_attrs[name] = value
        fn(self, *args, **kwargs)
    return wrapper


def _check_strategy(strategy: Any, arg: str, name: str) -> tuple | None:
    if strategy is None:
        return None
    if not isinstance(strategy, tuple):
        raise TypeError(f"For '{name}', the '{arg}' should be a tuple of tuples of ints, "
                        f"but got {type(strategy).__name__}: {strategy!r}.")
    if not strategy:
        raise ValueError(f"For '{name}', the '{arg}' should hold one tuple per input, "
                         f"but got an empty tuple ().")
    if any(isinstance(s, Layout) for s in strategy):
        return _check_layouts(strategy, arg, name)
    for i, s in enumerate(strategy):
        if not isinstance(s, tuple):
            raise TypeError(f"For '{name}', the '{arg}[{i}]' should be a tuple of ints, "
                            f"but got {type(s).__name__}: {s!r}.")
        for v in s:
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"For '{name}', every value of '{arg}[{i}]' should be an int, "
                                f"but got {type(v).__name__}: {v!r} in {s}.")
    return strategy


def _check_layouts(strategy: tuple, arg: str, name: str) -> tuple:
    """A strategy of Layouts (msops.parallel.Layout): every entry a called Layout, all over
    the same device matrix and aliases."""
    for i, s in enumerate(strategy):
        if not isinstance(s, Layout):
            raise TypeError(f"For '{name}', the '{arg}' should be all Layouts or all tuples "
                            f"of ints, but '{arg}[{i}]' is {type(s).__name__}: {s!r}.")
        if s.tensor_map is None:
            raise ValueError(f"For '{name}', '{arg}[{i}]' should be a called Layout (one alias "
                             f"per tensor dim, e.g. layout('dp', 'None')), but got {s!r}.")
        first = strategy[0]
        if (s.device_matrix, s.alias_name) != (first.device_matrix, first.alias_name):
            raise ValueError(f"For '{name}', every Layout of '{arg}' should share one device "
                             f"matrix and aliases, but '{arg}[0]' has {first.device_matrix} "
                             f"{first.alias_name} and '{arg}[{i}]' has {s.device_matrix} "
                             f"{s.alias_name}.")
    return strategy


def signature_of(value: Any) -> Any:
    """Hashable key of one call argument: (shape, dtype) for arrays, the value otherwise."""
    if isinstance(value, np.ndarray):
        return (value.shape, value.dtype)
    if isinstance(value, list):
        return tuple(signature_of(v) for v in value)
    return value


_wrap = Tensor._wrap
_new_tensor = object.__new__
def _fast_call(prim: "Primitive", kernel: Callable, tupled: bool, shape: tuple,
               dtype: np.dtype, rest: tuple, out_dtype: Any) -> Callable:
    """`call(args)`: the whole eager call of one lowered signature (a Tensor, or a 1-tuple
    of one, of `shape` and `dtype`, then the constants `rest`) in one generated function:
    the argument checks, the kernel's own lines when it offers them (a collective's watchdog,
    check and MPI call), the output's Tensor. Any other call: MISS, having run nothing."""
    src = Source()
    bind = src.bind
    miss = f"return {bind('MISS', MISS)}"
    tensor = bind("Tensor", Tensor)
    lines = [f"if len(args) != {1 + len(rest)}:", f"    {miss}", "t0 = args[0]"]
    if tupled:
        lines += ["if type(t0) is not tuple or len(t0) != 1:", f"    {miss}", "u0 = t0[0]",
                  f"if type(u0) is not {tensor}:", f"    {miss}", "x = u0._data"]
    else:
        lines += [f"if type(t0) is not {tensor}:", f"    {miss}", "x = t0._data"]
    lines += [f"if x.shape != {bind('shape', shape)} or x.dtype is not {bind('dtype', dtype)}:",
              f"    {miss}"]
    args = ["[x]" if tupled else "x"]
    if rest:                               # constants compared by value (immutable ones)
        lines += ["try:", f"    same = args[1:] == {bind('rest', rest)}",
                  "except (ValueError, TypeError):          # an array among the arguments",
                  "    same = False", "if not same:", f"    {miss}"]
        args.append(f"*{bind('rest', rest)}")
    lines += inline_lines(kernel, src, args, None, "out")
    return src.make(f"<msops call {prim.name}>", "def call(args):\n" + "".join(
        f"    {line}\n" for line in lines + _result_lines(prim, src, tupled, out_dtype))
    )(**src.bound)


def _result_lines(prim: "Primitive", src: Source, tupled: bool, out_dtype: Any) -> list[str]:
    """The end of `_fast_call`'s function: the kernel's `out` as the call returns it (what
    `_results` does, made inline for one new array, or a 1-tuple of one from a collective)."""
    bind = src.bind
    results, ndarray = bind("results", _results), bind("ndarray", np.ndarray)
    new = f"{bind('new', _new_tensor)}({bind('Tensor', Tensor)})"
    if isinstance(out_dtype, mstype.Type):
        # kernels return C-contiguous arrays of the inferred dtype (test_compute_contract)
        return [f"if out is x or type(out) is not {ndarray}:", f"    return {results}(out, t0)",
                f"t = {new}", "t._data = out", f"t._dtype = {bind('out_type', out_dtype)}",
                "return t"]
    if tupled and prim.is_communication and isinstance(out_dtype, tuple) and \
            len(out_dtype) == 1:                   # Broadcast: its own input, or a new array
        return ["o = out[0]", f"if o is x or type(o) is not {ndarray}:",
                f"    return {results}(out, t0)", f"t = {new}", "t._data = o",
                f"t._dtype = {bind('out_type', out_dtype[0])}", "return (t,)"]
    return [f"return {results}(out, t0)"]


class Primitive:
    """Base of every op. `name`, `attrs`, strategies, and eager/traced dispatch."""

    #: positions of inputs that are compile-time values (shapes, axes, counts), not tensors
    const_inputs: tuple[int, ...] = ()
    #: True for ops that move data between ranks (dump/DOT draw them apart)
    is_communication: bool = False
    #: True when the op's single output is a new C-contiguous array of the inferred shape and
    #: dtype, and every kernel of the op (`kernel`, and what `lower` returns) takes `out=None`:
    #: an array of exactly that shape and dtype to write the result into (None: the kernel
    #: allocates one); it returns the array written. Graph mode plans such outputs' buffers
    #: from their lifetimes; an eager call gets a fresh one.
    writes_output: bool = False
    #: True when a `writes_output` kernel stays correct with `out` one of its own inputs of
    #: the same shape and dtype (element-wise ufuncs): graph mode may then write in place
    #: over an input that dies at this node
    out_may_be_input: bool = False
    #: True when every output is a new array, never a view of an input, though the op does
    #: not plan its buffers (`writes_output`): its outputs share no memory with its inputs
    fresh_outputs: bool = False
    #: the input position of a Parameter the op writes in place (Assign), else None: the
    #: tracer makes later reads of that Parameter read the op's output (the new value)
    assigns_input: int | None = None
    #: True when each call draws new random values (advancing the draw counter): a pass
    #: must not run such a node twice (a recomputation would draw other values)
    draws_random: bool = False
    #: True when the op's backward rule is right for complex values too (real-linear ops;
    #: holomorphic ones conjugating their derivative, math_ops.conj_of); autodiff refuses
    #: a complex value through any other op rather than give a wrong gradient
    complex_grad: bool = False
    #: the eager call of a signature called twice in a row (`_fast_call`), else MISS for
    #: every call; `_next_fast`: the signature lowered last, and its `_fast_call` arguments
    _fast: Callable = staticmethod(miss)
    _next_fast: tuple | None = None

    def __init__(self, name: str | None = None) -> None:
        self.attrs: dict[str, Any] = {}
        self.name = name or type(self).__name__
        self.init_attrs: dict[str, Any] = {}
        self.in_strategy: tuple | None = None
        self.out_strategy: tuple | None = None
        self._kernels: dict = {}           # eager signature -> lowered kernel

    # -- attributes ---------------------------------------------------------------
    def add_prim_attr(self, name: str, value: Any) -> "Primitive":
        """Set attribute `name`: `prim.attrs[name]` and the attribute `prim.<name>`."""
        self.attrs[name] = value
        setattr(self, name, value)
        return self

    def del_prim_attr(self, name: str) -> "Primitive":
        if name in self.attrs:
            del self.attrs[name]
            self.__dict__.pop(name, None)
        return self

    def get_attr_dict(self) -> dict:
        return self.attrs

    # -- strategies -----------------------------------------------------------------
    def shard(self, in_strategy: tuple | None = None,
              out_strategy: tuple | None = None) -> "Primitive":
        """Set the semi-auto-parallel strategy: slices per dim of each input (and output)."""
        in_s = _check_strategy(in_strategy, "in_strategy", self.name)
        out_s = _check_strategy(out_strategy, "out_strategy", self.name)
        if out_s is not None and in_s is None:
            raise ValueError(f"For '{self.name}', the 'out_strategy' needs an 'in_strategy', "
                             f"but got in_strategy=None, out_strategy={out_s}.")
        self.in_strategy, self.out_strategy = in_s, out_s
        if in_s is not None:
            self.add_prim_attr("in_strategy", in_s)
        if out_s is not None:
            self.add_prim_attr("out_strategy", out_s)
        bump()                        # a Cell's compiled graphs are keyed by its strategies
        return self

    def set_strategy(self, strategy: tuple | None = None) -> "Primitive":
        """The older spelling of `shard(in_strategy)`."""
        return self.shard(strategy)

    # -- inference --------------------------------------------------------------------
    def infer_shape(self, *args: Any) -> Any:
        raise NotImplementedError(f"'{self.name}' does not define infer_shape.")

    def infer_dtype(self, *args: Any) -> Any:
        raise NotImplementedError(f"'{self.name}' does not define infer_dtype.")

    def infer(self, shapes: Sequence[Any], dtypes: Sequence[Any]) -> tuple[Any, Any]:
        """(out shape(s), out dtype(s)) for input shapes/dtypes (values for const inputs)."""
        return self.infer_shape(*shapes), self.infer_dtype(*dtypes)

    def kernel(self, *args: Any) -> Any:
        raise NotImplementedError(f"'{self.name}' has no kernel.")

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        """The kernel for one compiled signature; override to precompute per-call work."""
        return self.kernel

    def eager(self, kernel: Callable, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        """The kernel eager calls of one signature run: `kernel` itself, or (collectives) it
        wrapped in what only eager calls pay for (a compiled graph runs `lower`'s kernel)."""
        return kernel

    # -- calling ---------------------------------------------------------------------
    def __call__(self, *args: Any) -> Any:
        """Run eagerly (record the call while a graph is traced): the kernel lowered for
        this call's signature, on the inputs' arrays, its output(s) wrapped as Tensors."""
        if _trace_hook is not None:
            return _trace_hook(self, args)
        out = self._fast(args)              # a call like the last lowered one: all of it
        if out is not MISS:
            return out
        first = args[0] if args else None
        try:                         # Tensors, tuples of Tensors, hashable constants
            values, key = _fast_values(args, self.const_inputs)
            kernel = self._kernels.get(key)
        except (AttributeError, TypeError):
            kernel = None
        if kernel is None:
            values = self._eager_values(args)
            kernel = self._lowered(values)
        elif self._next_fast is not None and self._next_fast[0] == key:
            # the signature lowered last is called again: from now on, one generated call
            self._fast = _fast_call(self, kernel, *self._next_fast[1:])
            self._next_fast = None
        return _results(kernel(*values), first)

    def _eager_values(self, args: Sequence[Any]) -> list:
        values = []
        # a Python scalar takes the dtype of the first tensor input, even one after it (2 - x)
        first = next((a._data if isinstance(a, Tensor) else a for i, a in enumerate(args)
                      if i not in self.const_inputs and isinstance(a, (Tensor, np.ndarray))), None)
        for i, a in enumerate(args):
            if i in self.const_inputs:
                values.append(a.asnumpy().tolist() if isinstance(a, Tensor) else a)
                continue
            if isinstance(a, (tuple, list)) and a and all(isinstance(t, Tensor) for t in a):
                values.append([t._data for t in a])      # a tuple input (Broadcast, AddN)
                continue
            if isinstance(a, Tensor):
                refuse_placeholder(a, self.name, f"input {i}")
                arr = a._data
            elif isinstance(a, np.ndarray):     # (np.ascontiguousarray would make 0-d 1-d)
                arr = self._eager_array(i, a)
            elif isinstance(a, (bool, int, float, complex, np.generic)):
                arr = _scalar_like(a, first)
            else:
                raise TypeError(f"For '{self.name}', the input {i} should be a Tensor, "
                                f"but got {type(a).__name__}.")
            values.append(arr)
        return values

    def _eager_array(self, i: int, a: np.ndarray) -> np.ndarray:
        """A numpy input as kernels take it: C-contiguous, native byte order, of a dtype
        msops carries (TypeError naming the op otherwise, e.g. object arrays)."""
        if not a.dtype.isnative:             # e.g. '>f4' read from a file: MPI reduces native
            a = a.astype(a.dtype.newbyteorder("="))
        try:
            mstype.from_numpy(a.dtype)
        except TypeError:
            raise TypeError(f"For '{self.name}', the input {i} should be an array of bool, int, "
                            f"uint, float or complex, but got dtype {a.dtype}.") from None
        return a if a.flags.c_contiguous else np.ascontiguousarray(a)

    def _lowered(self, values: list) -> Callable:
        """The kernel for the signature of `values`: inferred (argument errors surface before
        the kernel runs) and lowered on first sight, then kept for the calls that follow."""
        try:
            key = tuple([signature_of(v) for v in values])
            kernel = self._kernels.get(key)
            if kernel is not None:
                return kernel
        except TypeError:            # unhashable constant: infer every call
            key = None
        consts = self.const_inputs
        shapes = [_abstract(v, i in consts, _shape_of) for i, v in enumerate(values)]
        dtypes = [_abstract(v, i in consts, _dtype_of) for i, v in enumerate(values)]
        out_shape, out_dtype = self.infer(shapes, dtypes)
        ins = [Abstract("const", value=v) if i in consts else _abstract_input(s, d)
               for i, (v, s, d) in enumerate(zip(values, shapes, dtypes))]
        out = _abstract_op(out_shape, out_dtype)
        if key is None:
            return self.eager(self.kernel, ins, out)
        kernel = remember(self._kernels, key, self.eager(self.lower(ins, out), ins, out))
        first, rest = (values[0] if values else None), tuple(values[1:])
        tupled = type(first) is list and len(first) == 1
        if tupled:
            first = first[0]
        if isinstance(first, np.ndarray) and all(i in consts for i in range(1, len(values))) \
                and _immutable(rest):
            # its generated call is made if it is called again (not for counts that change
            # every call): `_fast_call`'s arguments, by key
            self._next_fast = (key, tupled, first.shape, first.dtype, rest, out_dtype)
        return kernel

    def __repr__(self) -> str:
        shown = {k: v for k, v in self.attrs.items() if k not in ("in_strategy", "out_strategy")}
        body = ", ".join(f"{k}={v!r}" for k, v in shown.items())
        return f"Prim[{self.name}]" + (f"<{body}>" if body else "")


def _abstract_input(shape: Any, dtype: Any) -> Abstract:
    return Abstract("input", as_shape_tuple(shape), _as_dtype(dtype))


def _abstract_op(shape: Any, dtype: Any) -> Abstract:
    return Abstract("op", as_shape_tuple(shape), _as_dtype(dtype))


def _as_dtype(dtype: Any) -> Any:
    """An inferred dtype as a graph Node holds it: a Type, or a tuple of Types."""
    return tuple(dtype) if isinstance(dtype, (list, tuple)) else dtype


def as_shape_tuple(shape: Any) -> tuple:
    """An inferred shape as a graph Node holds it: a tuple, or a tuple of tuples."""
    if isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple)):
        return tuple(tuple(s) for s in shape)
    return tuple(shape)


#: signatures (lowered kernels) a primitive keeps: AllToAllV's counts may change every call
CACHE_LIMIT = 256


def remember(cache: dict, key: Any, value: Any) -> Any:
    """cache[key] = value, forgetting the oldest entry beyond CACHE_LIMIT; returns value."""
    if len(cache) >= CACHE_LIMIT:
        del cache[next(iter(cache))]
    cache[key] = value
    return value


def _fast_values(args: Sequence[Any], consts: tuple[int, ...]) -> tuple[list, tuple]:
    """(kernel arguments, signature key) of a call whose inputs are Tensors, tuples of
    Tensors or hashable constants: the key `_lowered` would build, without converting.

    Anything else raises (AttributeError, TypeError) and takes the general path.
    """
    values, key = list(args), list(args)
    for i, a in enumerate(args):
        if i in consts:
            if type(a) is list:
                key[i] = tuple(a)
        elif type(a) is tuple or type(a) is list:
            values[i] = arrays = [t._data for t in a]
            key[i] = tuple([(v.shape, v.dtype) for v in arrays])
        else:
            values[i] = v = a._data
            key[i] = (v.shape, v.dtype)
    return values, tuple(key)


def _results(out: Any, first: Any) -> Any:
    """A kernel's result as the call's: None, a Tensor, or a tuple of Tensors. An output
    that is the first input's own data is that input: its Tensor (exactly a Tensor; a
    Parameter's data comes back as a new Tensor), or its tuple of Tensors (`first`: the
    call's first argument)."""
    if type(out) is np.ndarray:
        return first if type(first) is Tensor and out is first._data else _wrap(out)
    if out is None:
        return None
    if isinstance(out, tuple):
        if len(out) == 1 and type(first) is tuple and len(first) == 1:
            t = first[0]
            return first if type(t) is Tensor and out[0] is t._data else (_wrap(out[0]),)
        if type(first) is tuple and len(out) == len(first) and \
                all(type(t) is Tensor and o is t._data for o, t in zip(out, first)):
            return first
        return (_wrap(out[0]),) if len(out) == 1 else tuple([_wrap(o) for o in out])
    if type(first) is Tensor and out is first._data:
        return first
    return _wrap(out)


def _immutable(value: Any) -> bool:
    """True for values that cannot change after a call (so equality now means equality
    later): numbers, strings, None, dtypes, and tuples of them."""
    if isinstance(value, tuple):
        return all(_immutable(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, complex, str, mstype.Type))


def _shape_of(a: np.ndarray) -> list:
    return list(a.shape)


def _dtype_of(a: np.ndarray) -> mstype.Type:
    return mstype.from_numpy(a.dtype)


def _abstract(value: Any, is_const: bool, of: Callable) -> Any:
    """What infer_* receive for one input: the value if constant, else shape/dtype (list-wise)."""
    if is_const:
        return value
    if isinstance(value, list):
        return [of(v) for v in value]
    return of(value)


#: numpy's dtype kinds -> msops's (bfloat16, numpy kind 'V', is read from its msops Type)
_KIND_OF_NP = {"b": "bool", "i": "int", "u": "uint", "f": "float", "c": "complex"}


def _scalar_like(value: Any, like: np.ndarray | None) -> np.ndarray:
    """A Python scalar as a 0-d array, taking the dtype of the tensor beside it when it fits."""
    if like is not None:
        kind = _KIND_OF_NP.get(like.dtype.kind) or mstype.from_numpy(like.dtype).kind
        if (isinstance(value, bool) and kind == "bool") or \
           (isinstance(value, (int, np.integer)) and kind in ("int", "uint", "float", "complex")) or \
           (isinstance(value, (float, np.floating)) and kind in ("float", "complex")) or \
           (isinstance(value, complex) and kind == "complex"):
            return np.asarray(value, dtype=like.dtype)
    arr = np.asarray(value)
    return arr.astype(np.float32) if arr.dtype == np.float64 else arr


class PrimitiveWithInfer(Primitive):
    """A Primitive whose Python `infer_shape`/`infer_dtype` define its abstract evaluation."""
