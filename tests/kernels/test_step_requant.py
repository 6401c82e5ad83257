"""StepRequantizer: clamp(f(acc), lo, hi) by searchsorted equals the direct evaluation, at every threshold and its
neighbours, at the range ends and on random accumulators; per tensor, per channel (with repeated columns), int32 and
int64 MBQM, float64 and int64 keys."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from microinterp.kernels._step_requant import StepRequantizer
from microinterp.quant import INT32_MAX, INT32_MIN, Requantizer, mbqm_int64


def _direct(f, acc, lo, hi):
    return np.minimum(np.maximum(f(acc), lo), hi)


def _probe_points(steps: StepRequantizer, acc_min: int, acc_max: int, channels: int, repeat: int,
                  rng: np.random.Generator) -> np.ndarray:
    """[n, channels * repeat] accumulators: every threshold of every channel and its neighbours, the range ends,
    random values."""
    t = steps.thresholds.astype(np.int64)
    span = acc_max - acc_min + 2
    per_channel = t.reshape(channels, -1) - (np.arange(channels) * span)[:, None]
    points = np.concatenate([per_channel - 1, per_channel, per_channel + 1], axis=1)       # [channels, m]
    points = np.concatenate([points, np.full((channels, 2), [acc_min, acc_max]),
                             rng.integers(acc_min, acc_max + 1, (channels, 64))], axis=1)
    points = np.clip(points, acc_min, acc_max)
    return np.repeat(points.T, repeat, axis=1)


@given(m=st.sampled_from([0, 1 << 30, (1 << 31) - 1]) | st.integers(1 << 30, (1 << 31) - 1),
       shift=st.integers(-31, 8), zp=st.integers(-128, 127), out=st.sampled_from(["INT8", "INT16", "RELU"]),
       width=st.integers(1, 31), seed=st.integers(0, 2**32 - 1), float_keys=st.booleans())
@example(m=1 << 30, shift=-14, zp=0, out="INT16", width=31, seed=0, float_keys=False)    # the LSTM's 2^-15
@example(m=(1 << 31) - 1, shift=0, zp=-128, out="INT8", width=31, seed=1, float_keys=True)
def test_per_tensor_int32_mbqm(m, shift, zp, out, width, seed, float_keys):
    rng = np.random.default_rng(seed)
    lo, hi = {"INT8": (-128, 127), "INT16": (-32768, 32767), "RELU": (zp, 127)}[out]
    bound = (1 << width) - 1
    if shift > 0:
        bound = min(bound, INT32_MAX >> shift)
    acc_min, acc_max = -int(rng.integers(0, bound + 1)), int(rng.integers(0, bound + 1))
    requantize = Requantizer(m, shift)

    def f(a):
        return requantize(a) + zp

    steps = StepRequantizer(f, lo, hi, acc_min, acc_max, dtype=np.float64 if float_keys else np.int64)
    acc = _probe_points(steps, acc_min, acc_max, 1, 1, rng)
    assert np.array_equal(steps(acc), _direct(f, acc, lo, hi))


@given(m=st.integers(1 << 30, (1 << 31) - 1), shift=st.integers(-24, 0), bits=st.sampled_from([8, 16]),
       offset=st.integers(-200, 200), seed=st.integers(0, 2**32 - 1), float_keys=st.booleans())
@example(m=1 << 30, shift=-14, bits=16, offset=0, seed=0, float_keys=True)
@example(m=(1 << 31) - 1, shift=0, bits=8, offset=100, seed=1, float_keys=False)     # a zero point that wraps
def test_coded_thresholds_make_the_index_the_stored_value(m, shift, bits, offset, seed, float_keys):
    """``coded``: the index among the padded thresholds, stored into a ``bits``-bit integer (C's narrowing cast),
    is ``clamp(f(acc), lo, hi) + offset`` modulo 2^bits -- the SVDF state's zero point added after its clamp."""
    rng = np.random.default_rng(seed)
    lo, hi = (-128, 127) if bits == 8 else (-32768, 32767)
    requantize = Requantizer(m, shift)
    acc_min, acc_max = -int(rng.integers(0, 1 << 30)), int(rng.integers(0, 1 << 30))
    steps = StepRequantizer(requantize, lo, hi, acc_min, acc_max, dtype=np.float64 if float_keys else np.int64)
    acc = _probe_points(steps, acc_min, acc_max, 1, 1, rng)
    stored = np.empty(acc.shape, np.int8 if bits == 8 else np.int16)
    np.copyto(stored, steps.coded(bits, offset).searchsorted(acc.astype(steps.thresholds.dtype), "right"),
              casting="unsafe")
    expected = (_direct(requantize, acc, lo, hi) + offset).astype(stored.dtype)       # wraps as the store does
    assert np.array_equal(stored, expected)


def test_coded_declines_several_channels():
    steps = StepRequantizer(lambda a: a, -2, 2, -5, 5, channels=2)
    assert steps.coded(8) is None


@given(channels=st.integers(1, 6), repeat=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_per_channel_columns(channels, repeat, seed):
    rng = np.random.default_rng(seed)
    m = rng.integers(1 << 30, 1 << 31, channels)
    s = rng.integers(-20, 3, channels)
    zp = -5
    acc_min, acc_max = -int(rng.integers(0, 1 << 20)), int(rng.integers(0, 1 << 20))
    requantize = Requantizer(m, s)

    def f(a):
        return requantize(a) + zp

    steps = StepRequantizer(f, -128, 127, acc_min, acc_max, channels, repeat, values_dtype=np.int8)
    acc = _probe_points(steps, acc_min, acc_max, channels, repeat, rng)
    expected = _direct(Requantizer(np.repeat(m, repeat), np.repeat(s, repeat)), acc, -128 - zp, 127 - zp) + zp
    got = steps(acc)
    assert got.dtype == np.int8
    assert np.array_equal(got, expected)
    # the kernels' form: offsets added early, then index and values
    assert np.array_equal(steps.values[steps.index(acc + steps.key_offset)], expected)


@given(m=st.integers(1 << 30, (1 << 31) - 1), shift=st.integers(-20, 10), seed=st.integers(0, 2**32 - 1))
def test_int64_mbqm(m, shift, seed):
    rng = np.random.default_rng(seed)
    acc_min, acc_max = -int(rng.integers(0, 1 << 40)), int(rng.integers(0, 1 << 40))

    def f(a):
        return mbqm_int64(a, m, shift)

    ends = mbqm_int64(np.array([acc_min, acc_max]), m, shift)
    full = (np.array([acc_min, acc_max]) * ((m + (1 << 15)) >> 16) + (1 << (14 - shift))) >> (15 - shift)
    if not np.array_equal(ends, full):
        return      # the int64 MBQM wraps on this range: not a step function (the kernels check this)
    steps = StepRequantizer(f, -32768, 32767, acc_min, acc_max)
    acc = _probe_points(steps, acc_min, acc_max, 1, 1, rng)
    assert np.array_equal(steps(acc), _direct(f, acc, -32768, 32767))


def test_exhaustive_small_range():
    """Every accumulator of a small range, for a few multipliers around the rounding ties."""
    acc = np.arange(-5000, 5001)
    for m, s in [(1 << 30, -3), (1 << 30, 0), (1717986918, -4), (1073741825, 2), (0, 0)]:
        requantize = Requantizer(m, s)
        steps = StepRequantizer(requantize, -100, 100, -5000, 5000)
        assert np.array_equal(steps(acc), _direct(requantize, acc, -100, 100))


def test_a_map_that_is_not_a_step_function_is_refused():
    """A wrapping map (int32 wrap of acc * 2^8) is not non-decreasing: the threshold check fails loudly."""
    requantize = Requantizer(1 << 30, 8)
    with pytest.raises(AssertionError, match="step function"):
        StepRequantizer(requantize, -32768, 32767, INT32_MIN >> 4, INT32_MAX >> 4)
