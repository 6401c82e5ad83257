"""SUB against the TFLM wheel: int8 / int16 (ADD's rescaling with a - b), float32, int32 with fused
activations; broadcasting up to rank 6, zero points at the extremes, constant second operand."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given

from microinterp.quant import quantize_multiplier
from microinterp.testing.single_op import assert_matches_tflm

from .binary_cases import assert_refused, build, case, cases, check_case, check_common_refusals

OP = "SUB"


@given(cases(OP))
# int32 SUB applies the fused activation (ADD int32 does not)
@example(case("INT32", (2, 3), (1, 3), (2, 3), act="RELU6", seed=2))
@example(case("INT8", (3, 1, 2), (1, 4, 1), (3, 4, 2), act="RELU", q=((0.02, -128), (0.5, 127), (0.01, -128)),
              const2=True, seed=4))
def test_matches_tflm(case):
    check_case(OP, case)


def test_multipliers_use_double_arithmetic():
    """Scales where float32 intermediates (the mirrored source) give other multipliers and, over all
    256x256 input pairs, other outputs than double arithmetic (the wheel): found by search, the float32
    variant differs from the wheel on a few pairs."""
    f32 = np.float32
    s1, s2, so = f32(0.1362), f32(0.1741), f32(0.0462)
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
    x = np.zeros(4, np.int32)
    # int32 SUB needs unquantized inputs and output (the wheel refuses too).
    assert_refused(build(OP, "INT32", (4,), (4,), (4,), q=((0.1, 0),) * 3, quantize_all=True), "unquantized",
                   [x, x])
    out_q = ((None, 0), (None, 0), (0.1, 0))
    out_quantized = build(OP, "INT32", (4,), (4,), (4,), q=out_q, quantize_all=True)
    assert_refused(out_quantized, "unquantized", [x, x])
    tiny_out = ((1.0, 0), (1.0, 0), (1e-6, 0))
    assert_refused(build(OP, "INT16", (4,), (4,), (4,), q=tiny_out), "not in \\(0, 1\\)")
