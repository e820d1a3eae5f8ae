"""The rules of each primitive, by kind: registered beside its class, read by the passes.

A rule is a function a pass calls for one application of a primitive. Each kind has one
calling convention (`RULE_KINDS`); the passes that read a kind own its meaning:

    @sharding_rule(_Binary)               # or register_rule("sharding", _Binary)
    def elementwise_spec(prim, in_shapes, out_shapes, consts) -> DimSpec: ...

Lookup walks the class's MRO, so a family base registers once for all its ops, and the
nearest class wins (a subclass may override its family's rule). A class can instead be
declared *without* a rule of a kind, with the reason a pass reports
(`declare_without("sharding", _Collective, reason=...)`). A required kind must be
covered, by a rule or a declaration, for every primitive: the completeness test checks
every primitive that msops.ops exports with `missing(kind, classes)`.

The registry only maps classes to functions: it imports no pass, so rules live beside
their ops in the primitives layer and the passes above import them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, TypeVar

__all__ = ["RuleKind", "RULE_KINDS", "register_rule", "declare_without", "rule_of",
           "reason_without", "missing", "sharding_rule", "out_strategy_rule", "expansion_rule",
           "bprop", "fusion_rule", "batch_rule"]

F = TypeVar("F", bound=Callable)


@dataclass(frozen=True)
class RuleKind:
    """One kind of rule: its calling convention and whether every primitive needs one."""

    signature: str
    required: bool


#: every kind of rule; a new pass adds its kind here
RULE_KINDS: dict[str, RuleKind] = {
    "sharding": RuleKind("(prim, in_shapes, out_shapes, consts) -> DimSpec: the op's dims, "
                         "einsum-like (the partition pass derives its layouts)", required=True),
    "out_strategy": RuleKind("(prim, in_strategy, out_strategy, out_shapes) -> outputs' "
                             "letters: the output split an out strategy asks for (an op "
                             "without one refuses an out strategy)", required=False),
    "expansion": RuleKind("(prim, call: ShardedCall) -> local node or None: a local subgraph "
                          "replacing the op under its sharding (None: the op itself)",
                          required=False),
    "bprop": RuleKind("(prim, inputs, out, dout, g) -> one gradient per input (None: none): "
                      "the backward rule, built by applying primitives through the builder "
                      "`g` (`apply`, `add_const`, `getitem`, `make_tuple`; `inline` runs or traces a "
                      "Python function of Tensors, a gradient hook); `dout` is a list "
                      "for a multi-output op", required=True),
    "fusion": RuleKind("(prim, node) -> CommFusion | None: how this application of a "
                       "collective fuses with independent ones of the same key into one "
                       "collective on a packed flat buffer (the communication-fusion pass; "
                       "None: it does not fuse)", required=False),
    "batch": RuleKind("(prim, args, dims, size) -> (out, out_dims): the op mapped over a "
                      "batch axis (vmap, graph/batching.py): `args` the call's arguments with "
                      "their batched values, `dims` each one's batch axis (None: not batched; "
                      "a tuple for a tuple argument), `size` the batch size; the rule calls "
                      "ordinary primitives and returns their result with its batch axis (a "
                      "tuple for a multi-output op). Ops without one run once per batch "
                      "element (primitives/batching.py `per_element`)", required=False),
}

_rules: dict[str, dict[type, Callable]] = {kind: {} for kind in RULE_KINDS}
_without: dict[str, dict[type, str]] = {kind: {} for kind in RULE_KINDS}


def _check(api: str, kind: str, classes: Iterable[type]) -> None:
    if kind not in RULE_KINDS:
        raise ValueError(f"For '{api}', the 'kind' should be one of {sorted(RULE_KINDS)}, "
                         f"but got {kind!r}.")
    classes = tuple(classes)
    if not classes or not all(isinstance(c, type) for c in classes):
        raise TypeError(f"For '{api}', the classes should be one or more primitive classes, "
                        f"but got {classes!r}.")
    for cls in classes:
        if cls in _rules[kind] or cls in _without[kind]:
            raise ValueError(f"For '{api}', '{cls.__name__}' should get one '{kind}' rule or "
                             f"declaration, but it already has one.")


def register_rule(kind: str, *classes: type) -> Callable[[F], F]:
    """Decorator: the function becomes the `kind` rule of `classes` (and their subclasses)."""
    _check("register_rule", kind, classes)

    def register(fn: F) -> F:
        for cls in classes:
            _rules[kind][cls] = fn
        return fn
    return register


def declare_without(kind: str, *classes: type, reason: str) -> None:
    """Declare that `classes` have no `kind` rule; `reason` completes "For 'Op', ..." in the
    error of a pass that would need one."""
    _check("declare_without", kind, classes)
    if not reason:
        raise ValueError("For 'declare_without', the 'reason' should be a non-empty string, "
                         "but got ''.")
    for cls in classes:
        _without[kind][cls] = reason


def _nearest(kind: str, prim: object) -> tuple[Callable | None, str | None]:
    """(rule, reason without) of the nearest class in the MRO that has either."""
    cls = prim if isinstance(prim, type) else type(prim)
    for base in cls.__mro__:
        if base in _rules[kind]:
            return _rules[kind][base], None
        if base in _without[kind]:
            return None, _without[kind][base]
    return None, None


def rule_of(kind: str, prim: object) -> Callable | None:
    """The `kind` rule of a primitive (instance or class), or None."""
    return _nearest(kind, prim)[0]


def reason_without(kind: str, prim: object) -> str | None:
    """Why a primitive is declared without a `kind` rule, or None when it is not."""
    return _nearest(kind, prim)[1]


def missing(kind: str, classes: Iterable[type]) -> list[type]:
    """The classes with neither a `kind` rule nor a declaration without one."""
    return [cls for cls in classes if _nearest(kind, cls) == (None, None)]


def sharding_rule(*classes: type) -> Callable[[F], F]:
    """`register_rule("sharding", *classes)`."""
    return register_rule("sharding", *classes)


def out_strategy_rule(*classes: type) -> Callable[[F], F]:
    """`register_rule("out_strategy", *classes)`."""
    return register_rule("out_strategy", *classes)


def expansion_rule(*classes: type) -> Callable[[F], F]:
    """`register_rule("expansion", *classes)`."""
    return register_rule("expansion", *classes)


def bprop(*classes: type, complex_values: bool = False,
          holomorphic: bool = False) -> Callable[[F], F]:
    """`register_rule("bprop", *classes)`: the backward rule autodiff reads.
    `complex_values`: the rule is right for complex values too (a real-linear op, or one
    conjugating its derivative); autodiff refuses complex values through the others.
    `holomorphic`: the op is a holomorphic function with real coefficients (sin, exp, sqrt,
    ...) and its rule dout * f'(x) is written for reals: autodiff hands it the conjugates
    of the op's complex inputs and output, since conj(f'(z)) = f'(conj(z)) for such f."""
    register = register_rule("bprop", *classes)
    for cls in classes:
        if complex_values or holomorphic:
            cls.complex_grad = True
        if holomorphic:
            cls.holomorphic = True
    return register


def fusion_rule(*classes: type) -> Callable[[F], F]:
    """`register_rule("fusion", *classes)`: how the fusion pass packs the op's applications."""
    return register_rule("fusion", *classes)


def batch_rule(*classes: type) -> Callable[[F], F]:
    """`register_rule("batch", *classes)`: how vmap maps the op over a batch axis."""
    return register_rule("batch", *classes)
