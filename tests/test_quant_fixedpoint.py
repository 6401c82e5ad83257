"""quant's fast exact SRDHM / RDBPOT / MBQM against literal transcriptions of the C code, at every rounding boundary.

The ``literal_*`` functions below are the vectorized transcription of TFLM/gemmlowp that ``quant`` used before it
switched to the fast forms (see the *Fast exact forms* section of ``microinterp/quant/__init__.py`` for the proofs); the
scalar Python-int transcriptions in ``test_quant_gemmlowp.py`` cross-check them in turn.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp import quant
from microinterp.quant import INT32_MAX, INT32_MIN

from .test_quant_gemmlowp import rdbpot as scalar_rdbpot
from .test_quant_gemmlowp import srdhm as scalar_srdhm


# -- literal transcriptions (the reference) ------------------------------------------------------------------------
def literal_srdhm(a, b):
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    s = ab + nudge
    res = np.where(s >= 0, s >> 31, -((-s) >> 31))   # C division by 2^31 truncates toward zero
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    return np.where(overflow, INT32_MAX, res)


def literal_rdbpot(x, exponent):
    x = np.asarray(x, dtype=np.int64)
    e = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + (remainder > threshold)


def literal_mbqm(x, multiplier, shift):
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    x = np.asarray(x, dtype=np.int64)
    if np.any(left):
        x = quant.wrap_int32(x << left)
    return literal_rdbpot(literal_srdhm(x, multiplier), right)


def literal_mbqm_smaller_than_one_exp(x, multiplier, shift):
    return literal_rdbpot(literal_srdhm(x, multiplier), -np.asarray(shift, dtype=np.int64))


# -- inputs --------------------------------------------------------------------------------------------------------
def _boundary_values(rng: np.random.Generator, m: int) -> np.ndarray:
    """int32 values at and around every rounding boundary of SRDHM(., m) for a sample of quotients."""
    q = rng.integers(-(1 << 31), 1 << 31, 400)
    base = (q * (1 << 31) - (1 << 30)) // max(abs(m), 1) * (1 if m >= 0 else -1)
    x = (base[:, None] + np.arange(-3, 4)[None, :]).reshape(-1)
    x = np.concatenate([x, rng.integers(-(1 << 31), 1 << 31, 2000), [INT32_MIN, INT32_MAX, 0, -1, 1]])
    return x[(x >= INT32_MIN) & (x <= INT32_MAX)].astype(np.int64)


def _multiplier(rng: np.random.Generator) -> int:
    """Mostly QuantizeMultiplier's range [2^30, 2^31); also small, zero, negative (LEAKY_RELU) and INT32_MIN."""
    kind = int(rng.integers(0, 10))
    if kind == 0:
        return int(rng.integers(0, 1 << 31))
    if kind == 1:
        return -int(rng.integers(1 << 30, 1 << 31))
    if kind == 2:
        return int(rng.choice([INT32_MIN, INT32_MAX, 0, 1, -1, 1 << 30, -(1 << 30)]))
    return int(rng.integers(1 << 30, 1 << 31))


def _assert_same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == np.int64 and got.shape == want.shape
    bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
    assert bad.size == 0, f"{bad.size} mismatches, first at flat index {bad[0]}: {got.reshape(-1)[bad[0]]} != " \
                          f"{want.reshape(-1)[bad[0]]}"


# -- tests ---------------------------------------------------------------------------------------------------------
def test_literal_reference_matches_scalar_c_transcription():
    rng = np.random.default_rng(11)
    for _ in range(10):
        m = _multiplier(rng)
        x = _boundary_values(rng, m)[::7]
        assert literal_srdhm(x, m).tolist() == [scalar_srdhm(int(v), m) for v in x]
        e = int(rng.integers(0, 32))
        assert literal_rdbpot(x, e).tolist() == [scalar_rdbpot(int(v), e) for v in x]


@pytest.mark.parametrize("seed", range(6))
def test_srdhm_rdbpot_mbqm_match_literal(seed):
    rng = np.random.default_rng(seed)
    for _ in range(20):
        m = _multiplier(rng)
        x = _boundary_values(rng, m)
        _assert_same(quant.srdhm(x, m), literal_srdhm(x, m))
        e = int(rng.integers(0, 32))
        _assert_same(quant.rdbpot(x, e), literal_rdbpot(x, e))
        shift = int(rng.integers(-31, 8))
        _assert_same(quant.mbqm(x, m, shift), literal_mbqm(x, m, shift))
        _assert_same(quant.Requantizer(m, shift)(x), literal_mbqm(x, m, shift))
        if shift <= 0:
            _assert_same(quant.mbqm_smaller_than_one_exp(x, m, shift),
                         literal_mbqm_smaller_than_one_exp(x, m, shift))


def test_saturating_case():
    """SRDHM(INT32_MIN, INT32_MIN) saturates to INT32_MAX, also inside MBQM (x reaches INT32_MIN by a left shift)."""
    x = np.array([INT32_MIN, INT32_MIN + 1, -1, 0, 1, INT32_MAX, 1 << 30, -(1 << 30)], dtype=np.int64)
    for m in (INT32_MIN, INT32_MAX, -(1 << 30)):
        _assert_same(quant.srdhm(x, m), literal_srdhm(x, m))
        _assert_same(quant.srdhm(m, x), literal_srdhm(m, x))
        for shift in (-3, 0, 1, 2):
            _assert_same(quant.mbqm(x, m, shift), literal_mbqm(x, m, shift))
    assert int(quant.srdhm(INT32_MIN, INT32_MIN)) == INT32_MAX
    pair = np.array([INT32_MIN, 5])
    _assert_same(quant.srdhm(pair, pair[::-1]), literal_srdhm(pair, pair[::-1]))
    _assert_same(quant.srdhm(pair, pair), literal_srdhm(pair, pair))


def test_per_channel_arrays():
    rng = np.random.default_rng(9)
    m = rng.integers(1 << 30, 1 << 31, 16)
    m[5] = -m[5]
    shift = rng.integers(-20, 5, 16)
    shift[:3] = 0
    x = rng.integers(-(1 << 31), 1 << 31, (50, 16))
    _assert_same(quant.mbqm(x, m, shift), literal_mbqm(x, m, shift))
    _assert_same(quant.Requantizer(m, shift)(x), literal_mbqm(x, m, shift))
    e = np.maximum(-shift, 0)
    _assert_same(quant.rdbpot(x, e), literal_rdbpot(x, e))
    _assert_same(quant.rdbpot(x[:, :1], e), literal_rdbpot(x[:, :1], e))      # the exponent broadcasts x
    _assert_same(quant.mbqm(x[:, :1], 1 << 30, shift), literal_mbqm(x[:, :1], 1 << 30, shift))


def test_rdbpot_exhaustive_small_range():
    x = np.arange(-5000, 5000, dtype=np.int64)
    for e in range(14):
        _assert_same(quant.rdbpot(x, e), literal_rdbpot(x, e))


def test_input_dtypes_scalars_and_no_aliasing():
    """Any integer dtype works (int32 is multiplied into int64 directly); results are new int64 arrays."""
    rng = np.random.default_rng(4)
    x = rng.integers(INT32_MIN, INT32_MAX, 3000, endpoint=True)
    for dtype in (np.int8, np.int16, np.int32, np.uint8, np.uint16, np.int64):
        info = np.iinfo(dtype)
        xd = np.clip(x, max(info.min, INT32_MIN), min(info.max, INT32_MAX)).astype(dtype)
        for shift in (-9, 0, 3):
            _assert_same(quant.mbqm(xd, 1518500250, shift), literal_mbqm(xd, 1518500250, shift))
    _assert_same(quant.mbqm(x.astype(np.float64), 1 << 30, -2), literal_mbqm(x.astype(np.float64), 1 << 30, -2))
    assert int(quant.mbqm(-7, 1 << 30, -1)) == int(literal_mbqm(-7, 1 << 30, -1))
    assert int(quant.rdbpot(-3, 1)) == -2 and int(quant.rdbpot(3, 1)) == 2
    assert quant.rdbpot(x, 0) is not x and quant.mbqm(x, 1 << 30, 0) is not x
    before = x.copy()
    quant.rdbpot(x, 0)[:] = 0
    assert np.array_equal(x, before)


@given(st.integers(0, 2**32 - 1), st.sampled_from([-31, -20, -8, -1, 0, 1, 3, 7]))
def test_int32_accumulators_per_channel(seed, shift_hint):
    """The conv kernels' case: int32 accumulators, per-channel (M, shift) along the last axis, incl. M = 0,
    left shifts and e = 0."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.integers(INT32_MIN, INT32_MAX, 500, endpoint=True),
                        [INT32_MIN, INT32_MAX, 0, -1, 1, -(1 << 30), 1 << 30]]).astype(np.int32)
    mult = rng.integers(1 << 30, 1 << 31, (1, 4))
    mult[0, 0] = 0
    shift = np.clip(shift_hint + rng.integers(-2, 3, (1, 4)), -31, 30)
    want = literal_mbqm(x[:, None].astype(np.int64), mult, shift)
    _assert_same(quant.mbqm(x[:, None], mult, shift), want)
    _assert_same(quant.Requantizer(mult, shift)(x[:, None]), want)


@given(st.integers(0, 2**32 - 1), st.sampled_from([-31, -20, -8, -1, 0, 1, 3, 7]), st.booleans(), st.booleans())
def test_bound_requantizer_is_the_call(seed, shift_hint, per_channel, int32_input):
    """:meth:`Requantizer.bind` (kept buffers: the left shift wrapped in int32, the sign of ``y - h`` for the
    rounding term where no channel skips it, else the compare) against the call: per tensor and per channel (with
    e = 0 channels, M = 0 and a saturating M among them), int32 and int64 inputs at the extremes."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.integers(INT32_MIN, INT32_MAX, 300, endpoint=True),
                        [INT32_MIN, INT32_MAX, 0, -1, 1, -(1 << 30), 1 << 30]])
    x = x.astype(np.int32 if int32_input else np.int64)[:, None]
    if per_channel:
        mult = rng.integers(1 << 30, 1 << 31, (1, 4))
        mult[0, 0] = 0
        shift = np.clip(shift_hint + rng.integers(-2, 3, (1, 4)), -31, 30)
        if seed % 5 == 0:
            mult[0, 1] = INT32_MIN
    else:
        mult, shift = int(rng.integers(1 << 30, 1 << 31)), int(np.clip(shift_hint, -31, 30))
    requantizer = quant.Requantizer(mult, shift)
    out = np.full(np.broadcast_shapes(x.shape, np.shape(mult)), 7, np.int64)
    call = requantizer.bind(x, out)
    for _ in range(2):
        call()
        _assert_same(out, requantizer(x))
