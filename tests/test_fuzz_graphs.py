"""A fuzzer over compiled graphs: random programs of primitives, compiled, equal eager.

Hypothesis draws a straight-line program: each step applies a primitive (element-wise,
broadcasting, reshaping, reducing, MatMul) to one or two earlier values, and the program
returns a few of its values (intermediates too). The compiled Cell must return what the
same program run eagerly returns, call after call, and what one call returned must not
change when the Cell runs again (graph mode plans and reuses its intermediates' buffers,
writes element-wise results in place over inputs that die there, and must never hand out
or reuse memory a user holds).
"""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import msops as ms
from msops import Tensor, nn, ops

FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])
SHAPE = (4, 6)

UNARY = {"Neg": ops.Neg, "Tanh": ops.Tanh, "ReLU": ops.ReLU, "Square": ops.Square,
         "Abs": ops.Abs, "Sigmoid": ops.Sigmoid, "Identity": ops.Identity,
         "Softmax": lambda: ops.Softmax(-1), "Sin": ops.Sin}
BINARY = {"Add": ops.Add, "Sub": ops.Sub, "Mul": ops.Mul, "Maximum": ops.Maximum,
          "Minimum": ops.Minimum}


def _shape_ops(shape: tuple) -> list:
    """(name, make, extra constant args) of the ops that change `shape`, valid for it."""
    out = [("Transpose", ops.Transpose, (tuple(reversed(range(len(shape)))),)),
           ("Reshape", ops.Reshape, ((int(np.prod(shape)),),))]
    if len(shape) >= 1:
        out.append(("ReduceSum", lambda: ops.ReduceSum(keep_dims=True), (len(shape) - 1,)))
        out.append(("ReduceMax", ops.ReduceMax, (0,)))
    if len(shape) == 2:
        out.append(("MatMulT", lambda: ops.MatMul(transpose_b=True), None))  # x @ x.T
    if len(shape) >= 1 and shape[0] % 2 == 0:
        out.append(("Split", lambda: ops.Split(0, 2), None))               # its first half
    out.append(("Concat", lambda: ops.Concat(0), None))                    # (x, x) stacked
    out.append(("CastRound", lambda: ops.Cast(), None))                    # to float16, back
    return out


def maker(name: str):
    """The constructor of a step's primitive, by the step's name."""
    return {**UNARY, **BINARY, **{n: m for n, m, _ in _shape_ops((2, 2))}}[name]


@st.composite
def programs(draw) -> list:
    """Steps (op name, make, operand indices, constants); value 0 is the input x and
    value 1 the input y (both SHAPE)."""
    shapes = [SHAPE, SHAPE]
    steps = []
    for _ in range(draw(st.integers(2, 9))):
        kind = draw(st.sampled_from(["unary", "binary", "binary", "shape"]))
        a = draw(st.integers(0, len(shapes) - 1))
        if kind == "unary":
            name = draw(st.sampled_from(sorted(UNARY)))
            steps.append((name, UNARY[name], (a,), ()))
            shapes.append(shapes[a])
        elif kind == "binary":
            # any earlier value whose shape broadcasts with a's (equal, or a row of it)
            same = [k for k, s in enumerate(shapes) if s == shapes[a] or
                    (len(s) == len(shapes[a]) and s[0] == 1 and s[1:] == shapes[a][1:])]
            b = draw(st.sampled_from(same))
            name = draw(st.sampled_from(sorted(BINARY)))
            steps.append((name, BINARY[name], (a, b), ()))
            shapes.append(shapes[a])
        else:
            name, make, extra = draw(st.sampled_from(_shape_ops(shapes[a])))
            if name == "MatMulT":
                steps.append((name, make, (a, a), ()))
                shapes.append((shapes[a][0], shapes[a][0]))
                continue
            if name in ("Split", "Concat", "CastRound"):
                steps.append((name, make, (a,), ()))
                half = (shapes[a][0] // 2,) if name == "Split" else \
                    (shapes[a][0] * 2,) if name == "Concat" else shapes[a][:1]
                shapes.append(half + shapes[a][1:])
                continue
            steps.append((name, make, (a,), extra))
            shapes.append(_result_shape(name, shapes[a], extra))
    n = len(shapes)
    outs = sorted(set([n - 1] + draw(st.lists(st.integers(2, n - 1), max_size=2))))
    return [steps, outs, shapes]


def _result_shape(name: str, shape: tuple, extra: tuple) -> tuple:
    if name == "Transpose":
        return tuple(reversed(shape))
    if name == "Reshape":
        return extra[0]
    if name == "ReduceSum":                                 # keep_dims over the last axis
        return shape[:-1] + (1,)
    return shape[1:]                                        # ReduceMax over axis 0


class Program(nn.Cell):
    """A drawn program as a Cell; `strategies[k]` (if given) shards step k's primitive."""

    def __init__(self, program: list, strategies: list | None = None) -> None:
        super().__init__()
        steps, self.outs, _ = program
        self.steps = [(name, make(), args, extra) for name, make, args, extra in steps]
        for k, (_, prim, _, _) in enumerate(self.steps):  # register the primitives
            if strategies and strategies[k]:
                prim.shard(strategies[k])
            setattr(self, f"op{k}", prim)

    def construct(self, x, y):
        values = [x, y]
        for name, prim, args, extra in self.steps:
            operands = [values[a] for a in args]
            if name == "Split":
                out = prim(*operands)[0]
            elif name == "Concat":
                out = prim((operands[0], operands[0]))
            elif name == "CastRound":
                out = prim(prim(operands[0], ms.float16), ms.float32)
            else:
                out = prim(*operands, *extra)
            values.append(out)
        return tuple(values[k] for k in self.outs)


def _numpy(outs) -> list:
    return [o.asnumpy().copy() for o in outs]


@FUZZ
@given(program=programs(), seed=st.integers(0, 2 ** 16))
def test_compiled_program_equals_eager(program, seed):
    rng = np.random.default_rng(seed)
    inputs = [[Tensor(rng.standard_normal(SHAPE).astype(np.float32)) for _ in range(2)]
              for _ in range(3)]
    saved = [_numpy(xy) for xy in inputs]
    ms.set_context(mode=ms.PYNATIVE_MODE)
    net = Program(program)
    want = [_numpy(net(*xy)) for xy in inputs]
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        held = []
        for xy, w in zip(inputs, want):
            got = net(*xy)
            held.append((got, _numpy(got)))
            for g, e in zip(_numpy(got), w):
                np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
        for got, first in held:       # a later call changed nothing a user holds
            for g, f in zip(_numpy(got), first):
                np.testing.assert_array_equal(g, f)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    for xy, before in zip(inputs, saved):                   # inputs untouched by either mode
        for t, b in zip(xy, before):
            np.testing.assert_array_equal(t.asnumpy(), b)
