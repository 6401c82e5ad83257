"""Optimized CONV_2D against the wheel and the reference kernel, aimed at the fast path's edges: the float32
exactness bound (float64 beyond it), channels that leave the merged epilogue (int64 MBQM, constant outputs,
accumulators that wrap int32), 1x1 convolutions read straight from the input, padding SAME/VALID, outputs off the
formula, dilation, zero points at -128/127, per-tensor and per-channel scales, int4 filters, batches, repeated
invokes on the persistent buffers, and the reference fallbacks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.kernels import conv as reference
from microinterp.kernels.optimized import conv as opt
from microinterp.kernels.optimized._epilogue import gemm
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.single_op import assert_matches_tflm, random_tensor

from ..test_conv import ACTS, build

ZPS = [-128, 127, 0, -1, 64]


def _case(seed: int = 0, **params) -> tuple[dict, int]:
    return params, seed


def _run(params: dict, seed: int, invokes: int = 1) -> Interpreter:
    rng = np.random.default_rng(seed)
    model, (shape, kind) = build(rng, **params)
    for _ in range(invokes):
        assert_matches_tflm(model, [random_tensor(rng, shape, kind)])
    return Interpreter(model)


#: what each int8 case draws from (pairs are (h, w)-like tuples drawn independently)
CHOICES = {
    "wtype": ["INT8", "INT8", "INT4"], "n": [1, 1, 2], "h": list(range(1, 13)), "w": list(range(1, 13)),
    "c_in": [1, 2, 3, 8, 17, 40], "c_out": [1, 2, 5, 16, 33], "kh": [1, 2, 3, 4, 5], "kw": [1, 2, 3, 4, 5],
    "padding": ["SAME", "VALID"], "act": ACTS, "per_channel": [True, False], "bias": ["auto", "auto", None],
    "zp_in": ZPS, "zp_out": ZPS, "out_scale_factor": [1.0, 1.0, 0.3, 3.0, 1e-4, 1e-7],
}
PAIRS = {"stride": [1, 2, 3], "dilation": [1, 2, 3], "out_delta": [0, 0, 0, -1, 1, 2]}


@st.composite
def int8_cases(draw):
    params = {"kind": "INT8"}
    params.update({key: draw(st.sampled_from(values)) for key, values in CHOICES.items()})
    params.update({key: (draw(st.sampled_from(values)), draw(st.sampled_from(values)))
                   for key, values in PAIRS.items()})
    if params["bias"] and draw(st.integers(0, 4)) == 0:
        params["bias_lim"] = 1 << 31        # accumulators beyond int32: TFLM wraps, the epilogue's int64 path too
    return params, draw(st.integers(0, 2**32 - 1))


@given(int8_cases())
@example(_case(kh=1, kw=1, c_in=16, c_out=24, h=7, w=5))                        # 1x1 stride 1: no im2col
@example(_case(kh=1, kw=1, c_in=8, c_out=4, h=9, w=8, stride=(2, 3)))           # 1x1 strided, read directly
@example(_case(kh=1, kw=1, c_in=4, h=5, w=5, out_delta=(2, 1)))                 # 1x1 past the image: padded
@example(_case(kh=3, kw=3, c_in=3, h=9, w=9, stride=(2, 2), padding="VALID", zp_in=-128, zp_out=127))
@example(_case(kh=3, kw=2, c_in=5, h=8, w=7, dilation=(2, 3), zp_in=127, zp_out=-128, act="RELU6"))
@example(_case(n=2, kh=2, kw=2, c_in=3, c_out=5, per_channel=False, act="RELU_N1_TO_1"))
@example(_case(kh=2, kw=2, c_in=6, bias_lim=1 << 31, zp_in=-128))               # int32 wrap: int64 epilogue
@example(_case(wtype="INT4", kh=3, kw=3, c_in=4, c_out=6, stride=(2, 1)))
@example(_case(c_in=8, c_out=16, out_scale_factor=1e-7))                        # tiny scales: constant outputs
@example(_case(c_in=2, c_out=3, kh=1, kw=1, out_scale_factor=1e-4, zp_out=-1))  # effective scale > 1
def test_int8_edges(case):
    _run(*case)


# -- the float32 exactness bound ----------------------------------------------------------------------------------
def _extreme_model(taps: tuple[int, int, int], bias: list[int], scales=None, padding: str = "VALID",
                   weight=None, zp_in: int = 0, h: int = 2, act: str = "NONE") -> bytes:
    """A conv whose filter taps (``kh, kw, c_in``) are all ``weight`` (+-127 by default, random signs): the
    per-channel bound ``128 sum |w|`` is as large as the tap count allows."""
    kh, kw, c_in = taps
    c_out = len(bias)
    rng = np.random.default_rng(sum(taps))
    fshape = (c_out, kh, kw, c_in)
    wv = weight if weight is not None else rng.choice(np.array([-127, 127]), fshape)
    scales = np.ones(c_out) if scales is None else np.asarray(scales, np.float64)
    out_hw = h if padding == "SAME" else h - kh + 1
    spread = 128 * 127 * kh * kw * c_in
    b = ModelBuilder()
    x = b.add_tensor("x", (1, h, h, c_in), "INT8", scale=1.0, zero_point=zp_in)
    y = b.add_tensor("y", (1, out_hw, out_hw, c_out), "INT8", scale=spread / 300, zero_point=3)
    f = b.add_tensor("w", fshape, "INT8", data=np.broadcast_to(wv, fshape).astype(np.int8), scale=scales,
                     zero_point=0, axis=0)
    bt = b.add_tensor("b", (c_out,), "INT32", data=np.array(bias), scale=scales, zero_point=0)
    b.add_op("CONV_2D", [x, f, bt], [y], padding=padding, fused_activation_function=act)
    b.inputs, b.outputs = [x], [y]
    return b.build()


def _inputs(model: bytes, seed: int) -> list[np.ndarray]:
    """Inputs at the extremes (every tap -128, every tap 127, the sign pattern of channel 0's filter) and random."""
    it = Interpreter(model, optimized=False)
    shape = it.get_input_details(0)["shape"]
    w0 = it.model.main.tensors[it.operators[0].inputs[1]].data[0]
    sign = np.where(np.tile(w0[0, 0], 1) >= 0, 127, -128).astype(np.int8)
    rng = np.random.default_rng(seed)
    return [np.full(shape, -128, np.int8), np.full(shape, 127, np.int8), np.broadcast_to(sign, shape).copy(),
            random_tensor(rng, shape)]


@pytest.mark.parametrize("taps,padding", [((1, 1, 1032), "VALID"), ((2, 2, 258), "SAME")])
@pytest.mark.parametrize("bias,dtype", [(1000, np.float32), (1100, np.float64)])
def test_float32_bound_forces_float64(taps, padding, bias, dtype):
    """1032 taps of +-127: 128 * 127 * 1032 = 2^24 - 1024, so a bias of 1000 stays below 2^24 (float32) and 1100
    goes above (float64). Inputs at -128/127 drive the accumulators to the bound itself."""
    model = _extreme_model(taps, [bias, -bias, 7], padding=padding, h=3)
    plan = Interpreter(model).runtime.op_data[0].plan
    assert plan.weights.dtype == dtype
    for x in _inputs(model, 1):
        assert_matches_tflm(model, [x])


def test_float64_accumulators_are_exact():
    """The float64 GEMM returns the exact integers (about 2^25 here); forcing the same operands into float32 would
    not."""
    model = _extreme_model((1, 1, 2064), [1100, 1100, 1100], h=3)
    it = Interpreter(model)
    plan = it.runtime.op_data[0].plan
    assert plan.weights.dtype == np.float64
    w = it.model.main.tensors[it.operators[0].inputs[1]].data.reshape(3, -1).astype(np.int64)
    x = np.random.default_rng(2).choice(np.array([-128, -127, 127], np.int8), (1, 3, 3, 2064))
    x[0, 0] = np.where(w[0] > 0, 127, -128)          # channel 0 of pixel 0 near +2^25
    exact = x.reshape(-1, 2064).astype(np.int64) @ w.T + 1100
    np.copyto(plan.im2col.target, x[plan.im2col.source])
    np.testing.assert_array_equal(gemm(plan.im2col.cols, plan.weights, "test"), exact)
    assert not np.array_equal(gemm(plan.im2col.cols.astype(np.float32), plan.weights.astype(np.float32), "test32"), exact)


# -- the epilogue's paths -----------------------------------------------------------------------------------------
def test_channels_off_the_merged_path():
    """Channel 0: effective scale 2^-22.6 (rounding exponent 22, beyond the float64 merge) with an output that
    still varies -> int64 MBQM; channel 1: merged; channel 2: zero weights and a bias of 2^28 -> constant, and its
    bias does not push the layer to float64."""
    taps = (1, 1, 256)
    weight = np.ones((3, 1, 1, 256), np.int64) * np.random.default_rng(5).choice([-127, 127], (1, 1, 1, 256))
    weight[2] = 0
    spread = 128 * 127 * 256
    scales = [2.0**-22.6 * spread / 300, 1.0, 1.0]
    model = _extreme_model(taps, [0, 12345, 1 << 28], scales=scales, weight=weight, h=2)
    plan = Interpreter(model).runtime.op_data[0].plan
    assert plan.epilogue.kinds() == {"merged": 1, "constant": 1, "int64": 1}
    assert plan.weights.dtype == np.float32
    for x in _inputs(model, 3):
        assert_matches_tflm(model, [x])


@pytest.mark.parametrize("act", ["NONE", "RELU"])
@pytest.mark.parametrize("live", [0, 1, 2])
def test_constant_channels_skip_the_product(act, live):
    """Channels whose output is constant (zero filters here) get no GEMM columns (60 input channels: no folded
    GEMM): the products of the ``live`` others are scattered into an accumulator whose constant columns stay 0,
    over repeated invokes."""
    weight = np.random.default_rng(6).choice([-127, 127], (8, 1, 1, 60))
    weight[live:] = 0
    model = _extreme_model((1, 1, 60), [300, -70000, 1 << 27, 0, -5, 9, 1 << 20, -(1 << 26)], weight=weight, h=3,
                           act=act)
    plan = Interpreter(model).runtime.op_data[0].plan
    assert plan.epilogue.kinds()["constant"] == 8 - live
    assert plan.full is not None and list(plan.live) == list(range(live)) and plan.weights.shape[1] == live
    for x in _inputs(model, 7):
        assert_matches_tflm(model, [x])
    optimized_equals_reference_over_invokes(model, _inputs(model, 8))


@pytest.mark.parametrize("act,zp_in", [("NONE", -128), ("RELU", 5), ("RELU6", 127)])
def test_folded_gemm(act, zp_in):
    """1x1 filters with few input channels and a clamping activation (RELU, RELU6): the float64 GEMM returns T
    itself (requantization scale and offset in the operand), checked at the accumulator ends; signed rounding (no
    activation) keeps the float32 GEMM."""
    model = _extreme_model((1, 1, 20), [500, -500, 0, 99, 1 << 16], zp_in=zp_in, h=4, act=act)
    plan = Interpreter(model).runtime.op_data[0].plan
    assert plan.folded == (act != "NONE") and plan.weights.dtype == (np.float32 if act == "NONE" else np.float64)
    for x in _inputs(model, 9):
        assert_matches_tflm(model, [x])
    optimized_equals_reference_over_invokes(model, _inputs(model, 10))


@pytest.mark.parametrize("act,zp_in", [("NONE", 0), ("RELU", -128), ("RELU6", 127), ("RELU_N1_TO_1", 5)])
def test_activations_at_the_accumulator_ends(act, zp_in):
    model = _extreme_model((3, 3, 20), [500, -500, 0, 99], padding="SAME", zp_in=zp_in, h=4, act=act)
    for x in _inputs(model, 4):
        assert_matches_tflm(model, [x])


# -- paths, buffers, fallbacks ------------------------------------------------------------------------------------
@pytest.mark.parametrize("params,path", [
    ({"kh": 1, "kw": 1, "c_in": 5}, "direct"),
    ({"kh": 1, "kw": 1, "c_in": 5, "stride": (2, 2)}, "direct"),
    ({"kh": 1, "kw": 1, "c_in": 5, "out_delta": (1, 0)}, "image"),
    ({"kh": 3, "kw": 3, "c_in": 5}, "image"),
    ({"c_in": 4, "c_out": 4, "groups": 2}, None),
    ({"kind": "INT16"}, None),
    ({"kind": "FLOAT32"}, None),
    ({"stride": (0, 1), "out_hw": (3, 4)}, None),
    ({"dilation": (1, 0), "out_hw": (4, 4)}, None),
])
def test_paths(params, path):
    it = _run(params, 5)
    plan = it.runtime.op_data[0].plan
    assert (None if plan is None else "direct" if plan.im2col.image is None else "image") == path


def optimized_equals_reference_over_invokes(model: bytes, inputs: list[np.ndarray]) -> None:
    """One optimized and one reference interpreter, fed the same inputs one invoke after another: the optimized
    kernels' persistent host buffers must not carry anything from one invoke into the next."""
    def outputs(it: Interpreter) -> list[np.ndarray]:
        results = []
        for x in inputs:
            it.set_input(x)
            it.invoke()
            results.append(it.get_output().copy())
        return results

    for got, want in zip(outputs(Interpreter(model)), outputs(Interpreter(model, optimized=False))):
        np.testing.assert_array_equal(got, want)


def test_repeated_invokes_keep_the_padding():
    """The padded image and the column buffer persist between invokes; only the interior is rewritten."""
    rng = np.random.default_rng(3)
    model, (shape, kind) = build(rng, h=7, w=8, c_in=3, c_out=5, kh=3, kw=3, stride=(2, 2), zp_in=90)
    optimized_equals_reference_over_invokes(model, [random_tensor(rng, shape, kind) for _ in range(3)])


def test_non_constant_filter_falls_back():
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 5, 5, 2), "INT8", scale=0.1, zero_point=3)
    f = b.add_tensor("w", (3, 3, 3, 2), "INT8", scale=np.full(3, 0.02), zero_point=0, axis=0)
    y = b.add_tensor("y", (1, 5, 5, 3), "INT8", scale=0.2, zero_point=-5)
    b.add_op("CONV_2D", [x, f], [y], padding="SAME")
    b.inputs, b.outputs = [x, f], [y]
    model = b.build()
    assert Interpreter(model).runtime.op_data[0].plan is None
    rng = np.random.default_rng(4)
    assert_matches_tflm(model, [random_tensor(rng, (1, 5, 5, 2)), random_tensor(rng, (3, 3, 3, 2))])


def test_opdata_is_the_reference_opdata():
    """Code that reads the reference OpData (row-band tiling, cost models) keeps working with the optimized one."""
    rng = np.random.default_rng(6)
    model, (shape, kind) = build(rng, h=6, w=6, c_in=3, c_out=4)
    it = Interpreter(model)
    data = it.runtime.op_data[0]
    assert isinstance(data, reference.ConvData) and isinstance(data, opt.FastConvData) and data.plan is not None
    x = random_tensor(rng, shape, kind)
    it.set_input(x)
    it.invoke()
    out = np.zeros_like(it.get_output())
    tensors = it.model.main.tensors
    reference.conv_rows(data, x, tensors[it.operators[0].inputs[1]].data, tensors[it.operators[0].inputs[2]].data,
                        out, 0)
    np.testing.assert_array_equal(out, it.get_output())


def test_a_plan_above_the_host_buffer_cap_falls_back_to_the_reference(monkeypatch):
    """A layer whose image + im2col would exceed _MAX_PLAN_BYTES (a mutated stride or dilation asking for gigabytes)
    gets no plan and runs the reference invoke: same output, no giant buffer at build."""
    import microinterp as mi
    from microinterp.kernels.optimized import conv as fast_conv
    from microinterp.kernels.optimized import depthwise_conv as fast_dw
    from microinterp.testing.models import mobilenet_v1

    model = mobilenet_v1(input_size=32, classes=10)
    ref = mi.Interpreter(model, optimized=False)
    x = np.random.default_rng(1).integers(-128, 128, size=ref.get_input_details(0)["shape"]).astype(np.int8)
    ref.set_input(x, 0)
    ref.invoke()
    monkeypatch.setattr(fast_conv, "_MAX_PLAN_BYTES", 0)
    monkeypatch.setattr(fast_dw, "_MAX_PLAN_BYTES", 0)
    it = mi.Interpreter(model)
    assert all(getattr(d, "plan", None) is None for d in it.runtime.op_data)
    it.set_input(x, 0)
    it.invoke()
    np.testing.assert_array_equal(it.get_output(0), ref.get_output(0))


def test_shared_im2col_blocks_are_rewritten_when_another_geometry_used_them():
    """Out of core, every layer's Im2col shares one host block (and one image): filling geometries in turn gives
    each one the block its own (in-memory, owned) Im2col gives, the 1.0 column and zero-point margins included."""
    from microinterp.kernels.conv import ConvData
    from microinterp.kernels.optimized.conv import Im2col

    def data(zp, pad, stride):
        fields = {f.name: 0 for f in dataclasses.fields(ConvData)}
        fields.update(input_offset=-zp, pad_h=pad, pad_w=pad, stride_h=stride, stride_w=stride, dilation_h=1,
                      dilation_w=1)
        return ConvData(**fields)

    rng = np.random.default_rng(3)
    cases = [(data(5, 1, 1), (1, 6, 7, 3), (1, 6, 7, 4), (3, 3), np.float32),
             (data(-9, 2, 2), (1, 9, 5, 2), (1, 6, 4, 4), (5, 3), np.float64),
             (data(0, 0, 2), (1, 8, 8, 5), (1, 4, 4, 2), (1, 1), np.float32)]
    shared = [Im2col(d, xs, ys, k, t, shared=True) for d, xs, ys, k, t in cases]
    owned = [Im2col(d, xs, ys, k, t) for d, xs, ys, k, t in cases]
    for turn in [0, 1, 0, 2, 1, 1, 2, 0]:
        x = rng.integers(-128, 128, size=cases[turn][1]).astype(np.int8)
        got = shared[turn].fill(x).copy()
        assert shared[turn].holds() and not any(g.holds() for i, g in enumerate(shared) if i != turn)
        assert np.array_equal(got, owned[turn].fill(x))


@pytest.mark.parametrize("params", [
    {"kh": 3, "kw": 3, "c_in": 3, "act": "NONE", "zp_out": 5},            # signed rounding, zp-filled image
    {"kh": 1, "kw": 1, "c_in": 5, "act": "RELU"},                           # read straight from the input
    {"kh": 2, "kw": 2, "c_in": 4, "n": 2, "stride": (2, 1), "act": "RELU6"},
    {"kh": 3, "kw": 3, "c_in": 1, "stride": (2, 2), "act": "RELU", "zp_in": -128},    # gathered by positions
    {"kh": 3, "kw": 2, "c_in": 2, "padding": "SAME", "dilation": (1, 2), "zp_in": 127},
])
def test_small_layers_bind_their_plan(params):
    """A small layer runs its plan bound to the arena views (ConvPlan.bind, Epilogue.bind): the same outputs as
    the plan's own run, invoke after invoke, and as the wheel; a layer above BIND_OUTPUTS keeps the invoke."""
    rng = np.random.default_rng(4)
    model, (shape, kind) = build(rng, **params)
    it = Interpreter(model)
    call, data = it.runtime.graph.calls[0][0], it.runtime.op_data[0]
    assert getattr(call, "__name__", "") == "call"
    out = np.empty(it.get_output_details(0)["shape"], np.int8)
    for _ in range(3):
        x = random_tensor(rng, shape, kind)
        it.set_input(x)
        it.invoke()
        data.plan.run(x, out.reshape(data.plan.rows, -1))
        np.testing.assert_array_equal(it.get_output(), out)
        assert_matches_tflm(model, [x])
    big, _ = build(rng, kh=1, kw=1, c_in=4, c_out=64, h=40, w=30)
    assert not hasattr(Interpreter(big).runtime.graph.calls[0][0], "__name__")


def test_layers_of_a_phased_segment_are_left_unbound():
    """The phased planner keeps some rows of a segment's tensors (line buffers): their convolutions run inside the
    segment, so binding them to the whole-tensor plan must decline (their views are not the plan's shapes)."""
    from ...pager.test_fusion import resnet_block_net

    model = resnet_block_net()
    phased, whole = Interpreter(model, planner="phased"), Interpreter(model)
    x = np.random.default_rng(0).integers(-128, 128, size=(1, 32, 32, 4)).astype(np.int8)
    for it in (phased, whole):
        it.set_input(x)
        it.invoke()
    np.testing.assert_array_equal(phased.get_output(), whole.get_output())
