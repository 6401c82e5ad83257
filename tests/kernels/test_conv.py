"""CONV_2D against the TFLM wheel: int8 (per-tensor/per-channel, int8 and packed int4 weights), 16x8 (int64 /
int32 / no bias), float32; groups, strides, dilations, paddings, output sizes off the formula; prepare refusals;
the int4 scratch buffer in the arena plan; row-band computation for out-of-core tiling."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.errors import PrepareError
from microinterp.kernels import conv
from microinterp.kernels.padding import compute_out_size, input_rows_for
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.single_op import assert_matches_tflm, random_tensor
from microinterp.testing.tflm import TflmRunner, tflm_arena_head

ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def pack_int4(values: np.ndarray) -> bytes:
    """Two int4 values per byte, element 2i in the low nibble (TFLM's dense int4 packing)."""
    nib = (np.asarray(values).reshape(-1).astype(np.int64) & 0xF).astype(np.uint8)
    if nib.size % 2:
        nib = np.append(nib, np.uint8(0))
    return (nib[0::2] | (nib[1::2] << 4)).astype(np.uint8).tobytes()


def build(rng: np.random.Generator, *, op: str = "CONV_2D", kind: str = "INT8", wtype: str | None = None,
          n: int = 1, h: int = 6, w: int = 5, c_in: int = 3, c_out: int = 4, groups: int = 1, mult: int = 1,
          kh: int = 3, kw: int = 3, stride: tuple[int, int] = (1, 1), dilation: tuple[int, int] = (1, 1),
          padding: str = "SAME", act: str = "NONE", per_channel: bool = True, bias: str | None = "auto",
          bias_lim: int | None = None, zp_in: int = 0, zp_out: int = 0, out_delta: tuple[int, int] = (0, 0),
          out_hw: tuple[int, int] | None = None, out_scale_factor: float = 1.0, **options) -> tuple[bytes, tuple]:
    """A one-op CONV_2D / DEPTHWISE_CONV_2D model; returns (model bytes, (input shape, input type))."""
    depthwise = op == "DEPTHWISE_CONV_2D"
    if depthwise:
        c_out = c_in * mult
        fshape, axis = (1, kh, kw, c_out), 3
    else:
        fshape, axis = (c_out, kh, kw, c_in // groups), 0
    wtype = wtype or ("FLOAT32" if kind == "FLOAT32" else "INT8")
    if out_hw is None:
        oh = compute_out_size(padding, h, kh, stride[0], dilation[0]) + out_delta[0]
        ow = compute_out_size(padding, w, kw, stride[1], dilation[1]) + out_delta[1]
        out_hw = (max(1, oh), max(1, ow))
    b = ModelBuilder()
    if kind == "FLOAT32":
        x = b.add_tensor("x", (n, h, w, c_in), "FLOAT32")
        y = b.add_tensor("y", (n, *out_hw, c_out), "FLOAT32")
        f = b.add_tensor("w", fshape, "FLOAT32", data=rng.uniform(-1, 1, fshape).astype(np.float32))
        bias_t = (b.add_tensor("bias", (c_out,), "FLOAT32", data=rng.uniform(-2, 2, c_out).astype(np.float32))
                  if bias else None)
    else:
        # Scales chosen so that outputs spread over the range (std ~ target quanta) without saturating, and so that
        # the fused activations clip somewhere inside it: s_out first, s_in from the accumulator's expected spread.
        s_w = rng.uniform(0.005, 0.02, c_out) if per_channel else np.array([rng.uniform(0.005, 0.02)])
        taps = kh * kw * (1 if depthwise else c_in // groups)
        acc_std = taps ** 0.5 * (4.6 if wtype == "INT4" else 73) * (100 if kind == "INT8" else 18900)
        target = 40 if kind == "INT8" else 8000
        s_out = float(rng.uniform(0.01, 0.1) if kind == "INT8" else rng.uniform(1e-4, 1e-3))
        s_in = float(target * s_out / (s_w.mean() * acc_std) / out_scale_factor)
        x = b.add_tensor("x", (n, h, w, c_in), kind, scale=s_in, zero_point=zp_in)
        y = b.add_tensor("y", (n, *out_hw, c_out), kind, scale=s_out, zero_point=zp_out)
        if wtype == "INT4":
            f = b.add_tensor("w", fshape, "INT4", data=pack_int4(rng.integers(-8, 8, fshape)), scale=s_w,
                             zero_point=0, axis=axis)
        else:
            f = b.add_tensor("w", fshape, "INT8", data=rng.integers(-127, 128, fshape), scale=s_w, zero_point=0,
                             axis=axis)
        bias_t = None
        if bias:
            btype = {"INT8": "INT32", "INT16": "INT64"}[kind] if bias == "auto" else bias
            lim = bias_lim or int(acc_std) + 1
            bias_t = b.add_tensor("bias", (c_out,), btype, data=rng.integers(-lim, lim, c_out),
                                  scale=s_in * np.broadcast_to(s_w, (c_out,)), zero_point=0)
    if depthwise:
        options.setdefault("depth_multiplier", mult)
    inputs = [x, f] + ([bias_t] if bias_t is not None else [])
    b.add_op(op, inputs, [y], padding=padding, stride_h=stride[0], stride_w=stride[1],
             dilation_h_factor=dilation[0], dilation_w_factor=dilation[1], fused_activation_function=act, **options)
    b.inputs, b.outputs = [x], [y]
    return b.build(), ((n, h, w, c_in), kind)


def run_case(params: dict, seed: int) -> None:
    rng = np.random.default_rng(seed)
    model, (shape, kind) = build(rng, **params)
    assert_matches_tflm(model, [random_tensor(rng, shape, kind)])


@st.composite
def cases(draw, op: str = "CONV_2D"):
    kind = draw(st.sampled_from(["INT8", "INT8", "INT16", "FLOAT32"]))
    wtype = draw(st.sampled_from(["INT8", "INT4"])) if kind == "INT8" else None
    zp = [-128, 127, 0, -3, 17, -90]
    bias_choices = {"INT8": ["auto", "auto", None], "INT16": ["auto", "INT32", None], "FLOAT32": ["auto", None]}
    params = {
        "op": op, "kind": kind, "wtype": wtype, "n": draw(st.integers(1, 2)), "h": draw(st.integers(1, 9)),
        "w": draw(st.integers(1, 9)), "kh": draw(st.integers(1, 4)), "kw": draw(st.integers(1, 4)),
        "stride": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
        "dilation": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
        "padding": draw(st.sampled_from(["SAME", "VALID"])), "act": draw(st.sampled_from(ACTS)),
        "per_channel": draw(st.booleans()), "bias": draw(st.sampled_from(bias_choices[kind])),
        "zp_in": draw(st.sampled_from(zp)) if kind == "INT8" else 0,
        "zp_out": draw(st.sampled_from(zp)) if kind == "INT8" else 0,
        "out_delta": (draw(st.sampled_from([0, 0, 0, -1, 1])), draw(st.sampled_from([0, 0, 0, -1, 1]))),
        "out_scale_factor": draw(st.sampled_from([1.0, 1.0, 1.0, 0.3, 3.0, 1.0, 1.0, 1e-4])),
    }
    if op == "CONV_2D":
        groups = draw(st.sampled_from([1, 1, 1, 2, 3]))
        params.update(groups=groups, c_in=groups * draw(st.integers(1, 5)), c_out=groups * draw(st.integers(1, 3)))
        if kind == "INT16" and params["bias"] is None:
            params["quantized_bias_type"] = draw(st.sampled_from([0, 2, 4]))  # FLOAT32 (unset), INT32, INT64
    else:
        params.update(c_in=draw(st.integers(1, 6)), mult=draw(st.sampled_from([1, 1, 2, 3])))
        if kind == "INT16" and params["bias"] == "INT32":
            params["bias"] = "auto"
    if kind == "INT8" and params["bias"] and draw(st.integers(0, 3)) == 0:
        params["bias_lim"] = 1 << 31   # int32 accumulator wrap-around
    return params, draw(st.integers(0, 2**32 - 1))


@given(cases())
@example(({"kind": "INT16", "bias": None}, 1))                              # int64 path when the bias is absent
@example(({"kind": "INT16", "bias": None, "quantized_bias_type": 2}, 1))    # ... unless options say INT32
@example(({"kind": "INT16", "bias": "INT32", "c_in": 64, "kh": 4, "kw": 4}, 3))   # int32 accumulator wraps
@example(({"wtype": "INT4", "per_channel": True, "c_out": 5}, 2))          # per-channel int4 accepted by the wheel
@example(({"out_hw": (9, 8)}, 4))                 # output larger than the formula: rows of skipped taps
@example(({"dilation": (0, 1), "out_hw": (6, 5)}, 5))   # dilation 0: checked padding stops, pads stay 0
@example(({"stride": (0, 2), "out_hw": (3, 3)}, 6))     # stride 0
@example(({"kh": 9, "h": 5, "padding": "VALID", "stride": (2, 1), "out_hw": (2, 3)}, 7))  # negative VALID size
@example(({"kind": "INT8", "out_scale_factor": 1e-5, "c_in": 1, "kh": 1, "kw": 1}, 8))   # left shift in MBQM
@example(({"kind": "FLOAT32", "c_in": 6, "c_out": 4, "groups": 2, "act": "RELU6"}, 9))
def test_conv_matches_tflm(case):
    run_case(*case)


def test_int4_scratch_is_planned_like_tflm():
    """The int4 unpack buffer (prod(filter dims) bytes) is a planned scratch buffer: arena heads agree."""
    rng = np.random.default_rng(0)
    model, _ = build(rng, wtype="INT4", h=4, w=4, c_in=8, c_out=40, kh=3, kw=3)
    assert Interpreter(model).head_bytes == tflm_arena_head(model)


def test_row_bands_match_full_tensor():
    """conv_rows on output row bands, each fed only its input rows (with halo), reproduces the full result."""
    rng = np.random.default_rng(1)
    model, (shape, kind) = build(rng, h=11, w=7, c_in=4, c_out=6, kh=3, kw=2, stride=(2, 1), dilation=(2, 1),
                                 padding="SAME", zp_in=5, zp_out=-3)
    x = random_tensor(rng, shape, kind)
    interp = Interpreter(model)
    interp.set_input(x)
    interp.invoke()
    full = interp.get_output()
    op = interp.operators[0]
    data = interp.runtime.op_data[0]
    w = interp.model.main.tensors[op.inputs[1]].data
    bias = interp.model.main.tensors[op.inputs[2]].data
    out = np.zeros_like(full)
    for y0 in range(0, full.shape[1], 2):
        y1 = min(y0 + 2, full.shape[1])
        lo, hi = input_rows_for(y0, y1, data.stride_h, data.dilation_h, w.shape[1], data.pad_h, shape[1])
        conv.conv_rows(data, x[:, lo:hi], w, bias, out[:, y0:y1], y0, x_row0=lo)
    np.testing.assert_array_equal(out, full)


# -- refusals ----------------------------------------------------------------------------------------------------------
def _custom(kind_x="INT8", kind_w="INT8", kind_y=None, w_quant=True, x_quant=True, w_scales=1, w_axis=0,
            bias=None, fshape=(4, 3, 3, 3)):
    b = ModelBuilder()
    q = {"scale": 0.05, "zero_point": 0}
    x = b.add_tensor("x", (1, 5, 5, 3), kind_x, **(q if x_quant and kind_x != "FLOAT32" else {}))
    y = b.add_tensor("y", (1, 5, 5, fshape[0]), kind_y or kind_x, **(q if kind_x != "FLOAT32" else {}))
    wq = {"scale": np.full(w_scales, 0.01), "zero_point": 0, "axis": w_axis} if w_quant else {}
    data = np.ones(fshape, np.float32 if kind_w == "FLOAT32" else np.int8)
    f = b.add_tensor("w", fshape, kind_w, data=data, **wq)
    ins = [x, f]
    if bias is not None:
        ins.append(b.add_tensor("b", (fshape[0],), bias, data=np.zeros(fshape[0]),
                                **({} if bias == "FLOAT32" else {"scale": 0.0005, "zero_point": 0})))
    b.add_op("CONV_2D", ins, [y], padding="SAME")
    b.inputs, b.outputs = [x], [y]
    return b.build()


REFUSED_BY_BOTH = {
    "input/output types differ": {"kind_y": "INT16"},
    "hybrid int8 input, float filter": {"kind_w": "FLOAT32", "w_quant": False},
    "hybrid float input, int8 filter": {"kind_x": "FLOAT32"},
    "int16 filter": {"kind_x": "INT16", "kind_w": "INT16"},
    "filter not quantized": {"w_quant": False},
    "input not quantized": {"x_quant": False},
    "filter scales along the wrong axis": {"w_scales": 3, "w_axis": 3},
}


@pytest.mark.parametrize("name", sorted(REFUSED_BY_BOTH))
def test_prepare_refusals_match_wheel(name):
    model = _custom(**REFUSED_BY_BOTH[name])
    with pytest.raises(PrepareError):
        Interpreter(model)
    with pytest.raises(RuntimeError):
        TflmRunner(model)


@pytest.mark.parametrize("params", [
    {"bias": "INT64"},                              # the wheel reads the int64 buffer as int32 (garbage)
    {"kind_x": "INT16", "bias": "INT16"},              # Eval: "Bias type not supported"
    {"fshape": (4, 3, 3, 2)},                       # input depth not a multiple of the filter depth
])
def test_prepare_refusals_where_tflm_is_undefined(params):
    with pytest.raises(PrepareError):
        Interpreter(_custom(**params))


def _tiny_scale_model(out_scale: float, act: str) -> bytes:
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 5, 5, 3), "INT8", scale=0.05, zero_point=0)
    y = b.add_tensor("y", (1, 5, 5, 4), "INT8", scale=out_scale, zero_point=0)
    f = b.add_tensor("w", (4, 3, 3, 3), "INT8", data=np.ones((4, 3, 3, 3)), scale=0.01, zero_point=0)
    b.add_op("CONV_2D", [x, f], [y], padding="SAME", fused_activation_function=act)
    b.inputs, b.outputs = [x], [y]
    return b.build()


def test_activation_bound_overflow_is_refused_like_tflm():
    """RELU6 with output scale 1e-12: roundf(6 / scale) leaves int32, TFLM's Prepare fails; NONE still runs."""
    model = _tiny_scale_model(1e-12, "RELU6")
    with pytest.raises(PrepareError, match="overflow"):
        Interpreter(model)
    with pytest.raises(RuntimeError):
        TflmRunner(model)
    assert_matches_tflm(_tiny_scale_model(1e-12, "NONE"), [np.ones((1, 5, 5, 3), np.int8)])


def test_zero_output_scale_is_refused():
    with pytest.raises(PrepareError, match="output scale"):      # TFLM: multipliers from inf (undefined)
        Interpreter(_tiny_scale_model(0.0, "NONE"))


def test_float_overflow_is_clamped_to_flt_max():
    """Float NONE clamps to [lowest, max] of float32 (not +-inf): an overflowing sum comes out as FLT_MAX."""
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 1, 1, 2), "FLOAT32")
    y = b.add_tensor("y", (1, 1, 1, 2), "FLOAT32")
    f = b.add_tensor("w", (2, 1, 1, 2), "FLOAT32", data=np.array([3e38, 3e38, -3e38, -3e38]).reshape(2, 1, 1, 2))
    b.add_op("CONV_2D", [x, f], [y], padding="VALID")
    b.inputs, b.outputs = [x], [y]
    out = assert_matches_tflm(b.build(), [np.ones((1, 1, 1, 2), np.float32)])
    assert out[0].reshape(-1).tolist() == [np.finfo(np.float32).max, -np.finfo(np.float32).max]
