"""A fuzzer over sharded programs under real MPI: parallel equals serial (issue 16 §7).

Hypothesis draws a program as tests/test_fuzz_graphs.py does (primitives applied to
earlier values, some intermediates returned) and a strategy for some of its steps
(tests/ranks/test_fuzz_strategies.py's draw: each dim split by a divisor of the world
size). The partition pass must lay out every value and insert the redistributions
between steps whose layouts differ; the gathered outputs must equal the serial run of
the same program, or every rank must raise the same error naming one of its ops.

Rank 0's draw is what every rank runs (broadcast): a hypothesis engine per process is
not bound to draw the same examples, and ranks running different programs would only
test the SPMD check. Without shrinking, a failing example ends the job on every rank
at once, with rank 0's example in the report.
"""
import hypothesis  # noqa: F401  (plugin autoload is off under mpiexec)
import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mpi4py import MPI
from parallel_oracle import run_parallel, run_serial
from test_fuzz_graphs import SHAPE, Program, maker, programs
from test_fuzz_strategies import strategy_for

from msops import Tensor
from msops.communication import get_group_size

RANKS = (2, 4, 8)
N = get_group_size()
DOCUMENTED = (TypeError, ValueError)
FUZZ = settings(max_examples=15, deadline=None, derandomize=True, database=None,
                phases=(Phase.explicit, Phase.generate), suppress_health_check=list(HealthCheck))


def _operand_shapes(step: tuple, shapes: list) -> list:
    """The shapes of the tensors step's primitive takes (Concat takes its operand twice)."""
    name, _, args, _ = step
    return [shapes[a] for a in (args * 2 if name == "Concat" else args)]


@FUZZ
@given(program=programs(), data=st.data())
def test_sharded_program_equals_serial(program, data):
    steps, outs, shapes = program
    strategies = [data.draw(st.one_of(st.none(), strategy_for(_operand_shapes(s, shapes))))
                  for s in steps]
    drawn = MPI.COMM_WORLD.bcast(([(n, a, e) for n, _, a, e in steps], outs, shapes,
                                  strategies))
    steps = [(n, maker(n), a, e) for n, a, e in drawn[0]]
    program, strategies = [steps, drawn[1], drawn[2]], drawn[3]
    rng = np.random.default_rng(len(steps))
    x, y = (Tensor(rng.standard_normal(SHAPE).astype(np.float32)) for _ in range(2))
    want = run_serial(lambda: Program(program), x, y)
    try:
        got, _ = run_parallel(lambda: Program(program, strategies), x, y)
    except DOCUMENTED as err:
        message = str(err)
        names = {prim.name for _, prim, _, _ in Program(program).steps}
        assert any(message.startswith(f"For '{n}'") for n in names), message
        every = MPI.COMM_WORLD.allgather(message)
        assert every == [message] * N, every
        return
    for g, w in zip(got, want):
        assert g.shape == w.shape, (strategies, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=str(strategies))
