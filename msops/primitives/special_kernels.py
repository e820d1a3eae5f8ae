"""The special functions' numerics in float64 numpy (no scipy at run time): lgamma (Lanczos,
g = 7), digamma (reflection, upward recurrence, the asymptotic series), the Hurwitz zeta
(Euler-Maclaurin after a shift, as Cephes' zeta), erfinv (Giles' single-precision
approximation polished by two Halley steps on erf / erfc) and the modified Bessel functions
I0 and I1 (their power series, whose terms are all positive, up to |x| = 30; the Hankel
asymptotic series beyond, where 30 terms are below double precision).

Each takes and returns float64 arrays; NaN stays NaN, poles give inf as scipy.special does.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028,
            771.32342877765313, -176.61502916214059, 12.507343278686905,
            -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _abs_sin_pi(x: np.ndarray) -> np.ndarray:
    """|sin(pi x)|, exact zeros at the integers (x reduced exactly to [-1/2, 1/2] first, so
    the product pi * r loses nothing near a pole)."""
    return np.abs(np.sin(np.pi * (x - np.round(x))))


def _lgamma_right(x: np.ndarray) -> np.ndarray:
    """log Gamma(x) for x >= 0.5 by Lanczos' series."""
    z = x - 1.0
    total = np.full_like(z, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], 1):
        total += c / (z + i)
    t = z + _LANCZOS_G + 0.5
    return _HALF_LOG_2PI + (z + 0.5) * np.log(t) - t + np.log(total)


def lgamma(x: np.ndarray) -> np.ndarray:
    """log |Gamma(x)|; +inf at the poles (0, -1, -2, ...) and at +-inf."""
    with np.errstate(all="ignore"):
        left = x < 0.5
        right = _lgamma_right(np.where(left, 1.0 - x, x))
        reflected = np.log(np.pi / _abs_sin_pi(x)) - right
        out = np.where(left, reflected, right)
        # exact zeros at 1 and 2, where the series' rounding would leave ~1e-16
        out = np.where((x == 1.0) | (x == 2.0), 0.0, out)
        return np.where(np.isinf(x), np.inf, out)


# B_2k / (2k) for the asymptotic series of digamma: ln x - 1/(2x) - sum B_2k / (2k x^2k)
_DIGAMMA_ASYMPTOTIC = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)


def digamma(x: np.ndarray) -> np.ndarray:
    """psi(x) = Gamma'(x) / Gamma(x); -inf at 0 (+inf at -0.0), NaN at the negative
    integers, as scipy.special.psi."""
    with np.errstate(all="ignore"):
        x = np.asarray(x, np.float64)
        negative = x < 0
        # psi(x) = psi(1 - x) - pi / tan(pi x) for x < 0
        r = x - np.round(x)
        cot = np.where(r == 0, np.nan, np.cos(np.pi * r) / np.sin(np.pi * r))
        y = np.where(negative, 1.0 - x, x)
        acc = np.zeros_like(y)
        for _ in range(10):
            low = y < 10.0
            acc -= np.where(low, 1.0 / y, 0.0)
            y = np.where(low, y + 1.0, y)
        inv2 = 1.0 / (y * y)
        series = np.zeros_like(y)
        for c in reversed(_DIGAMMA_ASYMPTOTIC):
            series = (series + c) * inv2
        out = acc + np.log(y) - 0.5 / y - series
        out = np.where(negative, out - np.pi * cot, out)
        # the pole at 0 is -1/x-like: -inf from the right, +inf at -0.0
        out = np.where(x == 0, -np.copysign(np.inf, x), out)
        return np.where(x == np.inf, np.inf, out)


def _bernoulli(n: int) -> list:
    """B_0 .. B_n as Fractions (the Akiyama-Tanigawa algorithm)."""
    out, a = [], [Fraction(0)] * (n + 1)
    for m in range(n + 1):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        out.append(a[0])
    return out


#: B_2j / (2j)! for j = 1 .. 12: the Euler-Maclaurin coefficients of the zeta tail
_EM = tuple(float(b / math.factorial(2 * j))
            for j, b in enumerate(_bernoulli(24)[2::2], 1))


def hurwitz_zeta(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """zeta(s, q) = sum_k (q + k)^-s for s > 1: inf at s == 1 or at q a non-positive
    integer, NaN for s < 1 or for q < 0 with s not an integer (as Cephes / scipy)."""
    with np.errstate(all="ignore"):
        s, q = np.broadcast_arrays(np.asarray(s, np.float64), np.asarray(q, np.float64))
        shape = s.shape
        s, q = s.ravel().copy(), q.ravel().copy()
        total = np.zeros_like(s)
        # shift q up to w >= 10 + s, summing the terms passed over: the tail series then
        # converges fast for every order
        w = q.copy()
        need = np.where(np.isfinite(w) & np.isfinite(s), np.maximum(10.0 + s - w, 0.0), 0.0)
        steps = np.ceil(np.minimum(need, 1e7)).astype(np.int64)
        for k in range(int(steps.max(initial=0))):
            idx = np.nonzero(steps > k)[0]
            total[idx] += np.power(w[idx], -s[idx])
            w[idx] += 1.0
        tail = np.power(w, 1.0 - s) / (s - 1.0) + 0.5 * np.power(w, -s)
        rising = s.copy()              # (s)_(2j-1)
        power = np.power(w, -s - 1.0)  # w^(-s-2j+1)
        inv_w2 = 1.0 / (w * w)
        for j, c in enumerate(_EM, 1):
            tail += c * rising * power
            rising = rising * (s + 2 * j - 1) * (s + 2 * j)
            power = power * inv_w2
        out = total + tail
        out = np.where(q == np.inf, 0.0, out)
        out = np.where((q <= 0) & (q == np.floor(q)), np.inf, out)
        out = np.where((q < 0) & (s != np.floor(s)), np.nan, out)
        out = np.where(s == 1.0, np.inf, out)
        out = np.where(s < 1.0, np.nan, out)
        return out.reshape(shape)


def polygamma(n: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The n-th derivative of digamma: psi(x) for n == 0, (-1)^(n+1) n! zeta(n + 1, x)
    beyond (n a whole number >= 0)."""
    n, x = np.broadcast_arrays(np.asarray(n, np.float64), np.asarray(x, np.float64))
    with np.errstate(all="ignore"):
        sign = np.where(np.mod(n, 2.0) == 1.0, 1.0, -1.0)
        factorial = np.exp(lgamma(n + 1.0))
        factorial = np.where(n < 19, np.round(factorial), factorial)   # exact while it can be
        higher = sign * factorial * hurwitz_zeta(n + 1.0, x)
        return np.where(n == 0, digamma(x), higher)


_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def _erfinv_guess(y: np.ndarray) -> np.ndarray:
    """Giles' single-precision erfinv ('Approximating the erfinv function', 2010)."""
    w = -np.log((1.0 - y) * (1.0 + y))
    central = w < 5.0
    a = w - 2.5
    p = np.full_like(y, 2.81022636e-08)
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
              -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
        p = c + p * a
    b = np.sqrt(w) - 3.0
    t = np.full_like(y, -0.000200214257)
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
              -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
        t = c + t * b
    return np.where(central, p, t) * y


def erfinv(y: np.ndarray) -> np.ndarray:
    """The inverse of erf on [-1, 1]: +-inf at +-1, NaN outside."""
    with np.errstate(all="ignore"):
        y = np.asarray(y, np.float64)
        inside = np.abs(y) < 1.0
        safe = np.where(inside, y, 0.0)
        x = _erfinv_guess(safe)
        a = np.abs(safe)
        tail = a > 0.5
        for _ in range(4):
            # Halley on erf(x) - y; where |y| > 0.5 Newton on log(erfc(|x|)) - log(1 - |y|)
            # instead: exact in the tails, where erf(x) rounds to 1, and nearly linear there
            ax = np.abs(x)
            density = 2.0 / math.sqrt(math.pi) * np.exp(-ax * ax)
            upper = np.asarray(_erfc(ax), np.float64)
            ratio = (np.asarray(_erf(ax), np.float64) - a) / density
            halley = ax - ratio / (1.0 + ax * ratio)
            newton = ax + (np.log(upper) - np.log1p(-a)) * upper / density
            x = np.copysign(np.where(tail, newton, halley), safe)
        out = np.where(inside, x, np.nan)
        return np.where(np.abs(y) == 1.0, np.copysign(np.inf, y), out)


_SERIES_TERMS = 80
_ASYMPTOTIC_TERMS = 30
_SERIES_LIMIT = 30.0


def _bessel_i(order: int, x: np.ndarray, scaled: bool) -> np.ndarray:
    """I_order(x) for order 0 or 1; times exp(-|x|) when `scaled`."""
    with np.errstate(all="ignore"):
        ax = np.abs(np.asarray(x, np.float64))
        small = ax <= _SERIES_LIMIT
        # power series: sum (x^2/4)^k / (k! (k + order)!) * (x/2)^order
        xs = np.where(small, ax, 0.0)
        y = 0.25 * xs * xs
        term = np.ones_like(xs) if order == 0 else 0.5 * xs
        total = term.copy()
        for k in range(1, _SERIES_TERMS):
            term = term * y / (k * (k + order))
            total += term
        if scaled:
            total = total * np.exp(-xs)
        # Hankel: e^x / sqrt(2 pi x) * sum_k (-1)^k prod_i (4 v^2 - (2i - 1)^2) / (k! (8x)^k)
        xl = np.where(small, 1.0, ax)
        mu = 4.0 * order * order
        term = np.ones_like(xl)
        series = term.copy()
        for k in range(1, _ASYMPTOTIC_TERMS):
            term = -term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * xl)
            series += term
        large = series / np.sqrt(2.0 * np.pi * xl)
        if not scaled:
            # e^x / sqrt(..) as (e^(x/2))^2 / sqrt(..): no premature overflow
            half = np.exp(0.5 * xl)
            large = large * half * half
        out = np.where(small, total, large)
        if order == 1:
            out = np.copysign(out, x)
        return np.where(np.isnan(x), np.nan, out)


def bessel_i0(x: np.ndarray) -> np.ndarray:
    """The modified Bessel function of the first kind of order 0."""
    return _bessel_i(0, x, False)


def bessel_i0e(x: np.ndarray) -> np.ndarray:
    """exp(-|x|) I0(x)."""
    return _bessel_i(0, x, True)


def bessel_i1(x: np.ndarray) -> np.ndarray:
    """The modified Bessel function of the first kind of order 1."""
    return _bessel_i(1, x, False)


def bessel_i1e(x: np.ndarray) -> np.ndarray:
    """exp(-|x|) I1(x)."""
    return _bessel_i(1, x, True)


_IGAMMA_MAX_TERMS = 100000
_EPS = np.finfo(np.float64).eps


def _igamma_series(a: np.ndarray, x: np.ndarray, with_grad: bool) -> tuple:
    """P(a, x) by its power series x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a+1)..(a+n)),
    every term positive; with_grad: also dP/da, the series differentiated term by term
    (d log t_n / da = -sum_{k<=n} 1 / (a + k); d log prefactor / da = log x - psi(a+1))."""
    term = np.ones_like(a)
    total = np.ones_like(a)
    harmonic = np.zeros_like(a)
    weighted = np.zeros_like(a)          # sum t_n * H_n(a)
    active = np.arange(a.size)
    for n in range(1, _IGAMMA_MAX_TERMS):
        if not active.size:
            break
        aa, xx = a[active], x[active]
        term[active] *= xx / (aa + n)
        total[active] += term[active]
        if with_grad:
            harmonic[active] += 1.0 / (aa + n)
            weighted[active] += term[active] * harmonic[active]
        small = term[active] <= _EPS * total[active]
        if with_grad:
            small &= term[active] * harmonic[active] <= _EPS * np.abs(weighted[active]) + 1e-300
        active = active[~small]
    log_factor = a * np.log(x) - x - lgamma(a + 1.0)
    factor = np.exp(log_factor)
    p = factor * total
    if not with_grad:
        return p, None
    return p, factor * (total * (np.log(x) - digamma(a + 1.0)) - weighted)


def _igammac_fraction(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Q(a, x) for x > a + 1 by the continued fraction (modified Lentz)."""
    tiny = 1e-300
    b = x + 1.0 - a
    c = np.full_like(a, 1.0 / tiny)
    d = 1.0 / b
    h = d.copy()
    active = np.arange(a.size)
    for i in range(1, _IGAMMA_MAX_TERMS):
        if not active.size:
            break
        an = -i * (i - a[active])
        b[active] += 2.0
        dd = an * d[active] + b[active]
        dd = np.where(np.abs(dd) < tiny, tiny, dd)
        cc = b[active] + an / c[active]
        cc = np.where(np.abs(cc) < tiny, tiny, cc)
        d[active] = 1.0 / dd
        c[active] = cc
        delta = d[active] * cc
        h[active] *= delta
        active = active[np.abs(delta - 1.0) > _EPS]
    return np.exp(a * np.log(x) - x - lgamma(a)) * h


def _igamma_pair(a: np.ndarray, x: np.ndarray) -> tuple:
    """(P, Q) for a > 0, x > 0 finite: the series where x <= a + 1 (or x < 1), the
    continued fraction beyond; the other as 1 minus it."""
    p, q = np.empty_like(a), np.empty_like(a)
    series = (x <= a + 1.0) | (x < 1.0)
    if series.any():
        p[series] = _igamma_series(a[series], x[series], False)[0]
        q[series] = 1.0 - p[series]
    if (~series).any():
        q[~series] = _igammac_fraction(a[~series], x[~series])
        p[~series] = 1.0 - q[~series]
    return p, q


def _igamma_cases(a: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
    with np.errstate(all="ignore"):
        a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
        shape = a.shape
        a, x = a.ravel(), x.ravel()
        out = np.full(a.shape, np.nan)
        inner = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
        if inner.any():
            out[inner] = _igamma_pair(a[inner], x[inner])[1 if upper else 0]
        lower_value = np.select(
            [(a == 0) & (x > 0), (a > 0) & (x == 0), (a > 0) & (x == np.inf),
             (a == np.inf) & (x >= 0) & np.isfinite(x)], [1.0, 0.0, 1.0, 0.0], np.nan)
        edge = ~inner & ~np.isnan(lower_value)
        out[edge] = (1.0 - lower_value[edge]) if upper else lower_value[edge]
        return out.reshape(shape)


def igamma(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The regularized lower incomplete gamma P(a, x) = gamma(a, x) / Gamma(a) (scipy's
    gammainc: NaN for a < 0 or x < 0)."""
    return _igamma_cases(a, x, False)


def igammac(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The regularized upper incomplete gamma Q(a, x) = 1 - P(a, x)."""
    return _igamma_cases(a, x, True)


def igamma_grad_a(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dP(a, x)/da for a > 0, x > 0 (the differentiated series; 0 at x == 0 or +inf, NaN
    elsewhere outside the domain)."""
    with np.errstate(all="ignore"):
        a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
        shape = a.shape
        a, x = a.ravel(), x.ravel()
        out = np.full(a.shape, np.nan)
        inner = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
        if inner.any():
            out[inner] = _igamma_series(a[inner], x[inner], True)[1]
        out[(a > 0) & ((x == 0) | (x == np.inf))] = 0.0
        return out.reshape(shape)


#: B_2k / (2k (2k - 1)) for k = 1..7: Stirling's series of lgamma's correction term
_STIRLING = tuple(float(b / (2 * k * (2 * k - 1)))
                  for k, b in enumerate(_bernoulli(14)[2::2], 1))
_STIRLING_FROM = 10.0


def _stirling_correction(z: np.ndarray) -> np.ndarray:
    """lgamma(z) - ((z - 1/2) log z - z + log(2 pi) / 2) for z >= 10 (below 1e-16 there)."""
    inv2 = 1.0 / (z * z)
    total = np.zeros_like(z)
    for c in reversed(_STIRLING):
        total = total * inv2 + c
    return total / z


def lbeta(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """log |Beta(x, y)| = lgamma(x) + lgamma(y) - lgamma(x + y) without the cancellation of
    those large terms when x or y is large: Stirling's series for the large arguments, so
    only the small differences are formed (as TF's / MindSpore's lbeta)."""
    with np.errstate(all="ignore"):
        x, y = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(y, np.float64))
        small, large = np.minimum(x, y), np.maximum(x, y)
        s = small + large
        direct = lgamma(small) + lgamma(large) - lgamma(s)
        big = np.where(large >= _STIRLING_FROM, large, _STIRLING_FROM)
        sb = np.where(large >= _STIRLING_FROM, s, _STIRLING_FROM + small)
        # lgamma(large) - lgamma(s) by Stirling, for large >= 10
        ratio = np.log1p(small / big)
        difference = -(big - 0.5) * ratio - small * np.log(sb) + small + \
            _stirling_correction(big) - _stirling_correction(sb)
        one_large = lgamma(small) + difference
        sm = np.where(small >= _STIRLING_FROM, small, _STIRLING_FROM)
        sbb = np.where(small >= _STIRLING_FROM, s, 2 * _STIRLING_FROM)
        bb = np.where(small >= _STIRLING_FROM, large, _STIRLING_FROM)
        both_large = 0.5 * math.log(2 * math.pi) - 0.5 * np.log(bb) + \
            (sm - 0.5) * np.log(sm / sbb) + bb * np.log1p(-sm / sbb) + \
            _stirling_correction(sm) + _stirling_correction(bb) - _stirling_correction(sbb)
        out = np.where(large < _STIRLING_FROM, direct,
                       np.where(small < _STIRLING_FROM, one_large, both_large))
        return np.where(np.isnan(x) | np.isnan(y), np.nan, out)


# -- Bessel functions of integer order 0 and 1: J, Y (first and second kind), K (modified,
# second kind). Quadrature of their integral representations where they oscillate or vary
# slowly, the Hankel asymptotic series beyond |x| = 25, the power series of Y near 0.
_HANKEL_FROM = 25.0
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(96)
_EULER_GAMMA = 0.57721566490153286061


def _gauss(fn, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Gauss-Legendre (96 nodes) of fn(t) over [lo, hi], node by node (memory of one array)."""
    half, mid = 0.5 * (hi - lo), 0.5 * (hi + lo)
    total = np.zeros(np.broadcast(lo, hi).shape)
    for node, weight in zip(_GL_NODES, _GL_WEIGHTS):
        total += weight * fn(mid + half * node)
    return total * half


def _hankel(order: int, x: np.ndarray) -> tuple:
    """(J_order(x), Y_order(x)) for x >= 25 by Hankel's asymptotic series (30 terms: below
    1e-18 there); the phase cos / sin(x - (order / 2 + 1 / 4) pi) from numpy's exact cos x,
    sin x, so no rounding of x - phase enters."""
    mu = 4.0 * order * order
    p, q = np.ones_like(x), np.zeros_like(x)
    term = np.ones_like(x)
    for k in range(1, 30):
        term = term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * x)
        if k % 2:
            q += term if (k // 2) % 2 == 0 else -term
        else:
            p += -term if (k // 2) % 2 else term
    c, s = np.cos(x), np.sin(x)
    root = math.sqrt(0.5)
    # x - pi/4 (order 0) and x - 3 pi/4 (order 1)
    cos_chi = (c + s) * root if order == 0 else (s - c) * root
    sin_chi = (s - c) * root if order == 0 else -(c + s) * root
    scale = np.sqrt(2.0 / (np.pi * x))
    return scale * (p * cos_chi - q * sin_chi), scale * (p * sin_chi + q * cos_chi)


def _j_series(order: int, x: np.ndarray) -> np.ndarray:
    """J0 / J1 for |x| <= 2 by the power series (relative precision down to 0)."""
    y = -0.25 * x * x
    term = np.ones_like(x) if order == 0 else 0.5 * x
    total = term.copy()
    for k in range(1, 30):
        term = term * y / (k * (k + order))
        total += term
    return total


def _bessel_j(order: int, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        x = np.asarray(x, np.float64)
        ax = np.abs(x)
        small = ax <= 2.0
        near = np.where(ax <= _HANKEL_FROM, ax, 0.0)
        # J_n(x) = (1/pi) int_0^pi cos(n t - x sin t) dt
        inner = _gauss(lambda t: np.cos(order * t - near * np.sin(t)),
                       np.zeros_like(near), np.full_like(near, np.pi)) / np.pi
        far = np.where(ax > _HANKEL_FROM, ax, _HANKEL_FROM + 1.0)
        out = np.where(ax <= _HANKEL_FROM, inner, _hankel(order, far)[0])
        out = np.where(small, _j_series(order, np.where(small, ax, 0.0)), out)
        if order == 1:
            out = np.where(x < 0, -out, out)
        out = np.where(np.isinf(x), 0.0, out)
        return np.where(np.isnan(x), np.nan, out)


def _y_series(order: int, x: np.ndarray) -> np.ndarray:
    """Y0 / Y1 for 0 < x <= 2 by their power series (the logarithm times J, plus harmonic
    sums), no cancellation there."""
    y = 0.25 * x * x
    log_term = (2.0 / np.pi) * np.log(0.5 * x) * _j_series(order, x)
    total = np.zeros_like(x)
    term = np.ones_like(x) if order == 0 else 0.5 * x
    harmonic = 0.0
    for k in range(0, 40):
        if k:
            term = term * (-y) / (k * (k + order))
        if order == 0:
            # (2/pi) sum (-1)^(k+1) H_k (x^2/4)^k / (k!)^2, written with psi(k+1) = H_k - g
            total += term * (-(harmonic - _EULER_GAMMA))
        else:
            psi_sum = 2 * (harmonic - _EULER_GAMMA) + 1.0 / (k + 1)
            total += term * psi_sum
        harmonic += 1.0 / (k + 1)
    if order == 0:
        return log_term + (2.0 / np.pi) * total
    return -2.0 / (np.pi * x) + log_term - total / np.pi


def _bessel_y(order: int, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        x = np.asarray(x, np.float64)
        small = (x > 0) & (x <= 2.0)
        mid = (x > 2.0) & (x <= _HANKEL_FROM)
        xs = np.where(small, x, 1.0)
        xm = np.where(mid, x, 10.0)
        # Y_n(x) = (1/pi) int_0^pi sin(x sin t - n t) dt
        #          - (1/pi) int_0^inf (e^(nt) + (-1)^n e^(-nt)) e^(-x sinh t) dt
        first = _gauss(lambda t: np.sin(xm * np.sin(t) - order * t), np.zeros_like(xm),
                       np.full_like(xm, np.pi))
        top = np.arcsinh(60.0 / xm) + 1.0
        sign = -1.0 if order else 1.0
        second = _gauss(lambda t: (np.exp(order * t) + sign * np.exp(-order * t))
                        * np.exp(-xm * np.sinh(t)), np.zeros_like(xm), top)
        integral = (first - second) / np.pi
        far = np.where(x > _HANKEL_FROM, x, _HANKEL_FROM + 1.0)
        out = np.where(small, _y_series(order, xs),
                       np.where(mid, integral, _hankel(order, far)[1]))
        out = np.where(x == 0, -np.inf, out)
        out = np.where(x == np.inf, 0.0, out)
        return np.where((x < 0) | np.isnan(x), np.nan, out)


_K_STEP = 1.0 / 16


def _bessel_k(order: int, x: np.ndarray, scaled: bool) -> np.ndarray:
    """K_n(x) (times exp(x) when `scaled`). Up to x = 25 the trapezoid rule on
    int_0^inf exp(-x (cosh t - 1)) cosh(n t) dt (scaled form): the integrand is even and
    analytic in t, so the rule's error falls like exp(-2 pi^2 / (x h^2)) (h = 1/16: far
    below double precision); beyond, the asymptotic series sqrt(pi / 2x) sum_k a_k / x^k
    (30 terms, below 1e-18 there)."""
    with np.errstate(all="ignore"):
        x = np.asarray(x, np.float64)
        inside = (x > 0) & np.isfinite(x)
        near = inside & (x <= _HANKEL_FROM)
        xs = np.where(near, x, 1.0)
        # beyond t_max the integrand is below 1e-20 of its value at 0
        t_max = np.arccosh(1.0 + (50.0 + order * 40.0) / xs) + 1.0
        total = 0.5 * np.ones_like(xs)
        for k in range(1, int(np.ceil(t_max.max(initial=0.0) / _K_STEP)) + 1):
            t = k * _K_STEP
            total += np.exp(-xs * (math.cosh(t) - 1.0)) * math.cosh(order * t)
        total *= _K_STEP
        xl = np.where(inside & ~near, x, _HANKEL_FROM + 1.0)
        mu = 4.0 * order * order
        term = np.ones_like(xl)
        series = term.copy()
        for k in range(1, 30):
            term = term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * xl)
            series += term
        series *= np.sqrt(np.pi / (2.0 * xl))
        out = np.where(near, total, series)
        if not scaled:
            out = out * np.exp(-np.where(near, xs, xl))
        out = np.where(inside, out, np.nan)
        out = np.where(x == 0, np.inf, out)
        return np.where(x == np.inf, 0.0, out)


def bessel_j0(x: np.ndarray) -> np.ndarray:
    """J0(x), the Bessel function of the first kind of order 0."""
    return _bessel_j(0, x)


def bessel_j1(x: np.ndarray) -> np.ndarray:
    """J1(x), the Bessel function of the first kind of order 1."""
    return _bessel_j(1, x)


def bessel_y0(x: np.ndarray) -> np.ndarray:
    """Y0(x), of the second kind: -inf at 0, NaN for x < 0."""
    return _bessel_y(0, x)


def bessel_y1(x: np.ndarray) -> np.ndarray:
    """Y1(x), of the second kind: -inf at 0, NaN for x < 0."""
    return _bessel_y(1, x)


def bessel_k0(x: np.ndarray) -> np.ndarray:
    """K0(x), the modified Bessel function of the second kind: inf at 0, NaN for x < 0."""
    return _bessel_k(0, x, False)


def bessel_k0e(x: np.ndarray) -> np.ndarray:
    """exp(x) K0(x)."""
    return _bessel_k(0, x, True)


def bessel_k1(x: np.ndarray) -> np.ndarray:
    """K1(x): inf at 0, NaN for x < 0."""
    return _bessel_k(1, x, False)


def bessel_k1e(x: np.ndarray) -> np.ndarray:
    """exp(x) K1(x)."""
    return _bessel_k(1, x, True)
