"""The merged requantization epilogue (kernels/optimized/_epilogue.py) against quant.mbqm + zp + clamp.

* Adversarial, on the zoo: for every channel of every CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED layer of every
  model in ../shared/models, accumulators at -3..+3 around every rounding boundary of MBQM inside the channel's
  accumulator range (plus the range's ends and 0). Both the epilogue and the reference are monotone in the
  accumulator, so agreeing on both sides of every boundary means agreeing everywhere in the range.
* Hypothesis: random multipliers/shifts (including left shifts and tiny scales), zero points, activation ranges and
  accumulator ranges (including ranges beyond int32, which wrap), boundary points found by bisection on mbqm.
* Unit cases for each path: merged (signed/unsigned, uniform/per-channel), constant channels, the int64 fallback.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp import Interpreter, UnsupportedOpError
from microinterp.kernels._qutil import unpack_int4
from microinterp.kernels._weight_stats import ChannelStats, accumulator_range
from microinterp.kernels.optimized._epilogue import Epilogue, gemm_weights
from microinterp.quant import mbqm, quantize_multiplier, wrap_int32

from ...conftest import MODELS_DIR

ZOO = sorted(MODELS_DIR.glob("*.tflite")) if MODELS_DIR.exists() else []


def reference(x: np.ndarray, m, s, zp: int, lo: int, hi: int) -> np.ndarray:
    """TFLM: the int32 accumulator (wrapped), double-rounding MBQM, + zp, clamp."""
    return np.clip(mbqm(wrap_int32(x), m, s) + zp, lo, hi)


def check(ep: Epilogue, x: np.ndarray, m, s, zp: int, lo: int, hi: int) -> None:
    """Run the epilogue on int64 accumulators ``x`` ``[P, C]`` (as float64, and as float32 when exact)."""
    want = reference(x, np.asarray(m, np.int64), np.asarray(s, np.int64), zp, lo, hi)
    dtypes = [np.float64] + ([np.float32] if np.abs(x).max(initial=0) < 1 << 24 else [])
    for dtype in dtypes:
        out = np.empty(x.shape, np.int8)
        ep(x.astype(dtype), out)
        bad = np.argwhere(out != want)
        assert bad.size == 0, (f"{len(bad)} mismatches, first at {tuple(bad[0])}: acc {x[tuple(bad[0])]} -> "
                               f"{out[tuple(bad[0])]}, want {want[tuple(bad[0])]} ({dtype.__name__}, "
                               f"kinds {ep.kinds()})")


# -- boundaries ---------------------------------------------------------------------------------------------------------
def layer_boundaries(m: np.ndarray, s: np.ndarray, x_lo: np.ndarray, x_hi: np.ndarray,
                     keep: tuple[int, int] | None, cap: int | None) -> tuple[np.ndarray, np.ndarray, int]:
    """The rounding boundaries of every channel's MBQM inside its range ``[x_lo, x_hi]``: for each level ``v``
    above ``MBQM(x_lo)``, the smallest accumulator ``t`` with ``MBQM(t) >= v``. Returns (t, channel of t, number of
    boundaries in range). Channels whose range wraps (TFLM's int32 accumulator or MBQM's left shift) are not
    monotone and have none here (the random-accumulator test covers them). With ``cap``, a channel with more boundaries keeps those of the levels in ``keep`` (the
    clamp window, where the output changes), its first and last 8 and ``cap`` evenly spaced others.

    Each ``t`` is estimated from the real multiplier and then walked to the exact boundary with quant.mbqm
    (``MBQM(t) >= v > MBQM(t - 1)`` is asserted), so the test does not rely on the epilogue's algebra."""
    v0, v1 = mbqm(x_lo, m, s), mbqm(x_hi, m, s)
    monotone = np.maximum(np.abs(x_lo), np.abs(x_hi)) < np.right_shift(1 << 31, np.clip(s, 0, 31))   # no wrap
    levels, chans = [], []
    for c in range(len(m)):
        lv = np.arange(v0[c] + 1, v1[c] + 1, dtype=np.int64) if monotone[c] else np.zeros(0, np.int64)
        if cap is not None and lv.size > cap + 16:
            pick = [lv[:8], lv[-8:], lv[np.linspace(0, lv.size - 1, cap).astype(np.int64)]]
            if keep is not None:
                pick.append(lv[(lv >= keep[0]) & (lv <= keep[1])])
            lv = np.unique(np.concatenate(pick))
        levels.append(lv)
        chans.append(np.full(lv.size, c))
    lv, ch = np.concatenate(levels), np.concatenate(chans)
    total = int((v1 - v0)[monotone].sum())
    if lv.size == 0:
        return lv, ch, total
    mc, sc, lo_c, hi_c = m[ch], s[ch], x_lo[ch], x_hi[ch]
    real = mc * np.exp2(sc.astype(np.float64) - 31)
    t = np.clip(np.ceil((lv - 0.5) / real), lo_c + 1, hi_c).astype(np.int64)
    for _ in range(16):
        up = mbqm(t, mc, sc) < lv
        down = (t - 1 >= lo_c) & (mbqm(t - 1, mc, sc) >= lv)
        if not (up.any() or down.any()):
            break
        t = np.clip(t + up - down, lo_c + 1, hi_c)
    assert (mbqm(t, mc, sc) >= lv).all() and (mbqm(t - 1, mc, sc) < lv).all(), "boundary search did not converge"
    return t, ch, total


def check_layer(m, s, zp: int, lo: int, hi: int, x_lo: np.ndarray, x_hi: np.ndarray,
                cap: int | None = 64) -> tuple[int, int, int]:
    """The adversarial check of one layer's epilogue: accumulators at -3..+3 around each boundary, the range ends
    and 0 (clipped into each channel's range). Returns (accumulators, boundaries tested, boundaries in range)."""
    channels = len(x_lo)
    m = np.broadcast_to(np.asarray(m, np.int64), (channels,))
    s = np.broadcast_to(np.asarray(s, np.int64), (channels,))
    ep = Epilogue(m, s, zp, lo, hi, (x_lo, x_hi))
    t, ch, total = layer_boundaries(m, s, x_lo, x_hi, (lo - zp - 2, hi - zp + 2), cap)
    near = (t[:, None] + np.arange(-3, 4)).reshape(-1)
    ends = np.stack([x_lo, x_lo + 1, x_lo + 2, x_hi - 2, x_hi - 1, x_hi, np.zeros(channels, np.int64)], axis=1)
    pts = np.concatenate([near, ends.reshape(-1)])
    pch = np.concatenate([np.repeat(ch, 7), np.repeat(np.arange(channels), 7)])
    pts = np.clip(pts, x_lo[pch], x_hi[pch])
    order = np.lexsort((pts, pch))                     # ragged per-channel lists, concatenated
    pts, pch = pts[order], pch[order]
    count = np.bincount(pch, minlength=channels)
    start = np.concatenate([[0], np.cumsum(count)[:-1]])
    rows = 1 << max(10, 22 - int(channels).bit_length())
    for r0 in range(0, int(count.max()), rows):         # row chunks of the padded [points, C] matrix
        r = np.arange(r0, min(r0 + rows, int(count.max())))[:, None]
        check(ep, pts[start + np.minimum(r, count - 1)], m, s, zp, lo, hi)
    return int(pts.size), int(t.size), total


# -- the zoo ------------------------------------------------------------------------------------------------------------
def layer_parameters(interp: Interpreter, op, data):
    """(multipliers, shifts, zp_out, act_min, act_max, weights [C, K], zp_in, bias) of a quantized int8 layer."""
    tensors = interp.model.main.tensors
    bias_t = tensors[op.inputs[2]] if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
    if op.key == "FULLY_CONNECTED":
        if data.type_name != "INT8" or data.weights is None:
            return None
        w = data.weights.T.astype(np.int64)
        return (data.multiplier, data.shift, data.output_offset, data.act_min, data.act_max, w,
                -data.input_offset, None if bias_t is None else bias_t.data.reshape(-1)[:w.shape[0]])
    if data.kind != "int8":
        return None
    w = tensors[op.inputs[1]]
    if data.int4_packed is not None:
        wv = unpack_int4(data.int4_packed, np.empty(data.filter_shape, np.int8))
    else:
        wv = w.data
    if op.key == "CONV_2D":
        w2 = wv.reshape(wv.shape[0], -1)
    else:   # DEPTHWISE_CONV_2D: filter [1, KH, KW, C_out], channel oc reads column oc
        w2 = wv.reshape(-1, wv.shape[-1]).T
    return (data.multipliers, data.shifts, data.output_offset, data.act_min, data.act_max, w2.astype(np.int64),
            -data.input_offset, None if bias_t is None else bias_t.data)


def zoo_layers(path, cap: int | None) -> None:
    try:
        interp = Interpreter(path, optimized=False)
    except UnsupportedOpError as e:      # the audio front end's signal-library ops (issue 12)
        pytest.skip(f"{path.stem}: {e}")
    layers = points = tested = total = 0
    for op, data in zip(interp.operators, interp.runtime.op_data):
        if op.key not in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            continue
        params = layer_parameters(interp, op, data)
        if params is None:
            continue
        m, s, zp, lo, hi, w, zp_in, bias = params
        x_lo, x_hi = accumulator_range(w, zp_in, bias)
        p, t, n = check_layer(m, s, int(zp), int(lo), int(hi), x_lo, x_hi, cap)
        layers, points, tested, total = layers + 1, points + p, tested + t, total + n
    print(f"\n{path.stem}: {layers} layers, {tested} of {total} boundaries, {points} accumulators checked")


@pytest.mark.parametrize("path", ZOO, ids=[p.stem for p in ZOO])
def test_zoo_every_channel_at_sampled_boundaries(path):
    """Every boundary whose level is in the clamp window, the first/last 8 and 16 evenly spaced others."""
    zoo_layers(path, cap=16)


@pytest.mark.slow
@pytest.mark.parametrize("path", ZOO, ids=[p.stem for p in ZOO])
def test_zoo_every_channel_at_every_boundary(path):
    zoo_layers(path, cap=None)


def test_zoo_present_or_skipped():
    if not ZOO:
        pytest.skip(f"model zoo not available ({MODELS_DIR})")


# -- hypothesis -----------------------------------------------------------------------------------------------------------
@st.composite
def layers(draw):
    channels = draw(st.integers(1, 6))
    log2 = draw(st.floats(-30, 4))
    spread = draw(st.sampled_from([0.0, 0.0, 1.0, 4.0]))
    reals = [2.0 ** (log2 + draw(st.floats(-spread, spread))) for _ in range(channels)]
    if draw(st.booleans()):     # short multipliers (1, 1.5, 1.25 times a power of two): rounding ties are frequent
        reals = [draw(st.sampled_from([1.0, 1.5, 1.25])) * 2.0 ** round(log2 + draw(st.floats(-spread, spread)))
                 for _ in range(channels)]
    if draw(st.integers(0, 9)) == 0:
        reals[0] = 0.0                                          # a zero multiplier
    pairs = [quantize_multiplier(r) for r in reals]
    zp = draw(st.sampled_from([-128, 127, 0, -5, 33, draw(st.integers(-128, 127))]))
    act = draw(st.sampled_from(["none", "relu", "window"]))
    if act == "none":
        lo, hi = -128, 127
    elif act == "relu":
        lo, hi = zp, draw(st.sampled_from([127, min(127, zp + draw(st.integers(0, 200)))]))
    else:
        lo = max(-128, zp - draw(st.integers(0, 80)))
        hi = min(127, zp + draw(st.integers(0, 80)))
    mag = draw(st.integers(12, 26) | st.integers(0, 33))       # mostly real-layer ranges, sometimes anything
    centre = draw(st.integers(-(1 << mag), 1 << mag))
    half = draw(st.integers(0, 1 << mag))
    x_lo = np.array([centre - half - draw(st.integers(0, 3)) for _ in range(channels)], np.int64)
    x_hi = np.array([centre + half + draw(st.integers(0, 3)) for _ in range(channels)], np.int64)
    return [p[0] for p in pairs], [p[1] for p in pairs], zp, lo, hi, x_lo, x_hi


@given(layers())
def test_random_layers_at_boundaries(layer):
    m, s, zp, lo, hi, x_lo, x_hi = layer
    check_layer(m, s, zp, lo, hi, x_lo, x_hi)


@given(layers(), st.integers(0, 2**32 - 1))
def test_random_layers_random_accumulators(layer, seed):
    m, s, zp, lo, hi, x_lo, x_hi = layer
    rng = np.random.default_rng(seed)
    x = np.floor(x_lo + rng.random((64, len(x_lo))) * (x_hi - x_lo + 1)).astype(np.int64)
    ep = Epilogue(m, s, zp, lo, hi, (x_lo, x_hi))
    check(ep, np.minimum(x, x_hi), m, s, zp, lo, hi)


# -- the paths ------------------------------------------------------------------------------------------------------------
def _layer(scales, zp, lo, hi, bound):
    pairs = [quantize_multiplier(float(r)) for r in scales]
    m, s = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    return m, s, Epilogue(m, s, zp, lo, hi, bound)


@pytest.mark.parametrize("zp, lo, hi, uniform", [(-3, -128, 127, True), (-3, -128, 127, False),
                                                  (-3, -3, 127, False), (20, 10, 40, False)])
def test_merged_paths(zp, lo, hi, uniform):
    """Signed (sigma term) and unsigned (RELU) layers, uniform and per-channel rounding exponents."""
    scales = [1e-3] * 5 if uniform else [1e-3, 3e-4, 7e-3, 0.2, 1.5]
    m, s, ep = _layer(scales, zp, lo, hi, 1 << 20)
    assert ep.kinds() == {"merged": 5, "constant": 0, "int64": 0}
    bound = np.full(5, 1 << 20)
    check_layer(m, s, zp, lo, hi, -bound, bound, cap=2000)
    x = np.random.default_rng(0).integers(-(1 << 20), 1 << 20, (4000, 5))
    x[:3] = [[0] * 5, [-1] * 5, [1] * 5]
    check(ep, x, m, s, zp, lo, hi)


def test_constant_channels():
    """A pruned channel (zero weights, a large bias) and a tiny multiplier: one output value over the whole range."""
    m, s, ep = _layer([1e-3, 1e-12, 1e-3], 5, -128, 127, (np.array([-10**5, -50, 2**30]), np.array([10**5, 50, 2**30])))
    assert ep.kinds() == {"merged": 1, "constant": 2, "int64": 0}
    x = np.array([[-10**5, -50, 2**30], [0, 0, 2**30], [10**5, 50, 2**30]])
    check(ep, x, m, s, 5, -128, 127)


def test_int64_fallback_channels():
    """Channels the float64 rounding cannot take: a rounding exponent above 21 with a varying output, and a range
    beyond int32 (TFLM's accumulator wraps)."""
    m, s, ep = _layer([1e-3, 2.0**-25, 1e-3], 0, -128, 127,
                      (np.array([-1000, -(1 << 33), -(1 << 33)]), np.array([1000, 1 << 33, 1 << 33])))
    assert ep.kinds() == {"merged": 1, "constant": 0, "int64": 2}
    rng = np.random.default_rng(1)
    x = np.stack([rng.integers(-1000, 1001, 500), rng.integers(-(1 << 33), 1 << 33, 500),
                  rng.integers(-(1 << 33), 1 << 33, 500)], axis=1)
    check(ep, x, m, s, 0, -128, 127)


@pytest.mark.parametrize("zp, lo, hi", [(-3, 10, 40), (50, -128, 20), (0, 40, 10)])
def test_zero_point_outside_the_clamp_range(zp, lo, hi):
    """Odd quantization the float64 path does not cover: every channel takes the int64 path (np.clip with
    ``lo > hi`` gives ``hi``, as TFLM's max-then-min)."""
    m, s, ep = _layer([1e-3, 3e-3], zp, lo, hi, 1 << 16)
    assert ep.kinds()["int64"] == 2
    check_layer(m, s, zp, lo, hi, np.full(2, -(1 << 16)), np.full(2, 1 << 16))


def test_left_shift_multiplier():
    """Effective scales above 1 (MBQM's left shift): merged while ``B 2^L`` fits int32, int64 beyond."""
    m, s, ep = _layer([3.0, 40.0], -10, -128, 127, (np.array([-1000, -(1 << 27)]), np.array([1000, 1 << 27])))
    assert ep.kinds()["merged"] == 1
    x = np.stack([np.arange(-1000, 1001), np.linspace(-(1 << 27), 1 << 27, 2001).astype(np.int64)], axis=1)
    check(ep, x, m, s, -10, -128, 127)


def test_accumulator_range_and_gemm_weights():
    w = np.array([[1, -2, 3], [0, 0, 0]])
    lo, hi = accumulator_range(w, -128, np.array([10, -7]))
    # x - zp in [0, 255]: channel 0 spans [-2*255, 4*255] + 10
    assert lo.tolist() == [10 - 510, -7] and hi.tolist() == [10 + 1020, -7]
    g = gemm_weights(w, np.array([5, 6]), np.array([False, True]))
    assert g.dtype == np.float32 and g.tolist() == [[1, 0], [-2, 0], [3, 0], [5, 0]]
    big = np.full((1, 1 << 10), 127)
    assert gemm_weights(big, np.array([0])).dtype == np.float32          # 128 * 127 * 1024 < 2^24
    assert gemm_weights(np.full((1, 1 << 11), 127), np.array([0])).dtype == np.float64


@pytest.mark.parametrize("zp,lo", [(0, -128), (-128, -128), (5, 5)])
def test_fold(zp, lo):
    """:meth:`Epilogue.fold`: the folded operand's product is ``T`` (``finish`` gives what the epilogue gives on the
    raw accumulators, over the whole range of 20 taps); refused when ``M' 128 sum |w|`` reaches 2^53 (600 taps of
    127 with ``M' = 2^30``) though the layer itself is merged."""
    rng = np.random.default_rng(12)
    w = rng.choice([-127, 127], (20, 3)).astype(np.int64)
    operand = np.concatenate([w, [[7, -9000, 0]]])
    m, s = np.array([1 << 30, 1 << 30, (1 << 31) - 1]), np.array([-10, -3, 2])
    ep = Epilogue(m, s, zp, lo, 127, accumulator_range(w.T, 0, operand[-1]))
    folded = ep.fold(operand)
    assert folded is not None
    x = np.concatenate([rng.integers(-128, 128, (200, 20)), np.full((1, 20), -128), np.full((1, 20), 127),
                        np.where(w.T > 0, 127, -128), np.where(w.T > 0, -128, 127)])
    cols = np.concatenate([x, np.ones((len(x), 1), np.int64)], axis=1)
    want, got = np.empty((len(x), 3), np.int8), np.empty((len(x), 3), np.int8)
    ep((cols @ operand).astype(np.float64), want)
    ep.finish(cols.astype(np.float64) @ folded, got)
    np.testing.assert_array_equal(got, want)
    big = np.full((601, 1), 127, np.int64)
    ep_big = Epilogue(np.array([1 << 30]), np.array([-10]), zp, lo, 127, accumulator_range(big[:-1].T, 0, big[-1]))
    assert ep_big.kinds()["merged"] == 1 and ep_big.fold(big) is None


@pytest.mark.parametrize(("channels", "k"), [(1, 1), (7, 3), (300, 1000), (3, 200_000)])
def test_channel_stats_equal_the_whole_filter_figures(channels, k):
    """ChannelStats works a slice of channels at a time (several slices for the larger cases): its figures are the
    ones computed on the whole filter at once."""
    rng = np.random.default_rng(channels + k)
    w = rng.integers(-128, 128, size=(channels, k), dtype=np.int8)
    bias = rng.integers(-5000, 5000, size=channels).astype(np.int64)
    stats = ChannelStats(w, -3, bias)
    lo, hi = accumulator_range(w.astype(np.int64), -3, bias)
    assert np.array_equal(stats.lo, lo) and np.array_equal(stats.hi, hi)
    assert np.array_equal(stats.abs_sum, np.abs(w.astype(np.int64)).sum(axis=1))
    assert np.array_equal(stats.total, w.astype(np.int64).sum(axis=1))
    assert stats.abs_max == int(np.abs(w.astype(np.int64)).max())
