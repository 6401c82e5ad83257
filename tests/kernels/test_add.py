"""ADD against the TFLM wheel: int8 / int16 (general rescaling, left shift 20 / 15), float32, int32;
broadcasting up to rank 6, fused activations, zero points at the extremes, constant second operand."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given

from microinterp.quant import quantize_multiplier
from microinterp.testing.single_op import assert_matches_tflm

from .binary_cases import assert_refused, build, case, cases, check_case, check_common_refusals

OP = "ADD"


@given(cases(OP))
# int16 zero points: (x - zp) << 15 wraps in int32
@example(case("INT16", (2, 3), (3,), (2, 3), q=((0.1, 5), (0.07, -300), (0.12, 5)), seed=1))
# 3e38 + 3e38 = inf is clamped to FLT_MAX
@example(case("FLOAT32", (4,), (4,), (4,), special=True, seed=3))
def test_matches_tflm(case):
    check_case(OP, case)


def test_multipliers_use_double_arithmetic():
    """Scales where float32 intermediates (the mirrored source) give other multipliers and, over all
    256x256 input pairs, other outputs than double arithmetic (the wheel): found by search, the float32
    variant differs from the wheel on a few pairs."""
    f32 = np.float32
    s1, s2, so = f32(0.055), f32(0.1761), f32(0.0138)
    tm32 = f32(2) * max(s1, s2)
    tm = 2.0 * max(float(s1), float(s2))
    as_float = [quantize_multiplier(float(f32(s / tm32))) for s in (s1, s2)] + [
        quantize_multiplier(float(f32(tm32 / (f32(1 << 20) * so))))]
    as_double = [quantize_multiplier(float(s) / tm) for s in (s1, s2)] + [
        quantize_multiplier(tm / ((1 << 20) * float(so)))]
    assert as_float != as_double
    a = np.repeat(np.arange(-128, 128, dtype=np.int8)[:, None], 256, 1)
    model = build(OP, "INT8", a.shape, a.shape, a.shape, q=((float(s1), 0), (float(s2), 0), (float(so), 0)))
    assert_matches_tflm(model, [a, a.T.copy()])


def test_refusals():
    check_common_refusals(OP)
    q = ((0.1, 0),) * 3
    # int32 ADD supports only unquantized inputs (the wheel refuses too).
    x = np.zeros(4, np.int32)
    quantized = build(OP, "INT32", (4,), (4,), (4,), q=q, quantize_all=True)
    assert_refused(quantized, "unquantized", [x, x])
    # Output multiplier 2*max(s)/(2^20 * s_out) >= 1: TFLM aborts the process (TFLITE_CHECK); refused here.
    tiny_out = ((1.0, 0), (1.0, 0), (1e-7, 0))
    assert_refused(build(OP, "INT8", (4,), (4,), (4,), q=tiny_out), "not in \\(0, 1\\)")
