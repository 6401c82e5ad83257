"""SVDF against the TFLM wheel: int8 with int8 or int16 state, and float32; several invokes in a row."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.errors import PrepareError
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.single_op import random_tensor
from microinterp.testing.tflm import TflmRunner, compare_with_tflm, tflm_arena_head

FLOAT_ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1", "TANH", "SIGN_BIT"]


def build(rng: np.random.Generator, *, kind: str = "INT8", state_type: str = "INT8", batch: int = 1,
          input_size: int = 4, units: int = 2, rank: int = 1, memory: int = 3, act: str = "NONE",
          zp_in: int = 0, zp_state: int = 0, zp_out: int = 0, state_factor: float = 1.0,
          out_factor: float = 1.0, bias: bool = True, state_variable: bool = True,
          bias_scale_error: float = 0.0, time_weights: int | None = None,
          feature_weights: int | None = None) -> tuple[bytes, tuple[int, int]]:
    filters = units * rank
    b = ModelBuilder()
    if kind == "FLOAT32":
        x = b.add_tensor("x", (batch, input_size), "FLOAT32")
        wf = b.add_tensor("wf", (filters, input_size), "FLOAT32", data=rng.normal(size=(filters, input_size)))
        wt = b.add_tensor("wt", (filters, memory), "FLOAT32", data=rng.normal(size=(filters, memory)))
        bi = b.add_tensor("bias", (units,), "FLOAT32", data=rng.normal(size=units))
        s = b.add_tensor("state", (batch, memory * filters), "FLOAT32", is_variable=state_variable)
        y = b.add_tensor("y", (batch, units), "FLOAT32")
    else:
        smax = 127 if state_type == "INT8" else 32767
        s_in, s_wf = float(rng.uniform(0.01, 0.1)), float(rng.uniform(0.002, 0.02))
        s_state = s_in * s_wf * 128 * 64 * input_size ** 0.5 / smax * state_factor
        s_wt = float(rng.uniform(0.002, 0.02)) if state_type == "INT8" else float(rng.uniform(1e-5, 1e-4))
        wt_lim = 128 if state_type == "INT8" else 32768
        s_out = s_state * s_wt * smax * (wt_lim / 2) * (memory * rank) ** 0.5 / 128 * out_factor
        s_bias = float(np.float32(s_state)) * float(np.float32(s_wt)) + bias_scale_error
        x = b.add_tensor("x", (batch, input_size), "INT8", scale=s_in, zero_point=zp_in)
        wf_data = rng.integers(-127, 128, (filters, input_size)) if feature_weights is None else \
            np.full((filters, input_size), feature_weights)
        wf = b.add_tensor("wf", (filters, input_size), "INT8", data=wf_data, scale=s_wf, zero_point=0)
        wt_data = rng.integers(-wt_lim + 1, wt_lim, (filters, memory)) if time_weights is None else \
            np.full((filters, memory), time_weights)
        wt = b.add_tensor("wt", (filters, memory), state_type, data=wt_data, scale=s_wt, zero_point=0)
        bi = b.add_tensor("bias", (units,), "INT32", data=rng.integers(-(1 << 18), 1 << 18, units),
                          scale=s_bias, zero_point=0)
        s = b.add_tensor("state", (batch, memory * filters), state_type, scale=s_state, zero_point=zp_state,
                         is_variable=state_variable)
        y = b.add_tensor("y", (batch, units), "INT8", scale=s_out, zero_point=zp_out)
    b.add_op("SVDF", [x, wf, wt, bi if bias else -1, s], [y], rank=rank, fused_activation_function=act)
    b.inputs, b.outputs = [x], [y]
    return b.build(), (batch, input_size)


def assert_sequence_matches(model: bytes, inputs: list[np.ndarray]) -> None:
    """Invoke both interpreters on each input in turn without reset; every step must match."""
    mi = Interpreter(model, preserve_all_tensors=True)
    ref = TflmRunner(model)
    for step, x in enumerate(inputs):
        result = compare_with_tflm(model, [x], interpreter=mi, tflm=ref)
        assert result.ok, f"invoke {step}: {result}"


@st.composite
def cases(draw):
    kind = draw(st.sampled_from(["INT8", "FLOAT32"]))
    state_type = draw(st.sampled_from(["INT8", "INT16"])) if kind == "INT8" else "FLOAT32"
    quant = kind == "INT8"
    return {
        "kind": kind, "state_type": state_type, "batch": draw(st.integers(1, 3)),
        "input_size": draw(st.integers(1, 8)),
        "units": draw(st.integers(1, 4)), "rank": draw(st.integers(1, 3)), "memory": draw(st.integers(1, 6)),
        "act": draw(st.sampled_from(FLOAT_ACTS if not quant else ["NONE", "RELU"])),
        "zp_in": draw(st.sampled_from([-128, 0, 127, 9])) if quant else 0,
        "zp_state": draw(st.sampled_from([-128, 0, 127, -20])) if state_type == "INT8" else 0,
        "zp_out": draw(st.sampled_from([-128, 0, 127, 3])) if quant else 0,
        "state_factor": draw(st.sampled_from([0.05, 1.0, 8.0])),
        "out_factor": draw(st.sampled_from([0.1, 1.0, 10.0])),
    }, draw(st.integers(0, 2**32 - 1))


@given(cases())
@example(({"kind": "INT8", "state_type": "INT8", "zp_state": 100, "state_factor": 0.05}, 1))  # state zp wraps
def test_matches_tflm_over_several_invokes(case):
    params, seed = case
    rng = np.random.default_rng(seed)
    model, in_shape = build(rng, **params)
    assert_sequence_matches(model, [random_tensor(rng, in_shape, params["kind"]) for _ in range(4)])


@pytest.mark.parametrize("sign", [1, -1])
def test_int16_time_sums_that_wrap_int32_match_tflm(sign):
    """A saturated int16 state times time weights of +-32767 over 8 memory slots: the time sums pass 2^31 and
    wrap in int32 as the C code's accumulation does (the bound kernel's wrap)."""
    rng = np.random.default_rng(3)
    model, in_shape = build(rng, kind="INT8", state_type="INT16", input_size=6, units=3, memory=8,
                            state_factor=0.002, time_weights=sign * 32767)
    x = np.full(in_shape, 127 * sign, np.int8)
    assert_sequence_matches(model, [x] * 10)


@pytest.mark.parametrize("state_type,zp_state", [("INT8", -20), ("INT8", 100), ("INT16", 0)])
@pytest.mark.parametrize("rank", [1, 2])
def test_the_state_itself_matches_tflm(state_type, zp_state, rank):
    """The activation state after every invoke -- the newest slot's requantization, its zero point added after the
    clamp and its wrapping store (one searchsorted where the requantization is a step function) -- not only the
    output it feeds, which a small output scale can leave unchanged."""
    rng = np.random.default_rng(11)
    model, in_shape = build(rng, state_type=state_type, zp_state=zp_state, zp_in=9, rank=rank, units=3, memory=4,
                            input_size=6, batch=2)
    _assert_state_and_output_match(model, [random_tensor(rng, in_shape) for _ in range(4)])


def test_requantizations_that_are_no_step_functions_match_tflm():
    """A state scale so small that the first MBQM shifts the feature sums left past int32 (2^20), and an output
    scale so small that the second shifts the wrapping int32 time sums left: neither is a non-decreasing step
    function, and both run as MBQM, clamp and zero point on arrays -- the state and the output still the wheel's."""
    rng = np.random.default_rng(3)
    model, in_shape = build(rng, state_type="INT16", input_size=40, units=3, memory=8, state_factor=1e-6,
                            out_factor=1e-9, time_weights=32767, zp_out=3)
    _assert_state_and_output_match(model, [random_tensor(rng, in_shape) for _ in range(6)])


def test_feature_sums_that_wrap_int32_match_tflm():
    """70000 inputs at 127 against weights of 127 with an input zero point of -128: the feature sum passes 2^31
    and wraps in int32 before its MBQM, as the C code's accumulation does."""
    rng = np.random.default_rng(4)
    model, in_shape = build(rng, state_type="INT16", input_size=70000, units=1, memory=2, zp_in=-128,
                            feature_weights=127)
    _assert_state_and_output_match(model, [np.full(in_shape, 127, np.int8), random_tensor(rng, in_shape)] * 2)


def _assert_state_and_output_match(model: bytes, xs: list[np.ndarray]) -> None:
    """The activation state and the output after every invoke, against the wheel's."""
    mi, ref = Interpreter(model), TflmRunner(model, preserve_all=True)
    state = mi.runtime.model.main.operators[0].inputs[4]
    for x in xs:
        mi.set_input(x)
        mi.invoke()
        ref.run([x])
        np.testing.assert_array_equal(mi.runtime.read_tensor(state), ref.tensor(state))
        np.testing.assert_array_equal(mi.get_output(), ref.output(0))


@pytest.mark.parametrize("kind,state_type", [("INT8", "INT8"), ("INT8", "INT16"), ("FLOAT32", "FLOAT32")])
def test_scratch_buffers_give_tflm_arena_head(kind, state_type):
    model, _ = build(np.random.default_rng(2), kind=kind, state_type=state_type, batch=2, input_size=5,
                     units=3, rank=2, memory=4)
    assert Interpreter(model).head_bytes == tflm_arena_head(model)


def test_reset_restores_the_state():
    rng = np.random.default_rng(3)
    model, in_shape = build(rng, zp_state=-20, memory=4)
    xs = [random_tensor(rng, in_shape) for _ in range(3)]
    mi = Interpreter(model)
    first = []
    for x in xs:
        mi.set_input(x)
        mi.invoke()
        first.append(mi.get_output())
    mi.reset()
    for x, want in zip(xs, first):
        mi.set_input(x)
        mi.invoke()
        np.testing.assert_array_equal(mi.get_output(), want)


def _wheel_refuses(model: bytes) -> bool:
    try:
        TflmRunner(model)
    except RuntimeError:
        return True
    return False


def test_state_must_be_variable():
    model, _ = build(np.random.default_rng(4), state_variable=False)
    with pytest.raises(PrepareError, match="variable"):
        Interpreter(model)
    assert _wheel_refuses(model)


def test_bias_scale_must_match_state_times_time_weights():
    model, _ = build(np.random.default_rng(5), bias_scale_error=1e-3)
    with pytest.raises(PrepareError, match="bias scale"):
        Interpreter(model)
    assert _wheel_refuses(model)


@pytest.mark.parametrize("kind", ["INT8", "FLOAT32"])
def test_missing_bias_is_refused(kind):
    # TFLM dereferences the bias unconditionally (the wheel segfaults), so it is not run here.
    model, _ = build(np.random.default_rng(6), kind=kind, state_type=kind if kind == "FLOAT32" else "INT8",
                     bias=False)
    with pytest.raises(PrepareError, match="bias"):
        Interpreter(model)


@pytest.mark.parametrize("seed", range(12))
def test_float_nan_payloads_and_infinities_match_the_wheel_bit_for_bit(seed):
    """Float SVDF over four invokes (the state carries over) with NaNs of many payloads and signs and infinities in
    the input: the sequential sums keep the running total's NaN where two meet, as the wheel's loops do."""
    rng = np.random.default_rng(seed)
    model, xshape = build(rng, kind="FLOAT32", state_type="FLOAT32", input_size=int(rng.integers(1, 6)),
                          units=int(rng.integers(1, 4)), rank=int(rng.integers(1, 3)), memory=int(rng.integers(1, 5)),
                          batch=int(rng.integers(1, 3)), act=str(rng.choice(["NONE", "RELU", "TANH"])))
    mine, wheel = Interpreter(model), TflmRunner(model, preserve_all=False)
    for _ in range(4):
        x = rng.normal(size=xshape).astype(np.float32) * 10
        bits = x.view(np.uint32).reshape(-1)
        pick = rng.random(bits.size)
        nan = (0x7FC00000 | rng.integers(1, 1 << 20, bits.size) | (rng.integers(0, 2, bits.size) << 31))
        inf = 0x7F800000 | (rng.integers(0, 2, bits.size) << 31)
        bits[...] = np.where(pick < 0.2, nan, np.where(pick < 0.3, inf, bits)).astype(np.uint32)
        mine.set_input(x, 0)
        mine.invoke()
        wheel.run([x])
        assert np.array_equal(mine.get_output(0).view(np.uint32), wheel.output(0).view(np.uint32))
