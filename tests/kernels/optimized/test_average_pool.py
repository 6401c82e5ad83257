"""Optimized int8/int16 AVERAGE_POOL_2D (exact float window sums, TFLM's rounding division in float) against the
wheel and the reference kernel: filters larger than the input with padding, clipped windows (per-position counts),
strides larger than the filter, global pools (VALID and SAME), activations that clamp, the float64 and reference
fallbacks, repeated invokes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.kernels.pooling_common import valid_taps
from microinterp.testing.single_op import random_tensor
from microinterp.testing.tflm import compare_optimized

from ..pool_cases import build, case, check_case, compute_padding, out_hw

OP = "AVERAGE_POOL_2D"
ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


@st.composite
def edge_cases(draw):
    kind = draw(st.sampled_from(["INT8", "INT8", "INT16"]))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 8)), draw(st.integers(1, 8)), draw(st.integers(1, 4)))
    params = {"kind": kind, "shape": shape,
              "filter": (draw(st.integers(1, 10)), draw(st.integers(1, 10))),
              "stride": (draw(st.integers(1, 5)), draw(st.integers(1, 5))),
              "padding": draw(st.sampled_from(["SAME", "SAME", "VALID"])), "act": draw(st.sampled_from(ACTS)),
              "delta": (draw(st.sampled_from([0, 0, -1])), draw(st.sampled_from([0, 0, -1])))}
    lo, hi = (-128, 127) if kind == "INT8" else (-32768, 32767)
    params["zp"] = draw(st.sampled_from([lo, hi, 0]) | st.integers(lo, hi))
    params["scale"] = params["out_scale"] = 10 ** draw(st.floats(-4, 1))
    oh, ow = out_hw(params)
    assume(oh >= 1 and ow >= 1)
    pad = compute_padding(params)
    assume(valid_taps(oh, params["stride"][0], pad[0], params["filter"][0], shape[1]).all())
    assume(valid_taps(ow, params["stride"][1], pad[1], params["filter"][1], shape[2]).all())
    return {"params": params, "seed": draw(st.integers(0, 2**32 - 1))}


@given(edge_cases())
# filter larger than the input, SAME: every window clipped differently
@example(case(1, kind="INT8", shape=(1, 3, 4, 2), filter=(7, 9), stride=(1, 1), padding="SAME", zp=-128))
# SAME global pool (one window covering the padded image)
@example(case(2, kind="INT8", shape=(2, 3, 3, 3), filter=(5, 5), stride=(3, 3), padding="SAME", zp=127, act="RELU6"))
# stride larger than the filter: rows and columns skipped
@example(case(3, kind="INT16", shape=(1, 8, 8, 2), filter=(2, 1), stride=(5, 3), padding="VALID", zp=0))
def test_matches_tflm(c):
    check_case(OP, c)


def _mode(**params) -> str:
    return Interpreter(build(OP, **params)).runtime.op_data[0].mode


def test_modes():
    assert _mode(kind="INT8", shape=(1, 25, 5, 8), filter=(25, 5), stride=(25, 5), padding="VALID") == "global"
    assert _mode(kind="INT8", shape=(1, 3, 3, 8), filter=(5, 5), stride=(3, 3), padding="SAME") == "global"
    assert _mode(kind="INT8", shape=(1, 6, 6, 8), filter=(3, 3), stride=(2, 2), padding="SAME") == "general"
    assert _mode(kind="FLOAT32", shape=(1, 6, 6, 8), filter=(3, 3), stride=(2, 2), padding="SAME") == "reference"


@pytest.mark.parametrize("kind,side,dtype", [("INT16", 23, np.float64), ("INT8", 400, np.float64),
                                             ("INT16", 256, None)])
def test_wide_sums(kind, side, dtype):
    """Above 2^24 the sums run in float64; when the int32 accumulator could wrap (int16, 65536 taps) the
    reference invoke runs. Extreme inputs (all at the low end) push the sums to their bounds."""
    params = {"kind": kind, "shape": (1, side, side, 1), "filter": (side, side), "stride": (1, 1),
              "padding": "VALID", "zp": 0, "scale": 0.01}
    m = build(OP, **params)
    data = Interpreter(m).runtime.op_data[0]
    assert (data.mode, data.acc.dtype if data.acc is not None else None) == (
        ("reference", None) if dtype is None else ("global", dtype))
    low = np.iinfo(np.int8 if kind == "INT8" else np.int16).min
    x = np.full(params["shape"], low, np.int8 if kind == "INT8" else np.int16)
    x.reshape(-1)[::3] = -low - 1
    assert compare_optimized(m, [x]).ok
    if side < 100:
        check_case(OP, case(4, **{k: v for k, v in params.items() if k != "scale"}))


def test_float32_general_path_bound():
    """The largest float32 general case: 129 x 1000 taps of -128 (|sum| just below 2^24)."""
    params = {"kind": "INT8", "shape": (1, 129, 1001, 1), "filter": (129, 1000), "stride": (1, 1),
              "padding": "VALID"}
    m = build(OP, **params)
    assert Interpreter(m).runtime.op_data[0].acc.dtype == np.float32
    x = np.full(params["shape"], -128, np.int8)
    x[0, 0, 0, 0] = 127
    assert compare_optimized(m, [x]).ok


def test_large_and_repeated_invokes():
    """A 2 x 2 stride-2 pool over 112 x 112 x 64, three inputs in a row (the zero border must stay zero)."""
    params = {"kind": "INT8", "shape": (1, 112, 112, 64), "filter": (3, 3), "stride": (2, 2), "padding": "SAME",
              "zp": -5}
    m = build(OP, **params)
    rng = np.random.default_rng(9)
    for _ in range(3):
        assert compare_optimized(m, [random_tensor(rng, params["shape"], "INT8")]).ok
