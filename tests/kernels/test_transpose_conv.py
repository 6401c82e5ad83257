"""TRANSPOSE_CONV against the TFLM wheel: int8 (per-tensor, per-channel), 16x8 and float32."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.errors import PrepareError
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.single_op import assert_matches_tflm, random_tensor
from microinterp.testing.tflm import TflmRunner, tflm_arena_head

ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def build(rng: np.random.Generator, *, kind: str, n: int, h: int, w: int, c_in: int, c_out: int, kh: int,
          kw: int, stride: tuple[int, int], padding: str, act: str = "NONE", per_channel: bool = True,
          bias: str | None = "auto", zp_in: int = 0, zp_out: int = 0, out_delta: tuple[int, int] = (0, 0),
          out_scale_factor: float = 1.0) -> tuple[bytes, tuple[int, ...]]:
    """A one-op TRANSPOSE_CONV model; returns (model bytes, input shape)."""
    sh, sw = stride
    oh = h * sh if padding == "SAME" else (h - 1) * sh + kh
    ow = w * sw if padding == "SAME" else (w - 1) * sw + kw
    oh, ow = max(1, oh + out_delta[0]), max(1, ow + out_delta[1])
    b = ModelBuilder()
    shape_t = b.add_tensor("output_shape", (4,), "INT32", data=np.array([n, oh, ow, c_out], np.int32))
    fshape = (c_out, kh, kw, c_in)
    if kind == "FLOAT32":
        x = b.add_tensor("x", (n, h, w, c_in), "FLOAT32")
        y = b.add_tensor("y", (n, oh, ow, c_out), "FLOAT32")
        f = b.add_tensor("w", fshape, "FLOAT32", data=rng.normal(size=fshape).astype(np.float32))
        bias_t = (b.add_tensor("bias", (c_out,), "FLOAT32", data=rng.normal(size=c_out).astype(np.float32))
                  if bias else None)
    else:
        s_in = float(rng.uniform(0.005, 0.1))
        s_w = rng.uniform(0.002, 0.05, c_out) if per_channel else np.array([rng.uniform(0.002, 0.05)])
        # Output scale near the accumulator's spread so outputs are neither all saturated nor all zero.
        spread = 128 * (kh * kw * c_in) ** 0.5 * (128 if kind == "INT8" else 8)
        s_out = float(s_in * s_w.mean() * spread / (128 if kind == "INT8" else 32768) * out_scale_factor)
        x = b.add_tensor("x", (n, h, w, c_in), kind, scale=s_in, zero_point=zp_in)
        y = b.add_tensor("y", (n, oh, ow, c_out), kind, scale=s_out, zero_point=zp_out)
        f = b.add_tensor("w", fshape, "INT8", data=rng.integers(-127, 128, fshape), scale=s_w, zero_point=0,
                         axis=0)
        bias_t = None
        if bias:
            btype = {"INT8": "INT32", "INT16": "INT64"}[kind] if bias == "auto" else bias
            lim = {"INT32": 1 << 16, "INT64": 1 << 22, "INT16": 1 << 15}[btype]
            bias_t = b.add_tensor("bias", (c_out,), btype, data=rng.integers(-lim, lim, c_out),
                                  scale=s_in * np.broadcast_to(s_w, (c_out,)), zero_point=0)
    inputs = [shape_t, f, x] + ([bias_t] if bias_t is not None else [])
    b.add_op("TRANSPOSE_CONV", inputs, [y], padding=padding, stride_h=sh, stride_w=sw,
             fused_activation_function=act)
    b.inputs, b.outputs = [x], [y]
    return b.build(), (n, h, w, c_in)


@st.composite
def cases(draw):
    kind = draw(st.sampled_from(["INT8", "INT16", "FLOAT32"]))
    zp_in = draw(st.sampled_from([-128, 0, 127, 5])) if kind == "INT8" else 0
    zp_out = draw(st.sampled_from([-128, 0, 127, -7])) if kind == "INT8" else 0
    bias = draw(st.sampled_from(["auto", None] + (["INT16"] if kind == "INT16" else [])))
    return {
        "kind": kind, "n": draw(st.integers(1, 2)), "h": draw(st.integers(1, 5)),
        "w": draw(st.integers(1, 5)),
        "c_in": draw(st.integers(1, 4)), "c_out": draw(st.integers(1, 4)), "kh": draw(st.integers(1, 4)),
        "kw": draw(st.integers(1, 4)), "stride": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
        "padding": draw(st.sampled_from(["SAME", "VALID"])), "act": draw(st.sampled_from(ACTS)),
        "per_channel": draw(st.booleans()), "bias": bias, "zp_in": zp_in, "zp_out": zp_out,
        "out_delta": (draw(st.integers(-1, 1)), draw(st.integers(-1, 1))),
        "out_scale_factor": draw(st.sampled_from([0.1, 1.0, 4.0])),
    }, draw(st.integers(0, 2**32 - 1))


@given(cases())
def test_matches_tflm(case):
    params, seed = case
    rng = np.random.default_rng(seed)
    model, in_shape = build(rng, **params)
    for _ in range(2):
        assert_matches_tflm(model, [random_tensor(rng, in_shape, params["kind"])])


@pytest.mark.parametrize("kind", ["FLOAT32", "INT8", "INT16"])
@pytest.mark.parametrize("k,stride", [(9, 3), (8, 3), (11, 4), (10, 4)])
def test_valid_output_smaller_than_the_filter(kind, k, stride):
    """VALID with an output far smaller than the filter: TFLM's ComputeOutSize is negative, so the checked
    ComputePaddingHeightWidth leaves the padding at 0 (a local formula gave 1 for (9, 3) and (11, 4))."""
    rng = np.random.default_rng(k * 10 + stride)
    model, ishape = build(rng, kind=kind, n=1, h=1, w=1, c_in=1, c_out=2, kh=k, kw=k, stride=(stride, stride),
                          padding="VALID", out_delta=(-(k - 1), -(k - 2)), bias=None)
    assert_matches_tflm(model, [random_tensor(rng, ishape, kind)])


@pytest.mark.parametrize("kind,bias", [("INT8", "auto"), ("INT16", "auto"), ("INT16", "INT16"),
                                       ("FLOAT32", "auto"), ("INT8", None)])
def test_scratch_buffers_give_tflm_arena_head(kind, bias):
    rng = np.random.default_rng(7)
    model, _ = build(rng, kind=kind, n=1, h=3, w=4, c_in=2, c_out=3, kh=3, kw=3, stride=(2, 2),
                     padding="SAME", bias=bias)
    assert Interpreter(model).head_bytes == tflm_arena_head(model)


def _wheel_refuses(model: bytes, in_shape, kind) -> bool:
    try:
        runner = TflmRunner(model)
        runner.run([random_tensor(np.random.default_rng(0), in_shape, kind)])
    except RuntimeError:
        return True
    return False


def test_hybrid_float_input_int8_filter_is_refused():
    rng = np.random.default_rng(3)
    b = ModelBuilder()
    shape_t = b.add_tensor("output_shape", (4,), "INT32", data=np.array([1, 4, 4, 2], np.int32))
    f = b.add_tensor("w", (2, 2, 2, 1), "INT8", data=rng.integers(-127, 128, (2, 2, 2, 1)), scale=0.1,
                     zero_point=0)
    x = b.add_tensor("x", (1, 2, 2, 1), "FLOAT32")
    y = b.add_tensor("y", (1, 4, 4, 2), "FLOAT32")
    b.add_op("TRANSPOSE_CONV", [shape_t, f, x], [y], padding="SAME", stride_h=2, stride_w=2)
    b.inputs, b.outputs = [x], [y]
    model = b.build()
    with pytest.raises(PrepareError, match="hybrid"):
        Interpreter(model)
    assert _wheel_refuses(model, (1, 2, 2, 1), "FLOAT32")


def test_output_type_must_match_input_type():
    rng = np.random.default_rng(4)
    b = ModelBuilder()
    shape_t = b.add_tensor("output_shape", (4,), "INT32", data=np.array([1, 4, 4, 2], np.int32))
    f = b.add_tensor("w", (2, 2, 2, 1), "INT8", data=rng.integers(-127, 128, (2, 2, 2, 1)), scale=0.1,
                     zero_point=0)
    x = b.add_tensor("x", (1, 2, 2, 1), "INT8", scale=0.1, zero_point=0)
    y = b.add_tensor("y", (1, 4, 4, 2), "INT16", scale=0.1, zero_point=0)
    b.add_op("TRANSPOSE_CONV", [shape_t, f, x], [y], padding="SAME", stride_h=2, stride_w=2)
    b.inputs, b.outputs = [x], [y]
    model = b.build()
    with pytest.raises(PrepareError, match="output type"):
        Interpreter(model)
    assert _wheel_refuses(model, (1, 2, 2, 1), "INT8")


def test_int32_bias_with_int16_input_is_refused():
    # TFLM reinterprets an int32 bias as int64 here (reads past the buffer); we refuse it instead.
    model, _ = build(np.random.default_rng(5), kind="INT16", n=1, h=2, w=2, c_in=1, c_out=2, kh=2, kw=2,
                     stride=(1, 1), padding="SAME", bias="INT32")
    with pytest.raises(PrepareError, match="bias type"):
        Interpreter(model)


def test_output_shape_tensor_may_be_a_graph_input():
    # TFLM ignores input 0 at run time; it is then just another planned tensor.
    rng = np.random.default_rng(6)
    b = ModelBuilder()
    shape_t = b.add_tensor("output_shape", (4,), "INT32")
    f = b.add_tensor("w", (2, 3, 3, 2), "INT8", data=rng.integers(-127, 128, (2, 3, 3, 2)), scale=[0.1, 0.2],
                     zero_point=0)
    x = b.add_tensor("x", (1, 2, 2, 2), "INT8", scale=0.05, zero_point=0)
    y = b.add_tensor("y", (1, 4, 4, 2), "INT8", scale=0.5, zero_point=0)
    b.add_op("TRANSPOSE_CONV", [shape_t, f, x], [y], padding="SAME", stride_h=2, stride_w=2)
    b.inputs, b.outputs = [shape_t, x], [y]
    model = b.build()
    assert_matches_tflm(model, [np.array([1, 4, 4, 2], np.int32), random_tensor(rng, (1, 2, 2, 2))])
    assert Interpreter(model).head_bytes == tflm_arena_head(model)
