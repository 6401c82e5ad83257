"""Ops whose one output row reaches far: a dilated depthwise convolution reads only its taps' rows (runs with gaps
between them), a global average pool sums bands of input rows into running totals, and the pools follow what the
ops need when the default shares leave one short. Out of core equals the in-memory run in every case."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import microinterp as mi
from microinterp.errors import ArenaOverflowError
from microinterp.kernels.padding import input_row_runs_for, input_rows_for
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.models import QuantNet

from .conftest import arena_between, in_memory, random_input, smallest_out_of_core_arena


def _dilated_net(dilation: int, channels: int = 64, size: int = 24, pool: bool = True) -> bytes:
    net = QuantNet((1, size, size, 3), seed=dilation, name=f"dilated {dilation}")
    net.conv(channels, 3)
    net.depthwise(3, dilation=dilation)
    net.conv(8, 1)
    if pool:
        net.pool("AVERAGE", size, size)     # one output row: the whole image per output
    net.flatten()
    net.fc(5, act="NONE")
    return net.build()


def _float_dilated(dilation: int, seed: int = 0, size: int = 20, channels: int = 48) -> tuple[bytes, np.ndarray]:
    """A float32 depthwise convolution (dilated, SAME) then a global average pool; an input with a few infinities
    and a filter with one (a tap outside the image must be skipped, not multiplied by zero)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder(description="float dilated")
    x = b.add_tensor("x", (1, size, size, channels), "FLOAT32")
    w = rng.standard_normal((1, 3, 3, channels)).astype(np.float32)
    w[0, 0, 0, 0] = np.inf
    wi = b.add_tensor("w", w.shape, "FLOAT32", data=w)
    bi = b.add_tensor("b", (channels,), "FLOAT32", data=rng.standard_normal(channels).astype(np.float32))
    y = b.add_tensor("y", (1, size, size, channels), "FLOAT32")
    b.add_op("DEPTHWISE_CONV_2D", [x, wi, bi], [y], padding="SAME", stride_w=1, stride_h=1, depth_multiplier=1,
             fused_activation_function="NONE", dilation_w_factor=dilation, dilation_h_factor=dilation)
    z = b.add_tensor("z", (1, 1, 1, channels), "FLOAT32")
    b.add_op("AVERAGE_POOL_2D", [y], [z], padding="VALID", stride_w=1, stride_h=1, filter_width=size,
             filter_height=size, fused_activation_function="NONE")
    b.inputs, b.outputs = [x], [y, z]
    data = rng.standard_normal((1, size, size, channels)).astype(np.float32)
    data[0, size // 2, 3, 1] = -np.inf
    data[0, 1, 1, 2] = np.nan
    return b.build(), data


def _outputs(it: mi.Interpreter, x: np.ndarray) -> list[np.ndarray]:
    it.set_input(x)
    it.invoke()
    return [it.get_output(i).copy() for i in range(it.num_outputs)]


@pytest.mark.parametrize(("y0", "y1", "stride", "dilation"), [(5, 6, 1, 4), (5, 7, 1, 4), (0, 1, 1, 4),
                                                                (0, 3, 1, 2), (7, 8, 2, 2), (3, 6, 2, 2)])
def test_the_row_runs_are_the_taps_rows(y0, y1, stride, dilation):
    pad, size, k = dilation, 16, 3
    runs = input_row_runs_for(y0, y1, stride, dilation, k, pad, size)
    want = sorted({oy * stride - pad + t * dilation for oy in range(y0, y1) for t in range(k)} & set(range(size)))
    got = [r for lo, hi in runs for r in range(lo, hi)]
    assert set(want) <= set(got) and got == sorted(set(got))
    lo, hi = input_rows_for(y0, y1, stride, dilation, k, pad, size)
    assert lo <= runs[0][0] and runs[-1][1] <= hi
    if stride == 1:
        assert got == want


@pytest.mark.parametrize("dilation", [2, 4])
def test_a_dilated_depthwise_reads_only_its_taps_rows(tmp_path, dilation):
    model = _dilated_net(dilation)
    need = smallest_out_of_core_arena(model, tmp_path / "n.img")
    x = random_input(model, dilation)
    with mi.Interpreter(model, arena=need, backing=tmp_path / "sd.img") as it:
        assert it.out_of_core
        assert np.array_equal(_outputs(it, x)[0], in_memory(model, x))
        dw = next(r for r in it.profile if r.op == "DEPTHWISE_CONV_2D")
        row = 24 * 64            # one input row of the depthwise convolution (int8)
        assert all(t.rows[1] - t.rows[0] < dilation for t in dw.tiles)      # bands lower than the dilation
        assert max(t.sd_read_payload for t in dw.tiles) <= 3 * (dw.tiles[0].rows[1] - dw.tiles[0].rows[0]) * row
    hull = (2 * dilation + 1) * row     # what the contiguous band of one output row would take
    assert need < mi.Interpreter(model).arena_used_bytes
    with pytest.raises(ArenaOverflowError):     # the hull of one row does not fit what the taps' rows fit in
        mi.Interpreter(model, arena=need, backing=tmp_path / "p.img", pools=(1, 1, 1), tile=hull - 16)


@pytest.mark.parametrize("dilation", [2, 3])
def test_float_dilated_depthwise_and_global_pool_out_of_core(tmp_path, dilation):
    model, x = _float_dilated(dilation)
    want = _outputs(mi.Interpreter(model, optimized=False), x)
    need = smallest_out_of_core_arena(model, tmp_path / "n.img")
    with mi.Interpreter(model, arena=need, backing=tmp_path / "sd.img") as it:
        got = _outputs(it, x)
        modes = {r.op: r.mode for r in it.profile}
    assert modes == {"DEPTHWISE_CONV_2D": "rows", "AVERAGE_POOL_2D": "reduce"}
    for a, b in zip(got, want):
        assert np.array_equal(a, b, equal_nan=True)
        assert np.array_equal(np.signbit(a), np.signbit(b))


def test_a_global_average_pool_sums_bands_of_rows(tmp_path):
    net = QuantNet((1, 40, 40, 3), seed=9)
    net.conv(32, 3)
    net.pool("AVERAGE", 40, 40)
    net.flatten()
    net.fc(4, act="NONE")
    model = net.build()
    need = smallest_out_of_core_arena(model, tmp_path / "n.img")
    assert need < 40 * 32 * 40         # the whole pooled tensor would not fit
    x = random_input(model, 3)
    with mi.Interpreter(model, arena=need, backing=tmp_path / "sd.img") as it:
        assert np.array_equal(_outputs(it, x)[0], in_memory(model, x))
        pool = next(r for r in it.profile if r.op == "AVERAGE_POOL_2D")
        assert pool.mode == "reduce" and len(pool.tiles) > 1


def test_pools_follow_the_ops_needs_when_the_default_shares_do_not_fit(tmp_path):
    model = _dilated_net(4, channels=96, pool=False)
    need = smallest_out_of_core_arena(model, tmp_path / "n.img")
    x = random_input(model, 1)
    with mi.Interpreter(model, arena=need, backing=tmp_path / "a.img") as it:
        pools = it.runtime.pools
        assert np.array_equal(_outputs(it, x)[0], in_memory(model, x))
    assert pools.weights < pools.input          # not the default 1 : 2 : 1
    with pytest.raises(ArenaOverflowError, match="without pools=") as e:
        mi.Interpreter(model, arena=need, backing=tmp_path / "b.img", pools=(1, 2, 1))
    assert e.value.needed_arena > need          # the fixed shares need more
    with pytest.raises(ArenaOverflowError, match=r"the ops need pools of \d+ \(input, for op \d+ \(\w+\)\)") as e:
        mi.Interpreter(model, arena=need - 1, backing=tmp_path / "c.img")
    assert e.value.needed_arena == need


def _random_dilated_net(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    size = int(rng.integers(12, 40))
    net = QuantNet((1, size, size, int(rng.integers(1, 4))), seed=seed, name=f"dilated net {seed}")
    net.conv(int(rng.integers(8, 48)), 3)
    for _ in range(int(rng.integers(1, 3))):
        net.depthwise(3, dilation=int(rng.integers(1, 5)), padding="SAME")
    if rng.random() < 0.5:
        net.conv(int(rng.integers(4, 16)), 1)
    h = net.shape[1]
    net.pool("AVERAGE", h, h)        # a global average pool
    net.flatten()
    net.fc(int(rng.integers(2, 8)), act="NONE")
    return net.build()


@given(seed=st.integers(0, 2**31 - 1), where=st.floats(0.0, 1.0), optimized=st.booleans())
@settings(max_examples=25, deadline=None)
def test_random_dilated_nets_with_fitted_pools_match_in_memory(tmp_path_factory, seed, where, optimized):
    """Random dilated depthwise stacks ending in a global pool, at any arena between the smallest the pager names
    (pools fitted to the ops' needs) and the in-memory plan, with either kernel set's band functions."""
    model = _random_dilated_net(seed)
    path = tmp_path_factory.mktemp("sd") / "sd.img"
    arena = arena_between(model, path, where)
    x = random_input(model, seed)
    with mi.Interpreter(model, arena=arena, backing=path, optimized=optimized) as it:
        assert it.out_of_core
        assert np.array_equal(_outputs(it, x)[0], in_memory(model, x))


def test_a_global_int16_pool_wraps_its_sum_as_tflm_does(tmp_path):
    """260 x 260 taps of 32767: the int32 accumulator wraps in TFLM (and in memory); the bands' running totals wrap
    the same way."""
    h = 260
    b = ModelBuilder()
    x = b.add_tensor("x", (1, h, h, 2), "INT16", scale=0.01, zero_point=0)
    y = b.add_tensor("y", (1, 1, 1, 2), "INT16", scale=0.01, zero_point=0)
    b.add_op("AVERAGE_POOL_2D", [x], [y], padding="VALID", stride_w=1, stride_h=1, filter_width=h, filter_height=h,
             fused_activation_function="NONE")
    b.inputs, b.outputs = [x], [y]
    model = b.build()
    v = np.full((1, h, h, 2), 32767, np.int16)
    v[..., 1] = -32768
    want = _outputs(mi.Interpreter(model), v)[0]
    with mi.Interpreter(model, arena=60_000, backing=tmp_path / "sd.img") as it:
        got = _outputs(it, v)[0]
        assert [r.mode for r in it.profile] == ["reduce"]
    assert np.array_equal(got, want) and want.ravel().tolist() == [-30768, 30767]
