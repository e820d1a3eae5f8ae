"""Generated Python functions: straight-line source whose free names are bound values.

The compiled step (graph/executor.py) and the eager collective call (primitives/desync.py)
are generated rather than written as loops or nested closures: a line that calls a bound
kernel on local names costs a fraction of a Python frame or of unpacking a schedule entry
(docs/performance.md). A kernel may describe its own call as lines (`kernel.inline`,
see `inline_lines`) so that both splice it in without a frame of its own.
"""
from __future__ import annotations

import hashlib
import linecache
from typing import Any, Callable, Sequence

__all__ = ["Source", "indent", "inline_lines", "MISS", "miss"]

#: what a generated call returns for arguments it does not run (the caller takes its
#: general path)
MISS = object()


def miss(args: Sequence[Any]) -> Any:
    """The generated call that runs nothing: MISS for every call."""
    return MISS

#: `make` functions compiled from texts kept for reuse (`Source.make`):
#: functions of one template (an op's eager call, of any signature) differ only in the
#: values bound, so a new signature costs a call of `make`, not a compile
_MAKERS: dict[str, Callable] = {}


class Source:
    """The free names of generated functions and the values they are bound to."""

    def __init__(self) -> None:
        self.bound: dict[str, Any] = {}

    def bind(self, name: str, value: Any) -> str:
        """Bind `value` to a free name (`name`, or `name` with a suffix when `name` is taken
        by another value); returns the name to write."""
        taken = self.bound.get(name, value)
        k = 0
        while taken is not value:
            k += 1
            taken = self.bound.get(f"{name}_{k}", value)
        if k:
            name = f"{name}_{k}"
        self.bound[name] = value
        return name

    def compile(self, filename: str, text: str) -> Callable:
        """Compile `text`, one `def`, inside `make(<bound names>)` and return the function;
        its lines show in tracebacks under `filename` (which the caller drops from
        linecache when the function goes)."""
        return self._maker(filename, text, False)(**self.bound)

    def make(self, filename: str, text: str) -> Callable:
        """`make(**values) -> function`: `text` compiled once per distinct text (a template
        used again: an op's eager wrapper), its free names the keys of `bound` (values
        given anew each call of `make`); tracebacks show it under `filename` and the
        text's hash."""
        return self._maker(filename, text, True)

    def _maker(self, filename: str, text: str, shared: bool) -> Callable:
        name = text[4:text.index("(")]
        body = "".join(f"    {line}\n" for line in text.splitlines())
        text = f"def make({', '.join(self.bound)}):\n{body}    return {name}\n"
        make = _MAKERS.get(text) if shared else None
        if make is None:
            if shared:
                digest = hashlib.blake2b(text.encode(), digest_size=6).hexdigest()
                filename = f"{filename[:-1]} {digest}>"
            linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
            namespace: dict[str, Any] = {}
            exec(compile(text, filename, "exec"), namespace)
            make = namespace["make"]
            if shared:
                _MAKERS[text] = make
        return make


def indent(lines: Sequence[str], pad: str = "    ") -> list[str]:
    return [pad + line for line in lines]


def inline_lines(kernel: Callable, src: Source, args: Sequence[str], out: str | None,
                 target: str | None, name: str = "kernel") -> list[str]:
    """Lines that run `kernel(*args)` and leave its result in `target`, or (`out` given,
    `target` None) run `kernel(*args, out=out)`: the kernel's own lines when it offers
    them (`kernel.inline(src, args, out, target)`, a buffer-call collective), else one
    call of the kernel bound as `name`."""
    inline = getattr(kernel, "inline", None)
    if inline is not None:
        return inline(src, args, out, target)
    call = f"{src.bind(name, kernel)}({', '.join([*args, f'out={out}'] if out else args)})"
    return [f"{target} = {call}" if target else call]
