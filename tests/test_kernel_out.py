"""The `writes_output` protocol of every compute primitive that declares it (the cases of
test_compute_contract): the kernel writes into a given `out` and returns it, an eager call
gets a new array nothing else refers to, and an op declaring `out_may_be_input` stays
correct written over its own input."""
import numpy as np
import pytest

from test_compute_contract import CASES, _as_call_arg


def _kernel_args(prim, args):
    """The kernel's arguments of one call: tuple inputs as lists, consts as they are."""
    return [list(a) if isinstance(a, tuple) and i not in prim.const_inputs else a
            for i, a in enumerate(args)]


WRITERS = [(p, a) for p, a in CASES if p.writes_output]


@pytest.mark.parametrize("prim,args", WRITERS, ids=[p.name for p, _ in WRITERS])
def test_writes_output_kernels_write_into_the_given_out(prim, args):
    values = _kernel_args(prim, args)
    fresh = prim.kernel(*values)
    assert type(fresh) is np.ndarray and fresh.flags.c_contiguous
    out = np.full_like(fresh, 3)
    assert prim.kernel(*values, out=out) is out
    np.testing.assert_array_equal(out, fresh)
    eager = prim(*(_as_call_arg(a) for a in args)).asnumpy()   # the lowered kernel, out=None
    np.testing.assert_array_equal(eager, fresh)
    arrays = [v for a in values for v in (a if isinstance(a, list) else [a])
              if isinstance(v, np.ndarray)]
    assert not any(np.shares_memory(eager, a) for a in arrays)   # a fresh array, every call
    assert not np.shares_memory(prim(*(_as_call_arg(a) for a in args)).asnumpy(), eager)
    same = next((i for i, v in enumerate(values)
                 if isinstance(v, np.ndarray) and v.shape == fresh.shape), None)
    if getattr(prim, "out_may_be_input", False) and same is not None:   # over its own input
        values[same] = values[same].copy()
        assert prim.kernel(*values, out=values[same]) is values[same]
        np.testing.assert_array_equal(values[same], fresh)


def test_only_views_tuples_and_multi_output_ops_do_not_write_their_output():
    assert {p.name for p, _ in CASES if not p.writes_output} == {
        "Identity", "StopGradient", "Reshard", "Reshape", "Flatten", "Split", "StridedSlice",
        "SoftmaxCrossEntropyWithLogits",
        "BatchNorm", "Dropout", "ExpandDims", "Squeeze", "LayerNorm",
        "ArgMaxWithValue", "ArgMinWithValue", "Unstack", "Unpack", "TopK", "Sort",
        "Cummax", "Cummin",
        # numpy's fancy indexing has no `out`
        "GatherD", "GatherNd",
        # counter-based draws are made in float64 and converted: new arrays in any case
        "UniformReal", "StandardNormal", "UniformInt",
        # several outputs, from numpy.linalg's factorisations
        "LogMatrixDeterminant", "Qr", "Svd",
        # LAPACK-style results built in their own arrays
        "Eig", "Geqrf", "LuSolve", "LuUnpack", "Orgqr", "Ormqr",
        # several outputs (values and indices, statistics beside the result)
        "Cummax", "Cummin", "CTCLossV2", "FlashAttentionScore", "RmsNorm", "UniqueWithPad",
        "MaxPoolWithArgmaxV2", "MaxPool3DWithArgmax",
        # a scatter into zeros made by np.zeros
        "MaxUnpool2D", "MaxUnpool3D"}
