"""The optimized CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED band functions out of core: random geometries
(strides, dilations, padding, depth multipliers, filters that stream in channel tiles gathered into groups of any
size, bands of every height the pools allow) against the reference in-memory run, bit for bit; and the band plans
keep no weight-sized buffer."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import microinterp as mi
from microinterp.kernels.optimized.conv import FastConvData
from microinterp.kernels.optimized.depthwise_conv import OptimizedDepthwiseData
from microinterp.kernels.optimized.fully_connected import FastFullyConnectedData
from microinterp.testing.builder import ModelBuilder

from .conftest import in_memory, smallest_out_of_core_arena


def one_op_model(kind: str, h: int, w: int, c_in: int, c_out: int, k: tuple[int, int], stride: tuple[int, int],
                 dilation: tuple[int, int], padding: str, act: str, zp: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.add_tensor("x", (1, h, w, c_in), "INT8", scale=0.05, zero_point=zp)
    if kind == "CONV_2D":
        shape, axis = (c_out, *k, c_in), 0
    else:
        shape, axis = (1, *k, c_out), 3
    wt = rng.integers(-127, 128, size=shape, dtype=np.int8)
    scales = rng.uniform(0.002, 0.02, c_out).astype(np.float32)
    wi = b.add_tensor("w", shape, "INT8", data=wt, scale=scales, zero_point=0, axis=axis)
    bi = b.add_tensor("b", (c_out,), "INT32", data=rng.integers(-3000, 3000, c_out).astype(np.int32),
                      scale=(0.05 * scales).astype(np.float32), zero_point=0)

    def out_size(size, kk, s, d):
        eff = (kk - 1) * d + 1
        return (size + s - 1) // s if padding == "SAME" else (size - eff + s) // s

    oh, ow = out_size(h, k[0], stride[0], dilation[0]), out_size(w, k[1], stride[1], dilation[1])
    y = b.add_tensor("y", (1, oh, ow, c_out), "INT8", scale=0.08, zero_point=-3)
    opts = {"padding": padding, "stride_h": stride[0], "stride_w": stride[1], "dilation_h_factor": dilation[0],
            "dilation_w_factor": dilation[1], "fused_activation_function": act}
    if kind == "DEPTHWISE_CONV_2D":
        opts["depth_multiplier"] = c_out // c_in
    b.add_op(kind, [x, wi, bi], [y], **opts)
    b.inputs, b.outputs = [x], [y]
    return b.build()


@settings(suppress_health_check=[HealthCheck.filter_too_much])   # tiny or in-memory cases are skipped
@given(kind=st.sampled_from(["CONV_2D", "DEPTHWISE_CONV_2D"]), h=st.integers(12, 30), w=st.integers(8, 20),
       c_in=st.integers(2, 12), mult=st.integers(1, 3), c_out=st.integers(1, 40), k=st.tuples(*[st.sampled_from(
           [1, 2, 3, 5])] * 2), stride=st.tuples(*[st.integers(1, 3)] * 2), dilation=st.tuples(*[st.integers(1, 2)] * 2),
       padding=st.sampled_from(["SAME", "VALID"]), act=st.sampled_from(["NONE", "RELU", "RELU6"]),
       zp=st.integers(-128, 127), seed=st.integers(0, 2**31 - 1), where=st.floats(0, 1), group=st.integers(1, 48))
def test_band_functions_match_the_reference(tmp_path_factory, kind, h, w, c_in, mult, c_out, k, stride, dilation,
                                            padding, act, zp, seed, where, group):
    """``group``: the channels per GEMM group of a streamed filter (:mod:`microinterp.kernels.optimized._group`),
    set below the default so bands hold several groups, of tiles of any width."""
    if kind == "DEPTHWISE_CONV_2D":
        c_out = c_in * mult
    if padding == "VALID" and ((k[0] - 1) * dilation[0] + 1 > h or (k[1] - 1) * dilation[1] + 1 > w):
        padding = "SAME"
    model = one_op_model(kind, h, w, c_in, c_out, k, stride, dilation, padding, act, zp, seed)
    x = np.random.default_rng(seed).integers(-128, 128, size=(1, h, w, c_in), dtype=np.int8)
    path = tmp_path_factory.mktemp("sd") / "sd.img"
    full = mi.Interpreter(model).arena_used_bytes
    assume(full > 1024)                     # a model that fits a few hundred bytes is never paged
    need = smallest_out_of_core_arena(model, path, flash=0)
    assume(need < full)
    arena = need + int(where * (full - 1 - need))
    with mi.Interpreter(model, arena=arena, backing=path, flash=0) as it:
        data = it.runtime.plans[0].data
        assert data.bands is not None and data.plan is None        # the optimized band path, no whole plan
        if kind == "CONV_2D":
            data.bands.group = group
        it.set_input(x)
        it.invoke()
        assert np.array_equal(it.get_output(), in_memory(model, x))


def test_band_metadata_is_channel_sized(tmp_path):
    """Prepared out of core, the optimized kernels keep per-channel metadata; the GEMM operand is rebuilt from
    the pool's filter tile, and a filter bigger than the weights pool still streams."""
    model = one_op_model("CONV_2D", 16, 16, 32, 96, (3, 3), (1, 1), (1, 1), "SAME", "RELU", 5, 1)
    x = np.random.default_rng(1).integers(-128, 128, size=(1, 16, 16, 32), dtype=np.int8)
    with mi.Interpreter(model, arena=24_000, backing=tmp_path / "a.img", flash=0, pools=(2, 1, 2)) as it:
        data = it.runtime.plans[0].data
        assert isinstance(data, FastConvData) and data.plan is None
        assert data.bands.ranges[0].shape == (96,) and data.bands.constant.shape == (96,)
        it.set_input(x)
        it.invoke()
        assert np.array_equal(it.get_output(), in_memory(model, x))
        tiles = it.profile[0].tiles
        assert any(len([e for e in t.io if e[0] == "compute"]) > 1 for t in tiles)   # channel tiles streamed
    dw = one_op_model("DEPTHWISE_CONV_2D", 64, 64, 8, 8, (3, 3), (2, 2), (1, 1), "SAME", "NONE", 0, 2)
    need = smallest_out_of_core_arena(dw, tmp_path / "b.img", flash=0)
    with mi.Interpreter(dw, arena=need, backing=tmp_path / "b.img", flash=0) as it:
        assert isinstance(it.runtime.plans[0].data, OptimizedDepthwiseData)
        assert it.runtime.plans[0].data.bands is not None


def fc_model(accum: int, depth: int, zp: int, act: str, per_channel: bool, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.add_tensor("x", (1, accum), "INT8", scale=0.05, zero_point=zp)
    wt = rng.integers(-128, 128, size=(depth, accum), dtype=np.int8)
    scales = rng.uniform(0.0005, 0.004, depth if per_channel else 1).astype(np.float32)
    wi = b.add_tensor("w", (depth, accum), "INT8", data=wt, scale=scales if per_channel else float(scales[0]),
                      zero_point=0, axis=0)
    bscale = (0.05 * scales).astype(np.float32)
    bi = b.add_tensor("b", (depth,), "INT32", data=rng.integers(-30000, 30000, depth).astype(np.int32),
                      scale=bscale if per_channel else float(bscale[0]), zero_point=0)
    y = b.add_tensor("y", (1, depth), "INT8", scale=0.5, zero_point=-7)
    b.add_op("FULLY_CONNECTED", [x, wi, bi], [y], fused_activation_function=act)
    # then a second, independent branch: a 2x2 max pool on a 16x16 image of about accum bytes per row, so the in-memory
    # plan needs about 20 x accum bytes while out of core the pool runs in small row bands
    c = -(-accum // 16)
    z = b.add_tensor("z", (1, 16, 16, c), "INT8", scale=0.05, zero_point=0)
    pooled = b.add_tensor("pooled", (1, 8, 8, c), "INT8", scale=0.05, zero_point=0)
    b.add_op("MAX_POOL_2D", [z], [pooled], padding="VALID", stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    b.inputs, b.outputs = [x, z], [y, pooled]
    return b.build()


@settings(max_examples=25, deadline=None)
@given(accum=st.integers(500, 3000), depth=st.integers(1, 70), zp=st.integers(-128, 127),
       act=st.sampled_from(["NONE", "RELU", "RELU6"]), per_channel=st.booleans(), seed=st.integers(0, 2**31 - 1),
       group=st.integers(1, 80), length=st.integers(1, 1100))
def test_fully_connected_band_matches_the_reference(tmp_path_factory, accum, depth, zp, act, per_channel, seed,
                                                    group, length):
    """Out of core, a FULLY_CONNECTED whose filter streams in channel tiles: the optimized band function (groups
    of any size, float32 slices of any length up to the exact bound, the remainder slice) against the reference in
    memory, bit for bit."""
    model = fc_model(accum, depth, zp, act, per_channel, seed)
    x = np.random.default_rng(seed).integers(-128, 128, size=(1, accum), dtype=np.int8)
    path = tmp_path_factory.mktemp("sd") / "sd.img"
    need = smallest_out_of_core_arena(model, path, flash=0, pools=(1, 1, 1))
    assert need < mi.Interpreter(model).arena_used_bytes
    with mi.Interpreter(model, arena=need, backing=path, flash=0, pools=(1, 1, 1)) as it:
        data = it.runtime.plans[0].data
        assert isinstance(data, FastFullyConnectedData) and data.bands is not None and data.plan is None
        data.bands.group = group
        data.bands.slice = min(data.bands.slice, length)
        it.set_input(x, 0)
        it.invoke()
        assert it.profile[0].mode == "channels" and len(it.profile[0].tiles[0].io) > 2     # the filter streamed
        expected = mi.Interpreter(model, optimized=False)
        expected.set_input(x, 0)
        expected.invoke()
        assert np.array_equal(it.get_output(0), expected.get_output(0))
