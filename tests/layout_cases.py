"""Hypothesis strategies for random TensorLayouts (shared by single-process and MPI tests)."""
import math

from hypothesis import strategies as st

from msops.parallel.device_matrix import axis_size
from msops.parallel.layout import TensorLayout


def _divisors(n: int) -> list[int]:
    return [d for d in range(2, n + 1) if n % d == 0]


@st.composite
def device_matrices(draw, n: int) -> tuple[int, ...]:
    """A device matrix with product n, sometimes with size-1 axes."""
    dm, rest = [], n
    while rest > 1:
        d = draw(st.sampled_from(_divisors(rest)))
        dm.append(d)
        rest //= d
    for _ in range(draw(st.integers(0, 1))):
        dm.insert(draw(st.integers(0, len(dm))), 1)
    return tuple(dm) or (1,)


@st.composite
def tensor_maps(draw, dm: tuple[int, ...], ndim: int, multi_axis: bool) -> tuple:
    """A valid map: each device axis splits at most one dim (several per dim if multi_axis)."""
    axes = draw(st.permutations(range(len(dm))))
    if not multi_axis:
        return tuple(draw(st.permutations(list(axes) + [-1] * ndim))[:ndim])
    owners = [draw(st.integers(-1, ndim - 1)) for _ in axes]
    return tuple(tuple(k for k, o in zip(axes, owners) if o == i) for i in range(ndim))


def _parts(dm: tuple[int, ...], entry) -> int:
    axes = () if entry == -1 else (entry,) if isinstance(entry, int) else entry
    return math.prod(axis_size(dm, k) for k in axes)


@st.composite
def layout_pairs(draw, n: int, multi_axis: bool = True, same_matrix: bool = False):
    """(src, dst): the same tensor shape over n devices, device matrices drawn independently."""
    ndim = draw(st.integers(1, 3))
    dm1 = draw(device_matrices(n))
    dm2 = dm1 if same_matrix else draw(device_matrices(n))
    m1, m2 = draw(tensor_maps(dm1, ndim, multi_axis)), draw(tensor_maps(dm2, ndim, multi_axis))
    shape = tuple(math.lcm(_parts(dm1, a), _parts(dm2, b)) * draw(st.integers(1, 2))
                  for a, b in zip(m1, m2))
    return TensorLayout(dm1, m1, shape), TensorLayout(dm2, m2, shape)


@st.composite
def split_moves(draw, n: int):
    """(src, dst, i, j, axis): on one device matrix, dst moves src's split of dim i over
    device axis `axis` (size > 1) to dim j, which src leaves unsplit; nothing else changes."""
    dm = draw(device_matrices(n))
    ndim = draw(st.integers(2, 3))
    axis = draw(st.sampled_from([k for k in range(len(dm)) if axis_size(dm, k) > 1]))
    i, j = draw(st.permutations(range(ndim)))[:2]
    src = [-1 if e == axis else e for e in draw(tensor_maps(dm, ndim, False))]
    src[i], src[j] = axis, -1
    dst = list(src)
    dst[i], dst[j] = -1, axis
    shape = tuple(math.lcm(_parts(dm, a), _parts(dm, b)) * draw(st.integers(1, 2))
                  for a, b in zip(src, dst))
    return TensorLayout(dm, src, shape), TensorLayout(dm, dst, shape), i, j, axis
