"""The rule registry: every primitive has every required rule or says why not; lookup rules."""
import pytest

from msops import ops
from msops.graph.ir import MakeTuple, TupleGetItem
from msops.primitives import (COMPUTE_FAMILIES, array_ops, comm_ops, debug_ops, math_ops,
                              neighbor_exchange, nn_ops, state_ops)
from msops.primitives.primitive import Primitive, PrimitiveWithInfer, prim_attr_register
from msops.primitives.rules import (RULE_KINDS, declare_without, missing, reason_without,
                                    register_rule, rule_of)

STRUCTURAL = (TupleGetItem, MakeTuple)


def exported_primitives() -> list[type]:
    """Every primitive class msops.ops exports (bases aside), and the graph's structural ones."""
    classes = {obj for obj in (getattr(ops, name) for name in ops.__all__)
               if isinstance(obj, type) and issubclass(obj, Primitive)}
    return sorted(classes - {Primitive, PrimitiveWithInfer}, key=lambda c: c.__name__) + \
        list(STRUCTURAL)


PRIMS = exported_primitives()
COLLECTIVES = [c for c in PRIMS if c.is_communication]
COMPUTE = [c for c in PRIMS if not c.is_communication and c not in STRUCTURAL]


def test_the_exported_set_is_every_family():
    assert {c.__name__ for c in COMPUTE} == \
        {name for family in COMPUTE_FAMILIES for name in family.__all__} | set(state_ops.__all__) | \
        set(debug_ops.__all__) | {"Custom"}     # a user's kernel: tests/test_custom.py
    assert {math_ops, nn_ops, array_ops} <= set(COMPUTE_FAMILIES)
    assert {c.__name__ for c in COLLECTIVES} == \
        {n for n in comm_ops.__all__ if n not in ("ReduceOp", "check_reduce_dtype", "AlltoAllV")} | \
        set(neighbor_exchange.__all__)


@pytest.mark.parametrize("kind", [k for k, v in RULE_KINDS.items() if v.required])
def test_every_primitive_has_each_required_rule_or_is_declared_without(kind):
    assert [c.__name__ for c in missing(kind, PRIMS)] == []


@pytest.mark.parametrize("cls", COMPUTE, ids=lambda c: c.__name__)
def test_compute_ops_have_a_sharding_rule(cls):
    assert rule_of("sharding", cls) is not None


@pytest.mark.parametrize("cls", COLLECTIVES, ids=lambda c: c.__name__)
def test_collectives_have_comm_bytes_but_no_sharding_rule(cls):
    assert rule_of("sharding", cls) is None
    assert "cannot be used inside a parallel graph" in reason_without("sharding", cls)
    assert callable(getattr(cls, "comm_bytes", None))


@pytest.mark.parametrize("cls", STRUCTURAL, ids=lambda c: c.__name__)
def test_structural_ops_are_declared_without_a_sharding_rule(cls):
    assert rule_of("sharding", cls) is None and "structural" in reason_without("sharding", cls)


class Dummy(PrimitiveWithInfer):
    """A primitive nobody wrote rules for."""

    @prim_attr_register
    def __init__(self) -> None:
        pass


def test_a_primitive_without_rules_is_reported():
    assert missing("sharding", PRIMS + [Dummy]) == [Dummy]
    assert rule_of("sharding", Dummy) is None and reason_without("sharding", Dummy) is None


def test_a_family_rule_covers_subclasses_and_the_nearest_class_wins():
    class Twice(math_ops.Square):
        pass

    class Own(math_ops.Square):
        pass

    def own_spec(prim, ins, outs, consts):
        raise AssertionError("not called")

    register_rule("sharding", Own)(own_spec)
    assert rule_of("sharding", Twice) is math_ops.elementwise_spec
    assert rule_of("sharding", Twice()) is math_ops.elementwise_spec
    assert rule_of("sharding", Own) is own_spec
    assert rule_of("expansion", ops.BatchNorm) is nn_ops.batchnorm_global_statistics
    assert rule_of("expansion", ops.Square) is None


def test_registration_errors():
    class Fresh(PrimitiveWithInfer):
        pass

    with pytest.raises(ValueError, match=r"For 'register_rule', the 'kind' should be one of "
                                         r"\['batch', 'bprop', 'expansion', 'fusion', "
                                         r"'out_strategy', 'sharding'\], but got 'shardin'"):
        register_rule("shardin", Fresh)
    with pytest.raises(TypeError, match=r"For 'register_rule', the classes should be one or more "
                                        r"primitive classes, but got \(\)"):
        register_rule("sharding")
    with pytest.raises(ValueError, match=r"For 'register_rule', 'MatMul' should get one "
                                         r"'out_strategy' rule or declaration, but it already has one"):
        register_rule("out_strategy", ops.MatMul)
    with pytest.raises(ValueError, match=r"the 'reason' should be a non-empty string"):
        declare_without("sharding", Fresh, reason="")
    declare_without("sharding", Fresh, reason="it is only a test")
    with pytest.raises(ValueError, match=r"'Fresh' should get one 'sharding' rule or declaration"):
        register_rule("sharding", Fresh)
    assert reason_without("sharding", Fresh) == "it is only a test"


def test_backward_rules_sit_beside_their_ops():
    from msops.primitives.rules import bprop
    assert rule_of("bprop", ops.BatchMatMul) is math_ops.matmul_bprop      # via _MatMulBase
    assert rule_of("bprop", ops.AllGather) is comm_ops.allgather_bprop
    assert rule_of("bprop", ops._MicroStepAllGather) is comm_ops.microstep_allgather_bprop
    assert rule_of("bprop", ops._MiniStepAllGather) is comm_ops.ministep_allgather_bprop

    class Fresh(PrimitiveWithInfer):
        pass

    @bprop(Fresh)
    def fresh_bprop(prim, inputs, out, dout, g):
        return (dout,)
    assert rule_of("bprop", Fresh()) is fresh_bprop and missing("bprop", [Fresh]) == []


@pytest.mark.parametrize("cls", COLLECTIVES, ids=lambda c: c.__name__)
def test_collectives_have_a_fusion_rule_or_say_why_not(cls):
    """The fusion kind is not required of compute ops; every collective has a rule or a
    reason (graph/fusion.py reads them)."""
    assert (rule_of("fusion", cls) is None) == (reason_without("fusion", cls) is not None)
    fused = {c.__name__ for c in COLLECTIVES if rule_of("fusion", c) is not None}
    assert fused == {"AllGather", "_MiniStepAllGather", "_MicroStepAllGather", "ReduceScatter",
                     "AllReduce"}
