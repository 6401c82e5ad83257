"""FULLY_CONNECTED against the TFLM wheel: int8 (per-tensor / per-channel, int4 weights), 16x8 (int64, int32
or no bias), float32; batches > 1, keep_num_dims outputs, flattened 4-D inputs, optional bias, fused activations,
filter zero points (per-tensor), zero points at the extremes, multipliers > 1."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.errors import ModelError, PrepareError
from microinterp.kernels._qutil import unpack_int4
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.single_op import assert_matches_tflm, random_tensor
from microinterp.testing.tflm import tflm_arena_head

ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def pack_int4(values: np.ndarray) -> bytes:
    flat = np.asarray(values, dtype=np.int8).reshape(-1)
    if flat.size % 2:
        flat = np.append(flat, np.int8(0))
    return (((flat[0::2] & 0xF) | ((flat[1::2] & 0xF) << 4)).astype(np.uint8)).tobytes()


def build(rng: np.random.Generator, *, kind: str, in_shape: tuple, n: int, keep_num_dims: bool = False,
          weights: str = "INT8", per_channel: bool = False, bias: str | None = "auto", act: str = "NONE",
          zp_in: int = 0, zp_out: int = 0, zp_w: int = 0, out_scale_factor: float = 1.0,
          bias_scale_error: float = 0.0, bias_at_int32_ends: bool = False) -> bytes:
    """A one-op FULLY_CONNECTED model with input ``in_shape`` (the last dim is the accum depth, except for a
    4-D input, which is flattened)."""
    k = in_shape[-1] if len(in_shape) < 4 else int(np.prod(in_shape[1:]))
    batches = int(np.prod(in_shape)) // k
    out_shape = tuple(in_shape[:-1]) + (n,) if keep_num_dims and len(in_shape) < 4 else (batches, n)
    b = ModelBuilder()
    if kind == "FLOAT32":
        x = b.add_tensor("x", in_shape, "FLOAT32")
        y = b.add_tensor("y", out_shape, "FLOAT32")
        w = b.add_tensor("w", (n, k), "FLOAT32", data=rng.normal(size=(n, k)).astype(np.float32))
        ins = [x, w]
        if bias:
            ins.append(b.add_tensor("bias", (n,), "FLOAT32", data=rng.normal(size=n).astype(np.float32)))
    else:
        s_in = float(rng.uniform(0.005, 0.1))
        s_w = rng.uniform(0.002, 0.05, n) if per_channel else np.array([rng.uniform(0.002, 0.05)])
        w_lim = 8 if weights == "INT4" else 128
        spread = w_lim * k ** 0.5 * (128 if kind == "INT8" else 2048)
        s_out = float(s_in * s_w.mean() * spread / (128 if kind == "INT8" else 32768) * out_scale_factor)
        x = b.add_tensor("x", in_shape, kind, scale=s_in, zero_point=zp_in)
        y = b.add_tensor("y", out_shape, kind, scale=s_out, zero_point=zp_out)
        wv = rng.integers(-w_lim + 1, w_lim, (n, k)).astype(np.int8)
        data = pack_int4(wv) if weights == "INT4" else wv
        w = b.add_tensor("w", (n, k), weights, data=data, scale=s_w, zero_point=zp_w, axis=0)
        ins = [x, w]
        if bias:
            btype = {"INT8": "INT32", "INT16": "INT64"}[kind] if bias == "auto" else bias
            lim = 1 << (16 if btype == "INT32" else 22)
            bvals = rng.integers(-lim, lim, n)
            if bias_at_int32_ends:      # accumulators can wrap around int32
                bvals = np.where(np.arange(n) % 2, (1 << 31) - 1 - bvals % 1000, -(1 << 31) + bvals % 1000)
            ins.append(b.add_tensor("bias", (n,), btype, data=bvals,
                                    scale=s_in * s_w * (1 + bias_scale_error), zero_point=0))
    b.add_op("FULLY_CONNECTED", ins, [y], fused_activation_function=act, keep_num_dims=keep_num_dims)
    b.inputs, b.outputs = [x], [y]
    return b.build()


def _input(rng: np.random.Generator, kind: str, shape: tuple) -> np.ndarray:
    if kind == "FLOAT32":
        return rng.normal(size=shape).astype(np.float32)
    return random_tensor(rng, shape, kind)


@st.composite
def cases(draw) -> tuple[dict[str, Any], int]:
    kind = draw(st.sampled_from(["INT8", "INT8", "INT16", "FLOAT32"]))
    weights = draw(st.sampled_from(["INT8", "INT4"])) if kind == "INT8" else ("FLOAT32" if kind == "FLOAT32"
                                                                            else "INT8")
    per_channel = weights == "INT8" and kind != "FLOAT32" and draw(st.booleans())
    k = draw(st.integers(1, 40) | st.sampled_from([1, 200, 513]))
    rank = draw(st.integers(1, 4))
    lead = draw(st.lists(st.integers(1, 3), min_size=rank - 1, max_size=rank - 1))
    in_shape = tuple(lead) + (k,)
    if rank == 4:  # a feature map flattened by FC: [1, h, w, c] with accum = h*w*c
        in_shape = (1, *(draw(st.integers(1, 4)) for _ in range(3)))
    if kind == "INT8":
        zps = st.sampled_from([-128, 127, 0, -1]) | st.integers(-128, 127)
        bias = draw(st.sampled_from(["auto", None]))
    elif kind == "INT16":
        zps = st.sampled_from([0, 0, 5, -300])
        bias = draw(st.sampled_from(["auto", "INT32", None]))
    else:
        zps = st.just(0)
        bias = draw(st.sampled_from(["auto", None]))
    return {
        "kind": kind, "in_shape": in_shape, "n": draw(st.integers(1, 16)), "keep_num_dims": draw(st.booleans()),
        "weights": weights, "per_channel": per_channel, "bias": bias, "act": draw(st.sampled_from(ACTS)),
        "zp_in": draw(zps), "zp_out": draw(zps),
        "zp_w": draw(st.sampled_from([0, 0, 3, -2])) if kind != "FLOAT32" and not per_channel else 0,
        "out_scale_factor": draw(st.sampled_from([0.1, 1.0, 4.0, 1e-4])),
        "bias_scale_error": draw(st.sampled_from([0.0, 0.0, 1e-3])),
    }, draw(st.integers(0, 2**32 - 1))


def case(seed: int, **params: Any) -> tuple[dict[str, Any], int]:
    """One explicit case, in the form :func:`cases` draws (for ``@example``)."""
    return params, seed


@given(cases())
# 16x8 without a bias runs the int64 accumulator (single-rounding MBQM); int16 zero points ARE applied (wheel).
@example(case(0, kind="INT16", in_shape=(2, 300), n=5, bias=None, zp_in=5, zp_out=9))
@example(case(1, kind="INT16", in_shape=(3, 17), n=5, per_channel=True, bias="INT32", zp_in=-300, zp_out=5))
@example(case(2, kind="INT16", in_shape=(3, 17), n=5, bias="auto", zp_w=3))
@example(case(3, kind="INT8", in_shape=(3, 7), n=5, weights="INT4", zp_w=-2, zp_in=-128, zp_out=127))
@example(case(4, kind="FLOAT32", in_shape=(2, 3, 513), n=7, keep_num_dims=True))
def test_matches_tflm(case):
    params, seed = case
    rng = np.random.default_rng(seed)
    model = build(rng, **params)
    try:
        Interpreter(model)
    except PrepareError:  # a bias scale off by 1e-3 can exceed 0.02 output scales when s_out is tiny
        assert params.get("bias_scale_error") and _wheel_refuses(model, params["kind"], params["in_shape"])
        return
    for _ in range(2):
        assert_matches_tflm(model, [_input(rng, params["kind"], params["in_shape"])])


@pytest.mark.parametrize("kind,per_channel,edge_bias,zp_in,steps", [
    ("INT8", False, False, -128, True), ("INT8", True, False, 127, True), ("INT16", False, False, -300, False),
    ("INT16", True, False, 5, False),
    # biases near +-2^31: the int32 accumulator can wrap, the step function does not apply
    ("INT8", False, True, 0, False), ("INT8", True, True, -128, False)])
def test_accumulator_range_ends(kind, per_channel, edge_bias, zp_in, steps):
    """Inputs at the type's extremes drive every accumulator to the ends of the range Prepare derives (where the
    step-function requantization has its first and last thresholds); wrapping accumulators take the MBQM path."""
    rng = np.random.default_rng(7)
    in_shape = (4, 300)
    model = build(rng, kind=kind, in_shape=in_shape, n=6, per_channel=per_channel, bias_at_int32_ends=edge_bias,
                  zp_in=zp_in, zp_out=3, out_scale_factor=0.05, act="RELU" if per_channel else "NONE")
    interp = Interpreter(model, optimized=False)
    data = interp.runtime.op_data[0]
    assert (data.steps is not None) == steps
    assert data.wrap == edge_bias
    lo, hi = (-128, 127) if kind == "INT8" else (-32768, 32767)
    w = interp.model.main.tensors[interp.model.main.operators[0].inputs[1]].data.astype(np.int64)
    sign = np.where(w[0] >= 0, hi, lo)          # maximizes channel 0, minimizes it with -sign
    x = np.stack([np.full(300, lo), np.full(300, hi), sign, np.where(sign == hi, lo, hi)])
    assert_matches_tflm(model, [x.astype(np.int8 if kind == "INT8" else np.int16)])


def test_unpack_int4():
    values = np.array([-8, 7, -1, 0, 3, -5, 1], dtype=np.int8)
    packed = np.frombuffer(pack_int4(values), dtype=np.uint8)
    assert np.array_equal(unpack_int4(packed, np.empty(values.size, np.int8)), values)


def test_int4_scratch_gives_tflm_arena_head():
    """The int4 unpack buffer is a planned scratch request of prod(filter dims) bytes, as in TFLM."""
    model = build(np.random.default_rng(9), kind="INT8", in_shape=(2, 37), n=9, weights="INT4")
    assert Interpreter(model).head_bytes == tflm_arena_head(model)


def _wheel_refuses(model: bytes, kind: str, in_shape: tuple) -> bool:
    from tflite_micro import runtime

    try:
        wheel = runtime.Interpreter.from_bytes(model, arena_size=1 << 20)
        wheel.set_input(_input(np.random.default_rng(0), kind, in_shape), 0)
        wheel.invoke()
    except RuntimeError:
        return True
    return False


@pytest.mark.parametrize("params,match", [
    # per-channel int4 is not supported
    ({"kind": "INT8", "weights": "INT4", "per_channel": True}, "INT4"),
    # |s_in*s_w - s_bias| / s_out > 0.02
    ({"kind": "INT8", "bias_scale_error": 0.5, "out_scale_factor": 1e-3}, "bias scale"),
    ({"kind": "INT16", "weights": "INT4"}, "filter type"),
])
def test_refusals_match_the_wheel(params, match):
    model = build(np.random.default_rng(1), in_shape=(2, 8), n=3, **params)
    with pytest.raises(PrepareError, match=match):
        Interpreter(model)
    assert _wheel_refuses(model, params["kind"], (2, 8))


def test_per_channel_scale_count_must_match_the_filter():
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 4), "INT8", scale=0.1, zero_point=0)
    w = b.add_tensor("w", (3, 4), "INT8", data=np.ones((3, 4), np.int8), scale=[0.1, 0.2], zero_point=0)
    y = b.add_tensor("y", (1, 3), "INT8", scale=0.1, zero_point=0)
    b.add_op("FULLY_CONNECTED", [x, w], [y])
    b.inputs, b.outputs = [x], [y]
    model = b.build()
    with pytest.raises(ModelError, match="per-channel scales"):  # the loader already refuses it
        Interpreter(model)
    assert _wheel_refuses(model, "INT8", (1, 4))


def test_input_output_types_must_agree():
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 4), "INT8", scale=0.1, zero_point=0)
    w = b.add_tensor("w", (3, 4), "INT8", data=np.ones((3, 4), np.int8), scale=0.1, zero_point=0)
    y = b.add_tensor("y", (1, 3), "INT16", scale=0.1, zero_point=0)
    b.add_op("FULLY_CONNECTED", [x, w], [y])
    b.inputs, b.outputs = [x], [y]
    model = b.build()
    with pytest.raises(PrepareError, match="differs from output type"):
        Interpreter(model)
    assert _wheel_refuses(model, "INT8", (1, 4))


@pytest.mark.parametrize("b,k,n", [(1, 1, 1), (1, 700, 1), (3, 50, 1), (1, 33, 2), (2, 300, 7),
                                   (1, 2000, 600)])
def test_float_accumulation_is_sequential(b, k, n, monkeypatch):
    """sequential_dot_float32 equals the literal float32 loop (also across chunk borders and for b*n == 1)."""
    from microinterp.kernels import fully_connected_channels as fcm

    monkeypatch.setattr(fcm, "_FLOAT_CHUNK", 4096)
    rng = np.random.default_rng(k)
    x = (rng.normal(size=(b, k)) * 10 ** rng.uniform(-4, 4, (b, k))).astype(np.float32)
    w = (rng.normal(size=(k, n)) * 10 ** rng.uniform(-4, 4, (k, n))).astype(np.float32)
    bias = rng.normal(size=n).astype(np.float32)
    expected = np.zeros((b, n), np.float32)
    for kk in range(k):
        expected += x[:, kk:kk + 1] * w[kk]
    expected += bias
    got = fcm.sequential_dot_float32(x, w, bias, np.float32(-3e38), np.float32(3e38))
    assert np.array_equal(got, np.clip(expected, -3e38, 3e38))
    # NumPy's pairwise sum (reducing a contiguous k axis) would differ: the data can tell the two orders apart
    if k >= 300:
        pairwise = np.add.reduce(np.ascontiguousarray((x[:, :, None] * w[None]).transpose(0, 2, 1)), axis=2)
        assert not np.array_equal(pairwise + bias, expected)


@pytest.mark.parametrize("params,call", [
    ({"kind": "INT8", "in_shape": (1, 1), "n": 16, "act": "RELU"}, "lookup"),              # hello_world's first
    ({"kind": "INT8", "in_shape": (3, 1), "n": 5, "zp_in": -128, "zp_out": 127}, "lookups"),
    ({"kind": "INT8", "in_shape": (1, 1), "n": 4, "weights": "INT4"}, "partial"),          # refills the scratch
    ({"kind": "INT8", "in_shape": (1, 16), "n": 1, "zp_out": -128}, "scalar"),             # hello_world's last
    ({"kind": "INT8", "in_shape": (1, 16), "n": 16, "act": "RELU", "zp_out": -128}, "codes"),
    ({"kind": "INT8", "in_shape": (2, 40), "n": 9, "act": "RELU", "zp_out": 127}, "codes"),   # one code: 127
    ({"kind": "INT8", "in_shape": (2, 3, 40), "n": 9, "keep_num_dims": True, "zp_out": 5}, "codes"),
    ({"kind": "INT8", "in_shape": (1, 400), "n": 200, "zp_in": 127, "act": "RELU6"}, "codes"),  # BLAS product
    ({"kind": "INT8", "in_shape": (2, 16), "n": 7, "per_channel": True, "zp_out": -3}, "indexed"),
    ({"kind": "INT8", "in_shape": (1, 16), "n": 1, "per_channel": True}, "scalar"),
    ({"kind": "INT8", "in_shape": (2, 16), "n": 7, "bias_at_int32_ends": True}, "partial"),  # wraps: MBQM path
    ({"kind": "INT16", "in_shape": (2, 16), "n": 7}, "partial"),
    ({"kind": "FLOAT32", "in_shape": (2, 16), "n": 7}, "call"),                            # sequential sums
])
def test_bound_calls_over_invokes(params, call):
    """The interpreter's prebuilt call per op (table, scalar, int8-code and indexed step paths) on repeated invokes
    of one interpreter: each result equals the kernel's invoke on the same views, the first one and the extreme
    inputs (every accumulator at an end of its range) also equal the wheel."""
    rng = np.random.default_rng(11)
    model = build(rng, **params)
    shape, kind = params["in_shape"], params["kind"]
    for optimized in (False, True):
        interp = Interpreter(model, optimized=optimized)
        bound, _ = interp.runtime.calls[0]
        assert getattr(bound, "__name__", type(bound).__name__) == call
        op, data, kernel = interp.operators[0], interp.runtime.op_data[0], interp.preparation.kernels[0][0]
        inputs = [_input(rng, kind, shape) for _ in range(4)]
        if kind != "FLOAT32":
            dtype = np.int8 if kind == "INT8" else np.int16
            lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
            inputs += [np.full(shape, lo, dtype), np.full(shape, hi, dtype)]
            if params.get("weights") != "INT4":      # channel 0 at its maximum
                w0 = interp.model.main.tensors[op.inputs[1]].data.reshape(params["n"], -1)[0]
                inputs.append(np.broadcast_to(np.where(w0 >= 0, hi, lo)[:shape[-1]], shape).astype(dtype))
        for i, x in enumerate(inputs):
            interp.set_input(x)
            interp.invoke()
            got = interp.get_output()
            kernel.invoke(interp.runtime.ctx, op, data)
            assert np.array_equal(got.view(np.uint8), interp.get_output().view(np.uint8))
            if i == 0 or i >= 4:
                assert_matches_tflm(model, [x])
