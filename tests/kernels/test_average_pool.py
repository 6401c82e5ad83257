"""AVERAGE_POOL_2D against the TFLM wheel (int8, int16, float32; SAME/VALID, strides, clipped windows, global
pools, fused activations, zero points at the extremes), plus refusals and the band API an out-of-core pager
uses."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given

from microinterp import Interpreter
from microinterp.errors import PrepareError
from microinterp.kernels import average_pool
from microinterp.testing.single_op import random_tensor

from .binary_cases import wheel_refuses
from .pool_cases import build, case, cases, check_case

OP = "AVERAGE_POOL_2D"


@given(cases(OP))
# clipped windows: n varies; rounding half away from zero
@example(case(1, kind="INT8", shape=(1, 5, 6, 2), filter=(4, 4), stride=(3, 1), padding="SAME", zp=-128))
# global pool: 63 float32 adds in TFLM's order
@example(case(2, kind="FLOAT32", shape=(2, 7, 9, 3), filter=(7, 9), stride=(1, 1), padding="VALID"))
def test_matches_tflm(case):
    check_case(OP, case)


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


def test_window_without_taps_is_refused():
    # Output larger than the padding formula: the last windows lie outside the image. TFLM's AveragePool
    # returns early there and leaves the remaining outputs unwritten (stale arena bytes): not emulable.
    model = build(OP, kind="INT8", shape=(1, 5, 6, 2), filter=(2, 2), stride=(2, 2), padding="VALID",
                  delta=(2, 3))
    with pytest.raises(PrepareError, match="no input taps"):
        Interpreter(model)


@pytest.mark.parametrize("kind", ["INT8", "FLOAT32"])
def test_bands_from_row_slices_match_the_whole_op(kind):
    """pool_rows on input row slices (just input_rows of the band) reproduces invoke() band by band."""
    model = build(OP, kind=kind, shape=(2, 11, 7, 3), filter=(3, 2), stride=(2, 1), padding="SAME")
    it = Interpreter(model)
    x = random_tensor(np.random.default_rng(3), (2, 11, 7, 3), kind)
    it.set_input(x)
    it.invoke()
    whole = it.get_output()
    data = it.runtime.op_data[0]
    for y0, y1 in [(0, 1), (1, 4), (4, 6), (0, 6), (5, 6)]:
        lo, hi = average_pool.input_rows(data, y0, y1)
        band = average_pool.pool_rows(data, x[:, lo:hi], lo, y0, y1)
        assert np.array_equal(band, whole[:, y0:y1])
