"""MAX_POOL_2D against the TFLM wheel (int8, int16, float32; SAME/VALID, strides, clipped windows, outputs
larger or smaller than the padding formula, fused activations, zero points at the extremes, NaN and signed
zeros), refusals and the band API."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given

from microinterp import Interpreter
from microinterp.errors import PrepareError
from microinterp.kernels import max_pool
from microinterp.testing.single_op import assert_matches_tflm, random_tensor

from .binary_cases import wheel_refuses
from .pool_cases import build, case, cases, check_case

OP = "MAX_POOL_2D"


@given(cases(OP))
# windows past the image: the lowest value, then the activation clamp
@example(case(1, kind="INT8", shape=(1, 5, 6, 2), filter=(2, 2), stride=(2, 2), padding="VALID", act="RELU",
              zp=7, delta=(2, 3)))
@example(case(2, kind="INT16", shape=(2, 7, 9, 3), filter=(3, 2), stride=(2, 3), padding="SAME", zp=-32768))
def test_matches_tflm(case):
    check_case(OP, case)


def test_float_nan_never_wins():
    """std::max(m, x) = (m < x) ? x : m: a NaN tap is skipped, as TFLM does."""
    model = build(OP, kind="FLOAT32", shape=(1, 4, 4, 1), filter=(2, 2), stride=(2, 2), padding="VALID")
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1) - 8
    x[0, 0, 0, 0] = np.nan
    x[0, 2, 3, 0] = np.nan
    out = assert_matches_tflm(model, [x])[0]
    assert not np.isnan(out).any()


@pytest.mark.parametrize("kwargs,match", [
    ({"out_scale": 0.06}, "differ by more than 1e-6"),
    ({"out_zp": 1}, "zero point"),
])
def test_refusals_match_the_wheel(kwargs, match):
    model = build(OP, kind="INT8", shape=(1, 4, 4, 2), filter=(2, 2), stride=(2, 2), padding="VALID",
                  **kwargs)
    with pytest.raises(PrepareError, match=match):
        Interpreter(model)
    assert wheel_refuses(model, [np.zeros((1, 4, 4, 2), np.int8)])


def test_type_mismatch_is_refused():
    model = build(OP, kind="INT8", shape=(1, 4, 4, 2), filter=(2, 2), stride=(2, 2), padding="VALID",
                  out_kind="INT16")
    with pytest.raises(PrepareError, match="output type"):
        Interpreter(model)


@pytest.mark.parametrize("kind", ["INT16", "FLOAT32"])
def test_bands_from_row_slices_match_the_whole_op(kind):
    model = build(OP, kind=kind, shape=(1, 13, 6, 2), filter=(3, 3), stride=(2, 2), padding="SAME")
    it = Interpreter(model)
    x = random_tensor(np.random.default_rng(4), (1, 13, 6, 2), kind)
    it.set_input(x)
    it.invoke()
    whole = it.get_output()
    data = it.runtime.op_data[0]
    for y0, y1 in [(0, 1), (1, 4), (4, 7), (0, 7), (6, 7)]:
        lo, hi = max_pool.input_rows(data, y0, y1)
        assert np.array_equal(max_pool.pool_rows(data, x[:, lo:hi], lo, y0, y1), whole[:, y0:y1])


def test_float_signed_zeros_keep_the_first():
    """std::max keeps the running maximum on ties: +0.0 then -0.0 gives +0.0, -0.0 then +0.0 gives -0.0."""
    from microinterp.testing.tflm import TflmRunner

    model = build(OP, kind="FLOAT32", shape=(1, 2, 4, 1), filter=(2, 2), stride=(2, 2), padding="VALID")
    x = np.full((1, 2, 4, 1), -1.0, np.float32)
    x[0, 0, 0, 0], x[0, 1, 1, 0] = 0.0, -0.0      # window 0: +0 first
    x[0, 0, 2, 0], x[0, 1, 2, 0] = -0.0, 0.0      # window 1: -0 first
    ours = assert_matches_tflm(model, [x])[0]
    wheel = TflmRunner(model, preserve_all=False)
    wheel.run([x])
    assert np.array_equal(np.signbit(ours), np.signbit(wheel.output(0)))
    assert np.array_equal(np.signbit(ours).reshape(-1), [False, True])


@pytest.mark.parametrize("seed", range(4))
def test_float_zero_signs_and_nans_random(seed):
    """Inputs from {-0, +0, -1, 1, NaN}: values and the sign of every zero output equal the wheel's."""
    from microinterp.testing.tflm import TflmRunner

    rng = np.random.default_rng(seed)
    shape = (1, 9, 17, 5)
    model = build(OP, kind="FLOAT32", shape=shape, filter=(3, 3), stride=(2, 2), padding="SAME")
    choices = np.array([-0.0, 0.0, -1.0, 1.0, np.nan], np.float32)
    x = choices[rng.choice(5, size=shape, p=[0.35, 0.35, 0.2, 0.05, 0.05])]
    ours = assert_matches_tflm(model, [x])[0]
    wheel = TflmRunner(model, preserve_all=False)
    wheel.run([x])
    assert np.array_equal(np.signbit(ours), np.signbit(wheel.output(0)))
