"""Optimized int8 UNIDIRECTIONAL_SEQUENCE_LSTM (one table look-up for the gates and the cell state, the cell products'
and the hidden state's MBQM folded into tables, int32 rows where they fit, float32 FCs where exact, the input FC's
bias and offsets folded into its requantization) against the wheel and the reference kernel over several invokes
without reset (the fold itself is tested with the reference, which shares it)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given

from microinterp import Interpreter
from microinterp.kernels.optimized import unidirectional_sequence_lstm as fast
from microinterp.testing.single_op import random_tensor

from ...conftest import zoo_model
from ..test_unidirectional_sequence_lstm import assert_sequence_matches, build, cases


def _loop(model) -> fast.FastLoop | None:
    return Interpreter(model).runtime.op_data[0].loop


def test_fast_loop_runs_int8_and_leaves_the_rest_to_the_reference():
    rng = np.random.default_rng(0)
    assert _loop(build(rng, kind="INT8")[0]) is not None
    assert _loop(build(rng, kind="INT8", batch=3, time_major=True)[0]) is not None
    assert _loop(build(rng, kind="INT16")[0]) is None
    assert _loop(build(rng, kind="FLOAT32")[0]) is None
    assert _loop(zoo_model("trained_lstm_int8.tflite")) is not None


@given(cases().filter(lambda case: case[0]["kind"] == "INT8"))
@example(({"kind": "INT8", "batch": 3, "time_major": True, "cell_clip": 0.5, "zp_h": 127}, 3))
@example(({"kind": "INT8", "batch": 2, "steps": 5, "zp_in": -128, "zp_h": -128, "w_factor": 4.0}, 4))
@example(({"kind": "INT8", "cell_power": -15, "w_factor": 4.0, "steps": 5}, 5))   # equal exponents of i*g, f*c
@example(({"kind": "INT8", "cell_scale": 2.0 ** -17, "w_factor": 4.0, "steps": 5}, 5))   # saturating products
@example(({"kind": "INT8", "cell_scale": 3e-4, "cell_clip": 3.0, "act": "RELU"}, 6))
@example(({"kind": "INT8", "w_zp": -7, "n_state": 6, "n_in": 1}, 7))
def test_matches_tflm_and_reference(case):
    params, seed = case
    rng = np.random.default_rng(seed)
    model, in_shape = build(rng, **params)
    assert _loop(model) is not None
    assert_sequence_matches(model, [random_tensor(rng, in_shape, "INT8") for _ in range(3)])


def test_saturating_cell_products_take_the_clamp():
    model, in_shape = build(np.random.default_rng(5), cell_scale=2.0 ** -17, w_factor=4.0, steps=5)
    assert _loop(model).cell_saturates
    rng = np.random.default_rng(6)
    assert_sequence_matches(model, [random_tensor(rng, in_shape, "INT8") for _ in range(3)])


def test_input_fc_fallback_equals_the_folded_product():
    model, in_shape = build(np.random.default_rng(8), batch=2, steps=4, zp_in=-128)
    loop = _loop(model)
    assert loop.fc_weights is not None
    xs = np.swapaxes(random_tensor(np.random.default_rng(9), in_shape, "INT8"), 0, 1)
    folded = loop.input_fc(xs).copy()
    loop.fc_weights = None                      # as when the folded requantization could leave int64
    np.testing.assert_array_equal(loop.input_fc(xs), folded)


@pytest.mark.parametrize("time_major", [False, True])
def test_invoke_without_the_bound_call_matches(monkeypatch, time_major):
    """The out-of-core pager calls ``invoke`` (not the bound call): the same results."""
    monkeypatch.setattr(fast.FastUnidirectionalSequenceLstm, "bind", lambda self, ctx, op, data: None)
    rng = np.random.default_rng(10)
    model, in_shape = build(rng, batch=2, steps=3, time_major=time_major, zp_h=-20)
    assert _loop(model) is not None
    assert_sequence_matches(model, [random_tensor(rng, in_shape, "INT8") for _ in range(3)])


@pytest.mark.parametrize(("w_factor", "n_in", "seed", "clamps"), [
    (0.25, 4, 2, False),     # right shifts only, no int16 clamp
    (0.25, 4, 1, True),      # right shifts and a gate without rounding (its threshold stays INT64_MIN)
    (0.6, 4, 3, True),       # left shifts (folded into the multiplier) beside right shifts
    (0.4, 4, 2, True),       # no shift at all
])
def test_folded_input_fc_matches(w_factor, n_in, seed, clamps):
    model, in_shape = build(np.random.default_rng(seed), w_factor=w_factor, n_in=n_in, batch=2, steps=4)
    loop = _loop(model)
    assert loop.fc_weights is not None and (loop.fc_clamp is not None) == clamps and loop.fc_dtype is np.int32
    rng = np.random.default_rng(seed + 100)
    assert_sequence_matches(model, [random_tensor(rng, in_shape, "INT8") for _ in range(3)])


def test_int64_rows_and_float64_products_match(monkeypatch):
    """Where the cell rows do not shrink to int32 or the FCs are not exact in float32: the wider forms."""
    monkeypatch.setattr(fast, "_reduce", lambda values, rounding, shift: (values, rounding, shift))
    monkeypatch.setattr(fast, "_FLOAT32_EXACT", 0)
    monkeypatch.setattr(fast, "_INT32_LIMIT", 0)
    model, in_shape = build(np.random.default_rng(11), w_factor=0.25, batch=3, steps=4, zp_h=-128)
    loop = _loop(model)
    assert loop.dtype is np.int64 and loop.weights.dtype == np.float64 and loop.fc_weights.dtype == np.float64
    assert loop.fc_dtype is np.int64
    rng = np.random.default_rng(12)
    assert_sequence_matches(model, [random_tensor(rng, in_shape, "INT8") for _ in range(3)])


def test_the_zoo_lstm_takes_the_narrow_forms_in_a_batch():
    model = zoo_model("trained_lstm_int8.tflite")
    single = _loop(model)
    assert single.dtype is np.int64 and single.fc_dtype is np.int64       # one row: no casts between types
    it = Interpreter(model)
    it.invoke_batch(np.zeros((8, 28, 28), np.int8), 8)
    loop = it._batch_runner.runner(8, 0).runtime.op_data[0].loop
    assert loop.dtype is np.int32 and loop.weights.dtype == np.float32 and loop.fc_weights.dtype == np.float32
    assert loop.fc_half is not None and loop.fc_clamp is not None and loop.fc_dtype is np.int32
