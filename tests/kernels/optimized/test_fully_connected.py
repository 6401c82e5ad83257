"""Optimized FULLY_CONNECTED against the wheel and the reference kernel: the GEMM + epilogue path of large layers
(per-tensor with filter zero points, per-channel, int4 weights, batches, keep_num_dims, no bias, zero points at the
extremes, tiny and > 1 effective scales, accumulators that wrap int32), the float32 exactness bound, and the layers
that keep the reference invoke (small ones, int16x8, float32, non-constant weights)."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.kernels import fully_connected as reference
from microinterp.kernels.optimized import fully_connected as opt
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.single_op import assert_matches_tflm, random_tensor
from microinterp.testing.tflm import TflmRunner

from ..test_fully_connected import ACTS, build
from .test_conv import optimized_equals_reference_over_invokes

ZPS = [-128, 127, 0, -1, 64]


def _run(params: dict, seed: int, invokes: int = 2) -> Interpreter:
    rng = np.random.default_rng(seed)
    model = build(rng, **params)
    for _ in range(invokes):
        assert_matches_tflm(model, [random_tensor(rng, params["in_shape"], params["kind"])])
    return Interpreter(model)


@st.composite
def large_cases(draw):
    """int8 layers big enough for the GEMM path (>= 512 outputs or >= 2^17 multiply-adds)."""
    batches = draw(st.sampled_from([1, 1, 2, 3]))
    n = draw(st.sampled_from([7, 64, 300, 600]))
    k = draw(st.sampled_from([1, 16, 300, 700]))
    if batches * n < 512:
        k = max(k, -(-(1 << 17) // (batches * n)))
    weights = draw(st.sampled_from(["INT8", "INT8", "INT4"]))
    per_channel = weights == "INT8" and draw(st.booleans())
    params = {
        "kind": "INT8", "in_shape": (batches, k), "n": n, "keep_num_dims": draw(st.booleans()),
        "weights": weights, "per_channel": per_channel, "bias": draw(st.sampled_from(["auto", "auto", None])),
        "act": draw(st.sampled_from(ACTS)), "zp_in": draw(st.sampled_from(ZPS)), "zp_out": draw(st.sampled_from(ZPS)),
        "zp_w": 0 if per_channel else draw(st.sampled_from([0, 0, 3, -2])),
        "out_scale_factor": draw(st.sampled_from([0.1, 1.0, 4.0, 1e-4, 1e-6])),
        "bias_at_int32_ends": draw(st.sampled_from([False, False, False, True])),
    }
    return params, draw(st.integers(0, 2**32 - 1))


def case(seed: int = 0, **params) -> tuple[dict, int]:
    base = {"kind": "INT8", "in_shape": (1, 640), "n": 640}
    return {**base, **params}, seed


@given(large_cases())
@example(case())                                                            # ad01's last layer
@example(case(in_shape=(1, 1280), n=1000, per_channel=True, zp_in=-128))    # mobilenet_v2's classifier
@example(case(in_shape=(3, 300), n=600, zp_w=3, zp_in=127, zp_out=-128, act="RELU"))
@example(case(in_shape=(2, 700), n=128, weights="INT4", zp_w=-2, act="RELU6"))
@example(case(in_shape=(1, 300), n=600, bias=None, act="RELU_N1_TO_1"))
@example(case(in_shape=(1, 700), n=300, bias_at_int32_ends=True))          # int32 wrap: int64 epilogue
@example(case(in_shape=(1, 300), n=600, out_scale_factor=1e-4))            # effective scale > 1
def test_large_layers(case):
    """The GEMM + epilogue path, also for the per-tensor layers below _MIN_CODE_OUTPUTS (the reference's step
    index is faster there, test_paths checks that choice)."""
    params, seed = case
    with mock.patch.object(opt, "_MIN_CODE_OUTPUTS", 0):
        it = _run(params, seed)
    data = it.runtime.op_data[0]
    # one input value per batch (int8): the reference's exhaustive table beats any product
    assert (data.plan is None) == (data.table is not None) == (params["in_shape"][-1] == 1)


def _extreme_model(k: int, n: int, bias: int, zp_in: int = 0) -> bytes:
    """Every weight +-127 (random signs): ``128 sum |w| = 128 * 127 * k``."""
    rng = np.random.default_rng(k)
    b = ModelBuilder()
    x = b.add_tensor("x", (1, k), "INT8", scale=1.0, zero_point=zp_in)
    y = b.add_tensor("y", (1, n), "INT8", scale=128 * 127 * k / 300, zero_point=3)
    w = b.add_tensor("w", (n, k), "INT8", data=rng.choice(np.array([-127, 127], np.int8), (n, k)), scale=1.0,
                     zero_point=0)
    bt = b.add_tensor("b", (n,), "INT32", data=np.full(n, bias), scale=1.0, zero_point=0)
    b.add_op("FULLY_CONNECTED", [x, w, bt], [y])
    b.inputs, b.outputs = [x], [y]
    return b.build()


@pytest.mark.parametrize("bias,dtype", [(1000, np.float32), (1100, np.float64)])
def test_float32_bound_forces_float64(bias, dtype):
    """128 * 127 * 1032 = 2^24 - 1024: a bias of 1000 keeps float32 with the bias in the GEMM; 1100 needs float64
    for the whole sum, so the plan keeps float32 slices of taps (one here) and adds the bias in float64."""
    model = _extreme_model(1032, 512, bias)
    with mock.patch.object(opt, "_MIN_CODE_OUTPUTS", 0):
        it = Interpreter(model)
    plan = it.runtime.op_data[0].plan
    assert plan.weights.dtype == np.float32 and (plan.chunk > 0) == (dtype == np.float64)
    assert Interpreter(model).runtime.op_data[0].gemm.dtype == dtype      # the reference's step path: the same bound
    w0 = it.model.main.tensors[it.operators[0].inputs[1]].data[0]
    for x in (np.full(1032, -128), np.full(1032, 127), np.where(w0 > 0, 127, -128)):
        assert_matches_tflm(model, [x.astype(np.int8)[None, :]])
        with mock.patch.object(opt, "_MIN_CODE_OUTPUTS", 0):
            assert_matches_tflm(model, [x.astype(np.int8)[None, :]])


@pytest.mark.parametrize("params,planned", [
    ({"in_shape": (1, 16), "n": 16}, False),                 # hello_world-sized: the reference's step path
    ({"in_shape": (1, 128), "n": 128}, False),
    # per-tensor: the reference's step index is the int8 code, faster below 1536 outputs
    ({"in_shape": (1, 1280), "n": 1000}, False),             # mobilenet_v2-sized classifier, per-tensor
    ({"in_shape": (2, 640), "n": 640}, False),
    ({"in_shape": (3, 8), "n": 512}, True),                  # 1536 outputs
    # per-channel steps (an index into the channels' values): the GEMM + epilogue from 512 outputs or 2^17 MACs
    ({"in_shape": (1, 640), "n": 128, "per_channel": True}, False),     # 2^16.3 multiply-adds, 128 outputs
    ({"in_shape": (1, 640), "n": 256, "per_channel": True}, True),      # 2^17.3 multiply-adds
    ({"in_shape": (1, 8), "n": 512, "per_channel": True}, True),        # 512 outputs
    ({"in_shape": (1, 640), "n": 640, "kind": "INT16"}, False),
    ({"in_shape": (1, 640), "n": 640, "kind": "FLOAT32"}, False),
])
def test_paths(params, planned):
    model = build(np.random.default_rng(3), **{"kind": "INT8", **params})
    data = Interpreter(model).runtime.op_data[0]
    assert isinstance(data, reference.FullyConnectedData) and isinstance(data, opt.FastFullyConnectedData)
    assert (data.plan is not None) == planned


def test_non_constant_filter_falls_back():
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 600), "INT8", scale=0.1, zero_point=3)
    w = b.add_tensor("w", (600, 600), "INT8", scale=0.02, zero_point=0)
    y = b.add_tensor("y", (1, 600), "INT8", scale=2.0, zero_point=-5)
    b.add_op("FULLY_CONNECTED", [x, w], [y])
    b.inputs, b.outputs = [x, w], [y]
    model = b.build()
    assert Interpreter(model).runtime.op_data[0].plan is None
    rng = np.random.default_rng(4)
    assert_matches_tflm(model, [random_tensor(rng, (1, 600)), random_tensor(rng, (600, 600))])


def test_repeated_invokes():
    rng = np.random.default_rng(8)
    model = build(rng, kind="INT8", in_shape=(2, 300), n=600, zp_in=-128, per_channel=True)
    optimized_equals_reference_over_invokes(model, [random_tensor(rng, (2, 300)) for _ in range(3)])


def _matches_the_wheel_at_the_extremes(model: bytes, it: Interpreter, k: int) -> None:
    w0 = it.model.main.tensors[it.operators[0].inputs[1]].data[0]
    for x in (np.full(k, -128), np.full(k, 127), np.where(w0 > 0, 127, -128)):
        x = x.astype(np.int8)[None, :]
        it.set_input(x)
        it.invoke()
        ref = TflmRunner(model, preserve_all=False)
        ref.run([x])
        assert np.array_equal(it.get_output(), ref.output(0))


def test_float32_slices_of_a_long_sum_are_exact():
    """3000 taps of +-127: three float32 slices (1032 taps each at most), added in float64, at the extreme inputs."""
    model = _extreme_model(3000, 64, -70000)
    with mock.patch.object(opt, "_MIN_CODE_OUTPUTS", 0), mock.patch.object(opt, "_MIN_OUTPUTS", 0):
        it = Interpreter(model)
    plan = it.runtime.op_data[0].plan
    assert plan is not None and plan.chunk == 1032 and plan.weights.dtype == np.float32 and plan.source is None
    _matches_the_wheel_at_the_extremes(model, it, 3000)


def test_beyond_the_host_budget_the_slices_come_from_the_int8_filter():
    """With no host budget left the plan keeps no operand: each slice is converted from the model's filter at invoke,
    with the same exact float32 partial sums (three slices, extreme inputs, against the wheel)."""
    model = _extreme_model(3000, 64, 12345, zp_in=-3)
    with mock.patch.object(opt, "_MIN_CODE_OUTPUTS", 0), mock.patch.object(opt, "_MIN_OUTPUTS", 0), \
            mock.patch("microinterp.runtime.memory.IN_MEMORY_CACHE_BYTES", 0):
        it = Interpreter(model)
    plan = it.runtime.op_data[0].plan
    assert plan.source is not None and plan.weights.size == 0 and plan.chunk == 1032
    _matches_the_wheel_at_the_extremes(model, it, 3000)
