"""The vectorized gemmlowp / TFLM fixed-point functions of ``microinterp.quant`` against plain scalar transcriptions
of the C code (Python ints, explicit int32 wrap-around), on random and edge-case inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp import libm, quant

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


# -- scalar transcriptions of gemmlowp fixedpoint.h / TFLM common.h ------------------------------------------------
def wrap(x: int) -> int:
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def srdhm(a: int, b: int) -> int:
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return c_div(ab + nudge, 1 << 31)


def rdbpot(x: int, e: int) -> int:
    mask = (1 << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if remainder > threshold else 0)


def srmbpot(x: int, e: int) -> int:
    """SaturatingRoundingMultiplyByPOT<e> with gemmlowp's threshold test."""
    if e == 0:
        return x
    if e < 0:
        return rdbpot(x, -e)
    threshold = (1 << (31 - e)) - 1
    if x > threshold:
        return INT32_MAX
    if x < -threshold:
        return INT32_MIN
    return wrap(x * (1 << e))


def exp_interval(a: int) -> int:
    const_term, one_third = 1895147668, 715827883
    x = wrap(a + (1 << 28))
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = srmbpot(x4, -2)
    poly = srmbpot(wrap(srdhm(wrap(x4_over_4 + x3), one_third) + x2), -1)
    return wrap(const_term + srdhm(const_term, wrap(x + poly)))


def exp_negative(a: int, k: int) -> int:
    frac = 31 - k
    quarter = 1 << (frac - 2)
    t = wrap((a & (quarter - 1)) - quarter)
    result = exp_interval(srmbpot(t, k))
    remainder = wrap(t - a)
    for e, m in ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401),
                 (4, 242)):
        if k > e and remainder & (1 << (frac + e)):
            result = srdhm(result, m)
    if k > 5 and a < -(1 << (36 - k)):
        result = 0
    return INT32_MAX if a == 0 else result


def rounding_half_sum(a: int, b: int) -> int:
    s = a + b
    return c_div(s + (1 if s >= 0 else -1), 2)


def newton(a: int) -> int:
    half_den = rounding_half_sum(a, INT32_MAX)
    x = wrap(1515870810 + srdhm(half_den, -1010580540))
    for _ in range(3):
        one_minus = wrap((1 << 29) - srdhm(half_den, x))
        x = wrap(x + srmbpot(srdhm(x, one_minus), 2))
    return x


def one_over(a: int) -> int:
    return srmbpot(newton(a), 1)


def one_minus_over(a: int) -> int:
    return srmbpot(wrap(newton(a) - (1 << 29)), 2)


def logistic(a: int, k: int) -> int:
    if a == 0:
        return 1 << 30
    abs_in = a if a > 0 else wrap(-a)
    pos = one_over(exp_negative(wrap(-abs_in), k))
    return pos if a > 0 else wrap(INT32_MAX - pos)


def tanh(a: int, k: int) -> int:
    if a == 0:
        return 0
    n = a if a < 0 else wrap(-a)
    t = one_minus_over(exp_negative(n, k + 1))
    return wrap(-t) if a < 0 else t


def clz32(x: int) -> int:
    u = x & 0xFFFFFFFF
    return 32 - u.bit_length()


def get_reciprocal(x: int, bits: int) -> tuple[int, int]:
    h = clz32(x)
    shifted = wrap(((x & 0xFFFFFFFF) << h) - (1 << 31))
    return one_over(shifted), bits - h


def lut_lookup(v: int, lut) -> int:
    index = 256 + (v >> 7)
    offset = v & 0x7F
    base = int(lut[index])
    slope = ((int(lut[index + 1]) - base + 32768) & 0xFFFF) - 32768
    return ((base + ((slope * offset + 64) >> 7) + 32768) & 0xFFFF) - 32768


def std_round(x: np.float32) -> np.float32:
    return np.float32(math.floor(abs(float(x)) + 0.5) * (1 if x >= 0 else -1))


def lut_populate(transform, s_in, zp_in, s_out, zp_out):
    f = np.float32
    s_in, s_out = f(s_in), f(s_out)
    input_min, input_max = f(s_in * f(-32768 - zp_in)), f(s_in * f(32767 - zp_in))
    output_min, output_max = f(s_out * f(-32768 - zp_out)), f(s_out * f(32767 - zp_out))
    step = f(f(input_max - input_min) / f(512))
    half_step = f(step / f(2))
    inv = f(f(65536) / f(output_max - output_min))
    lut = []
    for i in range(512):
        val = transform(f(input_min + f(f(i) * step)))
        val_mid = transform(f(f(input_min + f(f(i) * step)) + half_step))
        val_next = transform(f(input_min + f(f(i + 1) * step)))
        sample = std_round(f(val * inv))
        interp = std_round(f(f(f(val_next * inv) + sample) / f(2)))
        mid = std_round(f(val_mid * inv))
        bias = std_round(f(f(interp - mid) / f(2)))
        lut.append(int(min(max(f(sample - bias), -32768), 32767)))
    lut.append(int(min(max(std_round(f(transform(input_max) * inv)), -32768), 32767)))
    return np.array(lut, dtype=np.int16)


# -- tests ---------------------------------------------------------------------------------------------------------
def _edge_int32(rng: np.random.Generator, n: int, low: int = INT32_MIN, high: int = INT32_MAX) -> np.ndarray:
    edges = np.array([low, low + 1, -1, 0, 1, high - 1, high, -(1 << 29), -(1 << 28), 1 << 29, 1 << 30],
                     dtype=np.int64)
    edges = edges[(edges >= low) & (edges <= high)]
    return np.concatenate([edges, rng.integers(low, high, size=n, endpoint=True, dtype=np.int64)])


def _check(vector_fn, scalar_fn, values):
    got = np.asarray(vector_fn(values), dtype=np.int64)
    want = np.array([scalar_fn(int(v)) for v in values], dtype=np.int64)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"first mismatch at input {values[bad[0]]}: {got[bad[0]]} != {want[bad[0]]}"


def test_exp_on_interval():
    values = _edge_int32(np.random.default_rng(1), 3000, -(1 << 29), -1)
    _check(quant.exp_on_interval_between_negative_one_quarter_and_0_excl, exp_interval, values)


@pytest.mark.parametrize("k", [0, 1, 2, 4, 5, 6, 8, 12])
def test_exp_on_negative_values(k):
    values = _edge_int32(np.random.default_rng(k), 3000, INT32_MIN, 0)
    _check(lambda v: quant.exp_on_negative_values(v, k), lambda v: exp_negative(v, k), values)
    small = -np.random.default_rng(k + 100).integers(0, 1 << 24, size=2000, dtype=np.int64)  # near zero
    _check(lambda v: quant.exp_on_negative_values(v, k), lambda v: exp_negative(v, k), small)


def test_one_over_and_one_minus_over():
    values = _edge_int32(np.random.default_rng(2), 3000, 0, INT32_MAX)
    _check(quant.one_over_one_plus_x_for_x_in_0_1, one_over, values)
    _check(quant.one_minus_x_over_one_plus_x_for_x_in_0_1, one_minus_over, values)


@pytest.mark.parametrize("k", [0, 3, 4, 5, 8])
def test_logistic_and_tanh(k):
    values = _edge_int32(np.random.default_rng(10 + k), 3000)
    _check(lambda v: quant.fixed_point_logistic(v, k), lambda v: logistic(v, k), values)
    _check(lambda v: quant.fixed_point_tanh(v, k), lambda v: tanh(v, k), values)


@given(st.lists(st.integers(INT32_MIN, INT32_MAX), min_size=1, max_size=50))
def test_logistic_tanh_hypothesis(values):
    arr = np.array(values, dtype=np.int64)
    _check(lambda v: quant.fixed_point_logistic(v, 4), lambda v: logistic(v, 4), arr)
    _check(lambda v: quant.fixed_point_tanh(v, 4), lambda v: tanh(v, 4), arr)


def test_get_reciprocal_and_clz():
    values = np.concatenate([_edge_int32(np.random.default_rng(3), 2000, 1, INT32_MAX),
                             np.array([1 << i for i in range(31)], dtype=np.int64)])
    scale, bits = quant.get_reciprocal(values, 12)
    for v, s, b in zip(values.tolist(), scale.tolist(), np.broadcast_to(bits, values.shape).tolist()):
        assert (s, b) == get_reciprocal(v, 12), v
    allv = _edge_int32(np.random.default_rng(4), 2000)
    assert quant.clz32(allv).tolist() == [clz32(int(v)) for v in allv]


def test_get_reciprocal_small_inputs_take_the_python_int_path():
    """Up to 16 values run the Python-int chain: same values, dtypes and shapes as the vectorized chain."""
    values = np.concatenate([_edge_int32(np.random.default_rng(7), 3000), np.array([0, (1 << 31) - 1], np.int64)])
    big_scale, big_bits = quant.get_reciprocal(values, 12)      # more than 16 values: the NumPy chain
    for start in range(0, values.size, 13):
        chunk = values[start:start + 13]
        scale, bits = quant.get_reciprocal(chunk.reshape(1, -1), 12)
        assert scale.dtype == bits.dtype == np.int64 and scale.shape == bits.shape == (1, chunk.size)
        assert scale[0].tolist() == big_scale[start:start + 13].tolist()
        assert bits[0].tolist() == big_bits[start:start + 13].tolist()
    for v in values[:40].tolist():
        scale, bits = quant.get_reciprocal(np.int64(v), 3)
        assert type(scale) is type(bits) is np.int64 and (int(scale), int(bits)) == get_reciprocal(v, 3)
        assert quant.reciprocal_int(v, 3) == get_reciprocal(v, 3)


def test_saturating_shifts_and_half_sum():
    rng = np.random.default_rng(5)
    values = _edge_int32(rng, 2000)
    for e in (-31, -12, -1, 0, 1, 2, 5, 30):
        _check(lambda v, e=e: quant.saturating_rounding_multiply_by_pot(v, e), lambda v, e=e: srmbpot(v, e), values)
    other = _edge_int32(np.random.default_rng(6), values.size - 11)
    got = quant.rounding_half_sum(values, other)
    assert got.tolist() == [rounding_half_sum(int(a), int(b)) for a, b in zip(values, other)]


def test_srdhm16_and_wrap16():
    a = np.arange(-32768, 32768, 37, dtype=np.int64)
    for b in (-32768, -12345, -1, 0, 1, 16384, 32767):
        want = []
        for v in a.tolist():
            if v == b == -32768:
                want.append(32767)
                continue
            ab = v * b
            want.append(c_div(ab + ((1 << 14) if ab >= 0 else 1 - (1 << 14)), 1 << 15))
        assert quant.srdhm16(a, b).tolist() == want
    assert quant.wrap_int16(np.array([32768, -32769, 65535, 5])).tolist() == [-32768, 32767, -1, 5]


def test_rdbpot16_is_rdbpot_on_int16_values():
    x = np.arange(-32768, 32768, dtype=np.int64)
    for e in range(15):
        assert quant.rdbpot16(x[::7], e).tolist() == [rdbpot(int(v), e) for v in x[::7]]


def test_lut_lookup_matches_scalar():
    rng = np.random.default_rng(7)
    lut = rng.integers(-32768, 32767, size=513, endpoint=True).astype(np.int16)
    values = np.arange(-32768, 32768, dtype=np.int64)
    got = quant.lut_lookup_int16(values, lut)
    sample = values[::97]
    assert got[::97].tolist() == [lut_lookup(int(v), lut) for v in sample]


@pytest.mark.parametrize("which", ["exp", "recip"])
def test_lut_populate_matches_scalar(which):
    f = np.float32
    if which == "exp":
        def transform(v):
            return libm.expf(v) if np.ndim(v) else libm.expf(np.array([v], np.float32))[0]
        args = (f(10.0) / f(65535), 32767, f(2.0) / f(65535), 0)
    else:
        def transform(v):
            return (f(1.0) / (f(1.0) + np.asarray(v, np.float32))).astype(np.float32)
        args = (f(1.0) / f(65535), -32768, f(2.0) / f(65535), 0)
    got = quant.lut_populate_int16(transform, *args)
    want = lut_populate(lambda v: f(np.asarray(transform(v)).item()), *args)
    assert got.dtype == np.int16 and got.shape == (513,)
    assert got.tolist() == want.tolist()


def test_round_half_away_f32():
    x = np.array([0.5, -0.5, 1.5, -2.5, 0.49999997, -0.49999997, 8388609.0, 2.4999998], dtype=np.float32)
    assert quant.round_half_away_f32(x).tolist() == [float(std_round(v)) for v in x]


def test_sigmoid_table():
    t = quant.sigmoid_table_uint16()
    assert t.dtype == np.uint16 and t.shape == (256,)
    assert t[0] == 32768 and t[1] == 33451 and t[4] == 35493 and t[-1] == 65535
    assert int(t.astype(np.int64).sum()) == 15670629
    assert np.all(np.diff(t.astype(np.int64)) >= 0)


def test_calculate_input_radius_and_checked_log2():
    assert quant.calculate_input_radius(5, 19) == 31 * (1 << 26) >> 19
    assert quant.calculate_input_radius(4, 20, 31) == math.floor(15 * 2.0 ** 27 / 2.0 ** 20)
    assert quant.checked_log2(2.0 ** -12) == (True, -12)
    assert quant.checked_log2(1 / 32768) == (True, -15)
    assert quant.checked_log2(0.0003)[0] is False
