"""REDUCE_MAX against the TFLM wheel: int8 (input and output quantization must be identical) and float32 (NaN never
wins, -inf floors at -FLT_MAX, first zero keeps its sign), random shapes up to 5-D, axes with negative values and
duplicates, keep_dims; the planned scratch buffers (arena head); refusals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from microinterp import Interpreter
from microinterp.kernels.reduce_max import float_max
from microinterp.testing.tflm import compare_with_tflm, tflm_arena_head

from .shape_op_models import T, assert_refused, check, const, model, quant, reduce_cases


@given(reduce_cases("REDUCE_MAX", ["INT8", "FLOAT32"]))
def test_reduce_max_matches_tflm(case):
    data, seed = case
    check(data, np.random.default_rng(seed))


def test_float_special_values_match_tflm():
    x = np.array([[np.nan, 1.0, 2.0], [-np.inf, -np.inf, -np.inf], [-0.0, 0.0, -1.0], [0.0, -0.0, -3.0],
                  [np.nan, np.nan, np.nan], [-5.0, np.inf, np.nan]], dtype=np.float32)
    data = model("REDUCE_MAX", [T(x.shape, "FLOAT32"), const([1])], T((6,), "FLOAT32"), keep_dims=False)
    result = compare_with_tflm(data, [x])
    assert result.ok, str(result)
    out, ref = result.outputs[0], result.tflm_outputs[0]
    assert np.array_equal(out.view(np.uint32), ref.view(np.uint32))     # bit for bit, signed zeros included
    assert np.signbit(out[2]) and not np.signbit(out[3])
    expected = float_max(x)
    assert expected[1] == np.finfo(np.float32).min and expected[4] == np.finfo(np.float32).min


@pytest.mark.parametrize("type_name", ["INT8", "FLOAT32"])
def test_scratch_buffers_match_wheel_arena_head(type_name):
    data = model("REDUCE_MAX", [T((3, 9, 5, 7, 2), type_name, **quant(type_name, 0.1, 1)), const([0, -1, 2])],
                 T((1, 9, 1, 7, 1), type_name, **quant(type_name, 0.1, 1)), keep_dims=True)
    assert Interpreter(data).head_bytes == tflm_arena_head(data)


def test_refusals():
    x = T((2, 3), "INT8", **quant("INT8", 0.5, 3))
    assert_refused(model("REDUCE_MAX", [x, const([1])], T((2,), "INT8", **quant("INT8", 0.25, 3))),
                   tflm="invoke", match="scale")
    assert_refused(model("REDUCE_MAX", [x, const([1])], T((2,), "INT8", **quant("INT8", 0.5, 4))),
                   tflm="invoke", match="zero point")
    assert_refused(model("REDUCE_MAX", [T((2, 3), "INT16", **quant("INT16")), const([1])],
                         T((2,), "INT16", **quant("INT16"))), tflm="invoke", match="INT16")
