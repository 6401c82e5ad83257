"""Optimized DEPTHWISE_CONV_2D against the wheel and the reference kernel, aimed at the fast paths' edges: column
phases (stride 2/3, odd and even sizes, SAME/VALID, outputs off the formula), dilation, depth multipliers, one input
channel (the im2col + GEMM path), the float32 exactness bound (float64 beyond it), zero points at the extremes,
int32 accumulator wrap-around, batches, repeated invokes on the persistent buffers, and the reference fallbacks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.kernels.optimized import depthwise_conv as opt
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.single_op import assert_matches_tflm, random_tensor
from microinterp.testing.tflm import compare_optimized

from ..test_conv import ACTS, build
from .test_conv import optimized_equals_reference_over_invokes

DW = "DEPTHWISE_CONV_2D"
ZPS = [-128, 127, 0, -1, 64]


def _case(seed: int = 0, **params) -> tuple[dict, int]:
    return {"op": DW, **params}, seed


def _run(params: dict, seed: int, x_range: tuple[int, int] | None = None) -> Interpreter:
    rng = np.random.default_rng(seed)
    model, (shape, kind) = build(rng, **params)
    lo, hi = x_range or (None, None)
    assert_matches_tflm(model, [random_tensor(rng, shape, kind, lo, hi)])
    return Interpreter(model)


@st.composite
def int8_cases(draw):
    params = {
        "op": DW, "kind": "INT8", "wtype": draw(st.sampled_from(["INT8", "INT8", "INT4"])),
        "n": draw(st.integers(1, 2)), "h": draw(st.integers(1, 14)), "w": draw(st.integers(1, 14)),
        "c_in": draw(st.sampled_from([1, 1, 2, 3, 5, 8])), "mult": draw(st.sampled_from([1, 1, 2, 3, 4])),
        "kh": draw(st.integers(1, 5)), "kw": draw(st.integers(1, 5)),
        "stride": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
        "dilation": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
        "padding": draw(st.sampled_from(["SAME", "VALID"])), "act": draw(st.sampled_from(ACTS)),
        "per_channel": draw(st.booleans()), "bias": draw(st.sampled_from(["auto", "auto", None])),
        "zp_in": draw(st.sampled_from(ZPS)), "zp_out": draw(st.sampled_from(ZPS)),
        "out_delta": (draw(st.sampled_from([0, 0, 0, -1, 1, 2])), draw(st.sampled_from([0, 0, 0, -1, 1, 2]))),
        "out_scale_factor": draw(st.sampled_from([1.0, 1.0, 0.3, 3.0, 1e-4])),
    }
    if params["bias"] and draw(st.integers(0, 3)) == 0:
        params["bias_lim"] = 1 << 31
    return params, draw(st.integers(0, 2**32 - 1))


@given(int8_cases())
@example(_case(h=9, w=9, stride=(2, 2), c_in=4))                                # odd sizes, stride 2, SAME
@example(_case(h=8, w=10, stride=(2, 2), c_in=4, padding="VALID"))              # even sizes, VALID
@example(_case(h=11, w=7, stride=(3, 2), dilation=(2, 3), kh=3, kw=4, c_in=2))  # phases with dilation
@example(_case(h=7, w=12, stride=(1, 3), kw=5, c_in=3, out_delta=(2, 2)))      # output larger than the formula
@example(_case(h=6, w=6, stride=(2, 2), kh=4, kw=4, out_delta=(-1, -1)))       # output smaller than the formula
@example(_case(c_in=1, mult=8, h=12, w=12, stride=(2, 2), zp_in=-128))          # one input channel (GEMM)
@example(_case(c_in=1, mult=1, kh=5, kw=2, dilation=(2, 1), zp_in=127))        # one input channel, M = 1
@example(_case(c_in=3, mult=4, zp_in=127, zp_out=-128, act="RELU6"))            # depth multiplier
@example(_case(n=2, c_in=5, mult=2, stride=(2, 1), bias_lim=1 << 31))          # batch, accumulator wrap
@example(_case(wtype="INT4", c_in=2, mult=3, stride=(2, 2), h=5, w=7))
def test_int8_edges(case):
    _run(*case)


def _extreme_filter_model(kernel: int, c_in: int, mult: int, h: int, padding: str, weight: int = 127,
                          zp_in: int = 0) -> bytes:
    """Every weight is ``weight``: the per-channel bound 128 * sum |w| is as large as the kernel size allows. The
    output scale maps the accumulator range onto about +-300 steps, so no channel is constant (the epilogue would
    zero a constant channel's weights and take it out of the float32 bound)."""
    b = ModelBuilder()
    c_out = c_in * mult
    x = b.add_tensor("x", (1, h, h, c_in), "INT8", scale=1.0, zero_point=zp_in)
    out_hw = h if padding == "SAME" else h - kernel + 1
    y = b.add_tensor("y", (1, out_hw, out_hw, c_out), "INT8", scale=128 * 127 * kernel**2 / 300, zero_point=3)
    fshape = (1, kernel, kernel, c_out)
    f = b.add_tensor("w", fshape, "INT8", data=np.full(fshape, weight, np.int8), scale=np.full(c_out, 1.0),
                     zero_point=0, axis=3)
    bias = b.add_tensor("b", (c_out,), "INT32", data=np.arange(c_out) * 7 - 5, scale=np.ones(c_out), zero_point=0)
    b.add_op(DW, [x, f, bias], [y], padding=padding, depth_multiplier=mult)
    b.inputs, b.outputs = [x], [y]
    return b.build()


@pytest.mark.parametrize("c_in,mult", [(1, 2), (2, 1)])     # GEMM path, taps path
@pytest.mark.parametrize("kernel,dtype", [(32, np.float32), (33, np.float64)])
def test_float32_bound_forces_float64(kernel, dtype, c_in, mult):
    """32 x 32 taps of 127: 128 * 130048 + |bias| < 2^24 stays float32; 33 x 33 taps: 128 * 138303 > 2^24 ->
    float64. The inputs sit at -128, so the float accumulators reach the bound itself."""
    model = _extreme_filter_model(kernel, c_in, mult, h=kernel + 1, padding="VALID")
    data = Interpreter(model).runtime.op_data[0]
    assert data.plan.acc.dtype == dtype
    rng = np.random.default_rng(kernel)
    x = np.full((1, kernel + 1, kernel + 1, c_in), -128, np.int8)
    x[0, 0, 0] = 127
    assert_matches_tflm(model, [x])
    assert_matches_tflm(model, [random_tensor(rng, x.shape, "INT8", -128, -120)])


def _exact_accumulators(x: np.ndarray, model: bytes) -> np.ndarray:
    """sum_k w * x over the zero-point-padded image in int64 (VALID, stride 1, dilation 1, multiplier 1)."""
    it = Interpreter(model)
    w = it.model.main.tensors[it.operators[0].inputs[1]].data[0].astype(np.int64)
    kh, kw = w.shape[:2]
    oh, ow = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    x64 = x.astype(np.int64)
    return sum(x64[:, ky:ky + oh, kx:kx + ow] * w[ky, kx] for ky in range(kh) for kx in range(kw))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_accumulators_beyond_the_float32_bound(dtype):
    """The float64 plan's accumulators are the exact integers where a float32 one (forced here) is not: the check
    at prepare is what keeps the fast path exact."""
    model = _extreme_filter_model(33, 2, 1, h=36, padding="VALID")
    it = Interpreter(model)
    op, data = it.operators[0], it.runtime.op_data[0]
    x = np.random.default_rng(9).choice(np.array([-128, -127], np.int8), (1, 36, 36, 2))
    w = it.model.main.tensors[op.inputs[1]].data[0].astype(np.int64)
    operand = np.concatenate([w.reshape(-1, 2), np.zeros((1, 2), np.int64)]).astype(dtype)
    plan = opt._taps_plan(data, operand, 0, x.shape, (1, 4, 4, 2), (33, 33))
    opt._run_taps(plan, x)
    exact = _exact_accumulators(x, model)
    if dtype == np.float64:
        np.testing.assert_array_equal(plan.acc.reshape(exact.shape), exact)
    else:
        assert not np.array_equal(plan.acc.reshape(exact.shape), exact)


def test_float64_path_with_padding():
    model = _extreme_filter_model(33, 2, 2, h=5, padding="SAME", weight=-127, zp_in=-128)
    assert Interpreter(model).runtime.op_data[0].plan.acc.dtype == np.float64
    assert_matches_tflm(model, [np.full((1, 5, 5, 2), 127, np.int8)])


def test_dead_channel_leaves_the_float32_bound():
    """A channel whose huge bias saturates it for every input is constant for the epilogue: its weights and bias are
    zeroed, and its bias (far beyond 2^24) does not push the layer to float64."""
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 6, 6, 3), "INT8", scale=0.05, zero_point=-20)
    y = b.add_tensor("y", (1, 6, 6, 3), "INT8", scale=0.2, zero_point=4)
    rng = np.random.default_rng(11)
    f = b.add_tensor("w", (1, 3, 3, 3), "INT8", data=rng.integers(-127, 128, (1, 3, 3, 3)),
                     scale=np.array([0.01, 0.02, 0.015]), zero_point=0, axis=3)
    bias = b.add_tensor("b", (3,), "INT32", data=np.array([300, 1 << 28, -4000]), scale=0.05 * np.array(
        [0.01, 0.02, 0.015]), zero_point=0)
    b.add_op(DW, [x, f, bias], [y], padding="SAME", depth_multiplier=1, fused_activation_function="RELU6")
    b.inputs, b.outputs = [x], [y]
    model = b.build()
    data = Interpreter(model).runtime.op_data[0]
    assert data.epilogue.kinds()["constant"] == 1 and data.plan.acc.dtype == np.float32
    assert_matches_tflm(model, [random_tensor(rng, (1, 6, 6, 3))])


@pytest.mark.parametrize("params,plan", [
    ({"c_in": 3}, "_TapsPlan"),
    ({"c_in": 1, "mult": 4}, "_GemmPlan"),
    ({"c_in": 2, "kind": "INT16"}, None),
    ({"c_in": 2, "kind": "FLOAT32"}, None),
    ({"c_in": 2, "stride": (0, 1), "out_hw": (3, 4)}, None),
    ({"c_in": 2, "dilation": (1, 0), "out_hw": (4, 4)}, None),
])
def test_paths(params, plan):
    it = _run({"op": DW, **params}, 5)
    assert type(it.runtime.op_data[0].plan).__name__ == (plan or "NoneType")
    assert it.runtime.op_data[0].folded == (plan == "_GemmPlan")      # one input channel: the folded float64 GEMM


def test_repeated_invokes_keep_the_padding():
    """The padded buffers persist between invokes; each invoke must only overwrite the image interior."""
    rng = np.random.default_rng(3)
    model, (shape, kind) = build(rng, op=DW, h=7, w=8, c_in=3, mult=2, kh=3, kw=3, stride=(2, 2), zp_in=90)
    optimized_equals_reference_over_invokes(model, [random_tensor(rng, shape, kind) for _ in range(3)])


def test_non_constant_filter_falls_back():
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 5, 5, 2), "INT8", scale=0.1, zero_point=3)
    f = b.add_tensor("w", (1, 3, 3, 2), "INT8", scale=np.full(2, 0.02), zero_point=0, axis=3)
    y = b.add_tensor("y", (1, 5, 5, 2), "INT8", scale=0.2, zero_point=-5)
    b.add_op(DW, [x, f], [y], padding="SAME", depth_multiplier=1)
    b.inputs, b.outputs = [x, f], [y]
    model = b.build()
    assert Interpreter(model).runtime.op_data[0].plan is None
    rng = np.random.default_rng(4)
    assert compare_optimized(model, [random_tensor(rng, (1, 5, 5, 2)), random_tensor(rng, (1, 3, 3, 2))]).ok


def test_opdata_is_the_reference_opdata():
    """Code that reads the reference OpData (row-band tiling, cost models) keeps working with the optimized one."""
    it = _run({"op": DW, "c_in": 2}, 6)
    assert isinstance(it.runtime.op_data[0], opt.DepthwiseData)


@pytest.mark.parametrize("samples", [1, 2, 5])
def test_one_channel_batches_run_in_blocks_of_samples(monkeypatch, samples):
    """A batched one-channel depthwise runs im2col, GEMM and epilogue a block of samples at a time (one sample,
    two with a shorter last block, all five): the wheel's results either way."""
    case = _case(n=5, c_in=1, mult=3, h=6, w=6, kh=3, kw=3, zp_in=-7, seed=3)
    plan = _run(*case).runtime.op_data[0].plan
    per_sample = plan.windows.shape[3] * plan.windows.shape[4] * plan.cols.itemsize * \
        (plan.cols.shape[0] + plan.acc.shape[1])
    monkeypatch.setattr(opt, "_BLOCK_BYTES", samples * per_sample + per_sample // 2)
    assert _run(*case).runtime.op_data[0].plan.step == samples


@pytest.mark.parametrize("params", [
    {"c_in": 3, "mult": 2, "stride": (2, 2), "act": "NONE", "zp_out": 7},      # taps, two column phases, signed
    {"c_in": 4, "kh": 3, "kw": 3, "padding": "SAME", "act": "RELU"},            # taps, one phase
    {"c_in": 1, "mult": 4, "act": "RELU6"},                                     # one channel: GEMM, folded
])
def test_small_layers_bind_their_plan(params):
    """A small layer runs its plan bound to the arena views: the same outputs as the plan's invoke (the reference
    interpreter too), invoke after invoke, and as the wheel."""
    rng = np.random.default_rng(6)
    model, (shape, kind) = build(rng, op=DW, **params)
    call = Interpreter(model).runtime.graph.calls[0][0]
    assert getattr(getattr(call, "func", call), "__name__", "") in ("taps", "_run_gemm")    # not the kernel's invoke
    inputs = [random_tensor(rng, shape, kind) for _ in range(3)]
    optimized_equals_reference_over_invokes(model, inputs)
    for x in inputs:
        assert_matches_tflm(model, [x])
