"""UNIDIRECTIONAL_SEQUENCE_LSTM against the TFLM wheel: int8x8->16, 16x8->16 and float32, several invokes in a
row without reset (hidden and cell states are variables), plus the zoo model trained_lstm_int8."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.errors import PrepareError
from microinterp.kernels import lstm_eval
from microinterp.kernels.unidirectional_sequence_lstm import CELL, HIDDEN
from microinterp.quant import mbqm, quantize_multiplier
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.single_op import random_tensor
from microinterp.testing.tflm import TflmRunner, compare_with_tflm, tflm_arena_head

from ..conftest import zoo_model


def build(rng: np.random.Generator, *, kind: str = "INT8", batch: int = 1, steps: int = 3, n_in: int = 4,
          n_state: int = 3, time_major: bool = False, cell_power: int = -12, cell_scale: float | None = None,
          cell_clip: float = 0.0, zp_in: int = 0, zp_h: int = 0, w_zp: int = 0, w_factor: float = 1.0,
          intermediates: bool = True, per_channel: bool = False, act: str = "TANH",
          omit: tuple[int, ...] = (),
          cell_type: str | None = None, variable_states: bool = True) -> tuple[bytes, tuple[int, ...]]:
    """A one-op LSTM model laid out as the TF converter writes it (24 inputs, 5 intermediates for int8/int16).

    Weights get scales that put the gate pre-activations around ±4 for typical inputs (``w_factor`` scales
    that), biases around ±2, so sigmoid/tanh work in their interesting range instead of saturating.
    """
    b = ModelBuilder()
    xshape = (steps, batch, n_in) if time_major else (batch, steps, n_in)
    yshape = (*xshape[:2], n_state)
    shapes = {k: (n_state, n_in) if k <= 4 else (n_state, n_state) for k in range(1, 9)}
    inter = []
    if kind == "FLOAT32":
        x = b.add_tensor("input", xshape, "FLOAT32")
        ws = [b.add_tensor(f"w{k}", shapes[k], "FLOAT32", data=rng.normal(size=shapes[k]) * w_factor)
              for k in range(1, 9)]
        bs = [b.add_tensor(f"b{k}", (n_state,), "FLOAT32", data=rng.normal(size=n_state))
              for k in range(12, 16)]
        h = b.add_tensor("hidden", (batch, n_state), "FLOAT32", is_variable=variable_states)
        c = b.add_tensor("cell", (batch, n_state), cell_type or "FLOAT32", is_variable=variable_states)
        y = b.add_tensor("output", yshape, "FLOAT32")
    else:
        qmax = 127 if kind == "INT8" else 32767
        s_in = float(rng.uniform(0.004, 0.05) if kind == "INT8" else rng.uniform(3e-5, 3e-4))
        s_h = float(rng.uniform(0.004, 0.02) if kind == "INT8" else rng.uniform(2e-5, 1e-4))
        x = b.add_tensor("input", xshape, kind, scale=s_in, zero_point=zp_in)
        ws, w_scales = [], []
        for k in range(1, 9):
            src = s_in if k <= 4 else s_h
            s_w = 8.0 / (qmax * src * 127 * shapes[k][1] ** 0.5) * w_factor * float(rng.uniform(0.5, 2.0))
            w_scales.append(s_w)
            scale = s_w * rng.uniform(0.5, 2, n_state) if per_channel else s_w
            ws.append(b.add_tensor(f"w{k}", shapes[k], "INT8", data=rng.integers(-127, 128, shapes[k]),
                                   scale=scale, zero_point=w_zp))
        bias_type = "INT32" if kind == "INT8" else "INT64"
        bs = []
        for k in range(12, 16):
            bias_scale = s_in * w_scales[k - 12]
            lim = int(2.0 / bias_scale)
            bs.append(b.add_tensor(f"b{k}", (n_state,), bias_type, data=rng.integers(-lim, lim, n_state),
                                   scale=bias_scale, zero_point=0))
        h = b.add_tensor("hidden", (batch, n_state), kind, scale=s_h, zero_point=zp_h,
                         is_variable=variable_states)
        c = b.add_tensor("cell", (batch, n_state), cell_type or "INT16",
                         scale=cell_scale if cell_scale is not None else 2.0 ** cell_power, zero_point=0,
                         is_variable=variable_states)
        y = b.add_tensor("output", yshape, kind, scale=s_h, zero_point=zp_h)
        if intermediates:
            for gate in ("input", "forget", "cell", "output"):
                inter.append(b.add_tensor(f"input_to_{gate}_intermediate", (0,), "FLOAT32"))
            inter.append(b.add_tensor("effective_hidden_scale_intermediate", (0,), kind, scale=s_h,
                                      zero_point=0))
    inputs = [x, *ws, -1, -1, -1, *bs, -1, -1, h, c, -1, -1, -1, -1]
    for k in omit:
        inputs[k] = -1
    b.add_op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [y], intermediates=inter, fused_activation_function=act,
             cell_clip=cell_clip, proj_clip=0.0, time_major=time_major)
    b.inputs, b.outputs = [x], [y]
    return b.build(), xshape


def assert_sequence_matches(model, inputs: list[np.ndarray]) -> None:
    """Invoke microinterp (reference kernels, and optimized kernels) and the wheel on each input in turn, without
    reset; every invoke must match, op by op, and so must the hidden and cell states it leaves (variable tensors:
    the next invoke starts from them)."""
    for optimized in (False, True):
        mi = Interpreter(model, preserve_all_tensors=True, optimized=optimized)
        ref = TflmRunner(model)
        op = mi.runtime.model.main.operators[0]
        states = [ti for ti in (op.inputs[HIDDEN], op.inputs[CELL]) if mi.runtime.model.main.tensors[ti].is_variable]
        for step, x in enumerate(inputs):
            result = compare_with_tflm(model, [x], interpreter=mi, tflm=ref)
            kernels = "optimized" if optimized else "reference"
            assert result.ok, f"invoke {step} ({kernels} kernels): {result}"
            for ti in states:
                got, want = mi.runtime.read_tensor(ti), ref.tensor(ti)
                assert got.tobytes() == want.tobytes(), f"invoke {step} ({kernels} kernels): state tensor {ti}"


@st.composite
def cases(draw):
    kind = draw(st.sampled_from(["INT8", "INT16", "FLOAT32"]))
    quant = kind != "FLOAT32"
    zps = [-128, 0, 127, 11] if kind == "INT8" else [0, -3000, 2500]
    return {
        "kind": kind, "batch": draw(st.integers(1, 3)), "steps": draw(st.integers(1, 5)),
        "n_in": draw(st.integers(1, 6)), "n_state": draw(st.integers(1, 6)),
        "time_major": draw(st.booleans()),
        "cell_power": draw(st.integers(-15, -9)),
        "cell_scale": draw(st.sampled_from([None, None, 3e-4])) if quant else None,
        "cell_clip": draw(st.sampled_from([0.0, 0.0, 0.5, 3.0])),
        "zp_in": draw(st.sampled_from(zps)) if quant else 0,
        "zp_h": draw(st.sampled_from(zps)) if quant else 0,
        "w_factor": draw(st.sampled_from([0.2, 1.0, 4.0])), "intermediates": draw(st.booleans()),
    }, draw(st.integers(0, 2**32 - 1))


@given(cases())
@example(({"kind": "INT16", "zp_in": 0, "zp_h": 3000, "steps": 1}, 0))    # 16x8 FC subtracts the input zp
@example(({"kind": "INT8", "w_zp": 5, "batch": 2, "steps": 4}, 0))        # weight zero points are applied
@example(({"kind": "INT8", "act": "RELU", "batch": 2}, 0))               # non-TANH cell gate stays raw
@example(({"kind": "FLOAT32", "act": "NONE"}, 0))
@example(({"kind": "FLOAT32", "cell_clip": 0.5, "batch": 2, "steps": 4, "w_factor": 4.0}, 3))   # the cell clip
def test_matches_tflm_over_several_invokes(case):
    params, seed = case
    rng = np.random.default_rng(seed)
    model, in_shape = build(rng, **params)
    kind = params.get("kind", "INT8")
    assert_sequence_matches(model, [random_tensor(rng, in_shape, kind) for _ in range(3)])


@given(cases().filter(lambda case: case[0]["kind"] == "INT8"))
@example(({"kind": "INT8", "batch": 2, "time_major": True, "cell_clip": 0.5}, 1))
@example(({"kind": "INT8", "zp_h": -128, "act": "RELU"}, 2))
def test_literal_requantization_paths_match_tflm(case):
    """The integer step's other forms: the recurrent FC's MBQM computed instead of looked up (accumulator ranges
    too wide for the table), the int8 hidden state's MBQM instead of its step function (as when it could wrap) and
    the cell products' Requantizer instead of their fold (as for a left shift)."""
    params, seed = case
    rng = np.random.default_rng(seed)
    model, in_shape = build(rng, **params)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lstm_eval, "_MAX_REC_TABLE", 0)
        mp.setattr(lstm_eval, "requantization_steps", lambda *args, **kwargs: None)
        mp.setattr(lstm_eval, "fold_product_requantization", lambda *args, **kwargs: None)
        step = Interpreter(model, optimized=False).runtime.op_data[0].step
        assert step.rec_table is None and step.hidden_steps is None and step.cell_fold is None
        assert_sequence_matches(model, [random_tensor(rng, in_shape, "INT8") for _ in range(3)])


def test_default_integer_step_uses_its_tables():
    for kind in ("INT8", "INT16"):
        model, _ = build(np.random.default_rng(5), kind=kind, n_state=7)
        step = Interpreter(model, optimized=False).runtime.op_data[0].step
        assert step.cell_fold is not None
        assert (step.rec_table is not None and step.hidden_steps is not None) == (kind == "INT8")


@pytest.mark.parametrize("real", [2.0 ** -15, 2.0 ** -18, 0.3 * 2.0 ** -20, 0.77, 0.999, 2.0 ** -31 * 1.3, 0.0])
def test_folded_product_requantization_equals_mbqm(real):
    """Every sigmoid output a in [0, 32767] times factors b over the int16 range (all of them near 0 and the ends):
    ``(a (b M) + R) >> (31 + e)`` equals quant's MBQM of ``a*b`` (exponent 0 and multiplier 0 included)."""
    m, shift = quantize_multiplier(real)
    b = np.unique(np.concatenate([np.arange(-200, 201), np.arange(-32768, -32700), np.arange(32700, 32768),
                                  np.random.default_rng(1).integers(-32768, 32768, 100)]))
    scaled, rounding, total_shift = lstm_eval.fold_product_requantization(b, m, shift)
    a = np.arange(32768, dtype=np.int64)[:, None]
    for part in np.array_split(np.arange(len(b)), 16):         # ~1M products at a time
        want = mbqm(a * b[part], m, shift)
        np.testing.assert_array_equal((a * scaled[part] + rounding[part]) >> total_shift, want)


def test_fold_refuses_what_its_proof_does_not_cover():
    assert lstm_eval.fold_product_requantization(np.arange(3), 1 << 30, 1) is None      # left shift
    assert lstm_eval.fold_product_requantization(np.arange(3), 1 << 30, -32) is None    # exponent above 31
    assert lstm_eval.fold_product_requantization(np.arange(3), 1 << 30, -31) is not None


@pytest.mark.parametrize("kind", ["INT8", "INT16", "FLOAT32"])
def test_scratch_buffers_give_tflm_arena_head(kind):
    model, _ = build(np.random.default_rng(1), kind=kind, batch=3, steps=2, n_in=5, n_state=7)
    assert Interpreter(model).head_bytes == tflm_arena_head(model)


def test_zoo_trained_lstm_matches_tflm_and_keeps_state():
    path = zoo_model("trained_lstm_int8.tflite")
    rng = np.random.default_rng(0)
    # Two invokes without reset in each of two fresh interpreter pairs, plus a longer run.
    assert_sequence_matches(path, [rng.integers(-128, 128, (1, 28, 28)).astype(np.int8) for _ in range(2)])
    assert_sequence_matches(path, [rng.integers(-128, 128, (1, 28, 28)).astype(np.int8) for _ in range(8)])


def test_zoo_trained_lstm_arena_head():
    path = zoo_model("trained_lstm_int8.tflite")
    head = Interpreter(path).head_bytes
    assert head == tflm_arena_head(path) == 1536


def test_reset_restores_both_states():
    rng = np.random.default_rng(2)
    model, in_shape = build(rng, zp_h=-20, batch=2, steps=3)
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


@pytest.mark.parametrize("kind", ["INT8", "INT16", "FLOAT32"])
@pytest.mark.parametrize("time_major", [False, True])
def test_invoke_without_the_bound_call_matches(monkeypatch, kind, time_major):
    """The out-of-core pager calls ``invoke`` (not the bound call): the same results, over several invokes (batch 2:
    a batch-major input is not contiguous as [T, B, I], so the bound call must read it anew every time)."""
    from microinterp.kernels import unidirectional_sequence_lstm as lstm
    rng = np.random.default_rng(11)
    model, in_shape = build(rng, kind=kind, batch=2, steps=3, time_major=time_major)
    xs = [random_tensor(rng, in_shape, kind) for _ in range(3)]
    bound = Interpreter(model, optimized=False)
    monkeypatch.setattr(lstm.UnidirectionalSequenceLstm, "bind", lambda self, ctx, op, data: None)
    unbound = Interpreter(model, optimized=False)
    for x in xs:
        for mi in (bound, unbound):
            mi.set_input(x)
            mi.invoke()
        np.testing.assert_array_equal(bound.get_output(), unbound.get_output())
    assert_sequence_matches(model, xs)


def _wheel_refuses(model: bytes) -> bool:
    try:
        TflmRunner(model)
    except RuntimeError:
        return True
    return False


@pytest.mark.parametrize("params,match", [
    ({"omit": (1, 5)}, "weight tensors are required"),                  # CIFG
    ({"variable_states": False}, "variable"),
    ({"cell_type": "INT8"}, "cell state type"),
    ({"kind": "INT16", "cell_type": "INT8"}, "cell state type"),
])
def test_invalid_models_are_refused_like_tflm(params, match):
    model, _ = build(np.random.default_rng(3), **params)
    with pytest.raises(PrepareError, match=match):
        Interpreter(model)
    assert _wheel_refuses(model)


def test_per_channel_weights_are_refused():
    # TFLM's gate FCs keep only a per-tensor multiplier; the wheel runs but computes garbage.
    model, _ = build(np.random.default_rng(4), per_channel=True)
    with pytest.raises(PrepareError, match="per-channel"):
        Interpreter(model)


@pytest.mark.parametrize("seed", range(16))
def test_float_nan_payloads_and_infinities_match_the_wheel_bit_for_bit(seed):
    """Float LSTM over three invokes (the state carries over) with NaNs of many payloads and signs and infinities in
    the input, or weights large enough to overflow: the input FC keeps the bias's NaN (reference FullyConnected),
    AddElementWise the first operand's, Mul the second's -- every output bit as the wheel's."""
    rng = np.random.default_rng(seed)
    model, xshape = build(rng, kind="FLOAT32", steps=int(rng.integers(1, 6)), n_in=int(rng.integers(1, 6)),
                          n_state=int(rng.integers(1, 6)), batch=int(rng.integers(1, 3)), time_major=bool(seed % 2),
                          w_factor=1e20 if seed % 4 == 3 else 1.0)
    x = (rng.normal(size=xshape) * 10).astype(np.float32)
    bits = x.view(np.uint32).reshape(-1)
    pick = rng.random(bits.size)
    nan = (0x7FC00000 | rng.integers(1, 1 << 20, bits.size) | (rng.integers(0, 2, bits.size) << 31)).astype(np.uint32)
    inf = (0x7F800000 | (rng.integers(0, 2, bits.size) << 31)).astype(np.uint32)
    if seed % 3:
        bits[...] = np.where(pick < 0.15, nan, np.where(pick < 0.25, inf, bits))
    mine, wheel = Interpreter(model), TflmRunner(model, preserve_all=False)
    for _ in range(3):
        mine.set_input(x, 0)
        mine.invoke()
        wheel.run([x])
        assert np.array_equal(mine.get_output(0).view(np.uint32), wheel.output(0).view(np.uint32))


@pytest.mark.parametrize("h0", [0.0, 0.9])
def test_float_fast_path_keeps_the_recurrent_clamp_where_sums_can_overflow(h0):
    """Recurrent weights near -FLT_MAX against gate inputs at +FLT_MAX: the clamped recurrent FC (-FLT_MAX) cancels
    the input (0) where an unclamped -inf would win. The finite fast path (which leaves the clamp out only for sums
    bounded far below FLT_MAX) against the step-by-step path on every output bit, with a zero and a large state."""
    from types import SimpleNamespace

    from microinterp.kernels.lstm_eval import FloatStep

    s, steps = 2, 4
    data = SimpleNamespace(state=s, cell_clip=0.0, cell_gate_tanh=True)
    w_rec = np.full((4 * s, s), -3e38, np.float32)
    step = FloatStep(data, np.zeros((4 * s, 1), np.float32), w_rec, np.zeros(4 * s, np.float32))
    gates_in = np.full((steps, 1, 4 * s), np.finfo(np.float32).max, np.float32)
    h, c = np.full((1, s), h0, np.float32), np.zeros((1, s), np.float32)
    fast = step.sequence(gates_in, h.copy(), c.copy())
    step.finite = False                 # the step-by-step path, every operation as TFLM's loop
    slow = step.sequence(gates_in, h.copy(), c.copy())
    for got, want in zip(fast, slow):
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))

