"""TFLM's float32 dot products (``kernels/_float_dot.py``): the products summed one after the other in float32 from
``0.f``, for every shape the kernels use (one output, wide layers, blocks of taps), special values included; and a
float CONV_2D with NaN, infinities and signed zeros in its input and filter, bit for bit against the TFLM wheel."""

from __future__ import annotations

import platform

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.kernels import _float_dot
from microinterp.kernels._float_dot import sequential_dot
from microinterp.testing.tflm import TflmRunner

from .single_op_models import T, assert_bitwise_matches_tflm, single_op, with_specials


def _scalar(cols: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The C loop, one output at a time."""
    out = np.zeros((cols.shape[0], w.shape[0]), np.float32)
    with np.errstate(all="ignore"):
        for n in range(cols.shape[0]):
            for c in range(w.shape[0]):
                total = np.float32(0.0)
                for k in range(cols.shape[1]):
                    total = np.float32(total + np.float32(cols[n, k] * w[c, k]))
                out[n, c] = total
    return out


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal bits, NaN for NaN: which NaN an invalid operation makes (x86 gives the negative default NaN) is the
    hardware's, and NumPy scalars differ from its vector code there; the wheel tests below compare NaN bits too."""
    return bool(np.all((a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))))


def _out_hw(h: int, w: int, k: int, stride: int, padding: str) -> tuple[int, int]:
    """Output height and width of a k x k window with this stride and padding (TFLM's formula)."""
    if padding == "SAME":
        return -(-h // stride), -(-w // stride)
    return (h - k) // stride + 1, (w - k) // stride + 1


def _values(rng, shape, specials: bool) -> np.ndarray:
    x = (rng.normal(size=shape) * 10.0 ** rng.integers(-3, 8, size=shape)).astype(np.float32)
    return with_specials(x) if specials else x


def test_numpy_reduces_rows_in_order():
    assert _float_dot.REDUCE_ROWS_IN_ORDER      # else the kernels fall back to the (slower) tap loop


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 9), c=st.integers(1, 6), k=st.integers(0, 40), specials=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_sequential_dot_is_the_c_loop(n, c, k, specials, seed):
    rng = np.random.default_rng(seed)
    cols, w = _values(rng, (n, k), specials), _values(rng, (c, k), False)
    assert _same(sequential_dot(cols, w), _scalar(cols, w))


@pytest.mark.parametrize("n,c,k", [(1, 1, 300), (3, 700, 5), (2, 3, 5000), (400, 2, 50)])
def test_blocks_and_the_tap_loop_agree_with_the_c_loop(n, c, k, monkeypatch):
    """One output (summed tap by tap: a reduction over one column would be pairwise), blocks smaller than K, many
    pixels and few channels (laid out pixels innermost), and the wide-output tap loop, all the C loop's bits."""
    rng = np.random.default_rng(n * c * k)
    cols, w = _values(rng, (n, k), True), _values(rng, (c, k), False)
    expected = _scalar(cols, w)
    monkeypatch.setattr(_float_dot, "EINSUM_IN_ORDER", False)        # the blocks, as where einsum fuses
    monkeypatch.setattr(_float_dot, "BLOCK_ELEMENTS", 64)
    assert _same(sequential_dot(cols, w), expected)
    monkeypatch.setattr(_float_dot, "WIDE", 1)
    assert _same(sequential_dot(cols, w), expected)


def test_numpy_einsum_adds_in_order_where_its_baseline_has_no_fma():
    """NumPy builds einsum's inner loop for its baseline only: x86-64 wheels (baseline without FMA) add each rounded
    product; a baseline with FMA3 (or AArch64) fuses them, and the probe must then say so."""
    from numpy._core import _multiarray_umath
    fma = {"FMA3", "AVX2", "X86_V3", "X86_V4", "AVX512F", "AVX512_SKX"} & set(_multiarray_umath.__cpu_baseline__)
    if platform.machine().lower() in ("x86_64", "amd64") and not fma:
        assert _float_dot.EINSUM_IN_ORDER


@pytest.mark.skipif(not _float_dot.EINSUM_IN_ORDER, reason="this NumPy's einsum fuses or reorders: blocks are used")
@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 12), c=st.integers(1, 9), k=st.integers(1, 60), layout=st.sampled_from(["cn", "nc"]),
       specials=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_both_einsum_layouts_are_the_c_loop(n, c, k, layout, specials, seed):
    """Every layout :func:`einsum_layout` may choose, on every shape it may choose it for (its innermost output axis
    longer than 1), gives the C loop's bits -- NaN outputs after the x86 repair, as the kernels call it."""
    if (n if layout == "cn" else c) < 2:
        return
    rng = np.random.default_rng(seed)
    cols, w = _values(rng, (n, k), specials), _values(rng, (c, k), specials)
    cols_t, w_t = np.ascontiguousarray(cols.T), np.ascontiguousarray(w.T)
    # the kernels' own sums: "cn" where the filter is C-contiguous and no transpose is kept, "nc" where the filter
    # is a transposed view (a FULLY_CONNECTED's prepared weights) and its contiguous transpose is given
    sums, *_ = _float_dot._einsum_sums(cols_t, w, None, None) if layout == "cn" else \
        _float_dot._einsum_sums(cols_t, w_t.T, w_t, None)
    with np.errstate(all="ignore"):
        total = _float_dot.nans_as_x86(np.ascontiguousarray(sums()), lambda i, j: (cols_t[:, i], w[j]), None)
    assert _same(total, _scalar(cols, w))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 6), c=st.integers(1, 6), k=st.integers(1, 30), specials=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_bound_dot_is_the_c_loop(n, c, k, specials, seed):
    """The bound form on kept buffers (one output accumulated in order, or an einsum layout), refreshed twice."""
    rng = np.random.default_rng(seed)
    cols_t = np.empty((k, n), np.float32)
    w = _values(rng, (c, k), specials)
    dot = _float_dot.BoundDot(cols_t, w, None, np.ascontiguousarray(w.T))
    for _ in range(2):
        cols = _values(rng, (n, k), specials)
        cols_t[...] = cols.T
        with np.errstate(all="ignore"):
            got = np.array(dot())
        assert _same(got, _scalar(cols, w))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 6), c=st.integers(1, 6), k=st.integers(1, 12),
       bounds=st.sampled_from(["NONE", "RELU", "RELU6"]), values=st.sampled_from(["plain", "specials", "huge"]), direct=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_bind_finish_is_the_bias_clamp_after_the_dot(n, c, k, bounds, values, direct, seed):
    """:func:`bind_finish` (the einsum writing the output itself, or its totals copied or clipped into it; the
    clamp skipped while the totals' sum is finite) against :class:`BiasClamp` after ``dot()``: plain values, NaN
    and infinities, and huge finite ones whose sums overflow to inf (clamped to FLT_MAX) or whose totals are finite
    but sum past FLT_MAX."""
    rng = np.random.default_rng(seed)
    lo, hi = {"NONE": (-_float_dot.FLT_MAX, _float_dot.FLT_MAX), "RELU": (0.0, _float_dot.FLT_MAX),
              "RELU6": (0.0, 6.0)}[bounds]
    w = _values(rng, (c, k), values == "specials")
    if values == "huge":
        w = (np.sign(rng.normal(size=(c, k))) * 3e38).astype(np.float32)
    cols_t = np.empty((k, n), np.float32)
    out = np.full((n, c), 7.0, np.float32)
    finish = _float_dot.bind_finish(_float_dot.BoundDot(cols_t, w, None, np.ascontiguousarray(w.T),
                                                        out=out if direct else None), None, "total", lo, hi, out)
    reference = _float_dot.BiasClamp(None, "total", lo, hi, want := np.empty((n, c), np.float32))
    ref_dot = _float_dot.BoundDot(cols_t, w, None, np.ascontiguousarray(w.T))
    for _ in range(2):
        cols_t[...] = _values(rng, (n, k), values == "specials").T
        if values == "huge":
            cols_t[...] = rng.uniform(0.5, 1.0, (k, n))
        with np.errstate(all="ignore"):
            finish()
            reference(ref_dot())
        assert _same(out, want)


def test_einsum_layout_never_leaves_the_taps_innermost():
    w, w_t = np.ones((4, 3), np.float32), np.ones((3, 4), np.float32)
    assert _float_dot.einsum_layout(1, 1, w, w_t) is None                           # one output: a lane sum
    assert _float_dot.einsum_layout(1, 4, w, None) is None                          # pixels axis of 1, no [K, C]
    assert _float_dot.einsum_layout(1, 4, w, w_t) == "kn,kc->nc"
    assert _float_dot.einsum_layout(9, 4, w, w_t) == "kn,kc->nc"                     # few products: into the output
    wide, wide_t = np.ones((4, 100), np.float32), np.ones((100, 4), np.float32)
    assert _float_dot.einsum_layout(9, 4, wide, wide_t) == "kn,ck->cn"               # more pixels, many products
    assert _float_dot.einsum_layout(2, 4, wide, wide_t) == "kn,kc->nc"               # more channels
    assert _float_dot.einsum_layout(2, 4, w, w_t) == "kn,kc->nc"
    assert _float_dot.einsum_layout(2, 4, w[:, ::2], None) is None                  # no contiguous filter


def test_a_first_product_of_minus_zero_gives_plus_zero():
    cols = np.array([[-0.0]], np.float32)
    w = np.array([[1.0], [1.0]], np.float32)
    assert not np.signbit(sequential_dot(cols, w)).any()    # 0.f + -0.f = +0.f, as TFLM's total starts at 0.f


@settings(max_examples=40, deadline=None)
@given(h=st.integers(1, 7), w=st.integers(1, 7), c_in=st.integers(1, 4), c_out=st.integers(1, 5),
       k=st.integers(1, 3), stride=st.integers(1, 2), padding=st.sampled_from(["SAME", "VALID"]),
       act=st.sampled_from(["NONE", "RELU", "RELU6"]), seed=st.integers(0, 2**32 - 1))
def test_float_conv_with_special_values_matches_the_wheel(h, w, c_in, c_out, k, stride, padding, act, seed):
    if padding == "VALID" and (k > h or k > w):
        return
    rng = np.random.default_rng(seed)
    oh, ow = _out_hw(h, w, k, stride, padding)
    filt = with_specials(rng.uniform(-2, 2, (c_out, k, k, c_in)).astype(np.float32)) if rng.random() < 0.3 \
        else rng.uniform(-2, 2, (c_out, k, k, c_in)).astype(np.float32)
    bias = rng.uniform(-1, 1, c_out).astype(np.float32)
    if rng.random() < 0.2:
        bias = with_specials(bias)
    model = single_op("CONV_2D", [T((1, h, w, c_in), "FLOAT32"), T(filt.shape, "FLOAT32", data=filt),
                                  T((c_out,), "FLOAT32", data=bias)], T((1, oh, ow, c_out), "FLOAT32"),
                      padding=padding, stride_h=stride, stride_w=stride, fused_activation_function=act)
    x = with_specials((rng.normal(size=(1, h, w, c_in)) * 1e3).astype(np.float32))
    assert_bitwise_matches_tflm(model, [x])


@settings(max_examples=40, deadline=None)
@given(h=st.integers(1, 7), w=st.integers(1, 7), c=st.integers(1, 4), mult=st.integers(1, 2), k=st.integers(1, 3),
       stride=st.integers(1, 2), padding=st.sampled_from(["SAME", "VALID"]),
       act=st.sampled_from(["NONE", "RELU", "RELU6"]), seed=st.integers(0, 2**32 - 1))
def test_float_depthwise_with_special_values_matches_the_wheel(h, w, c, mult, k, stride, padding, act, seed):
    if padding == "VALID" and (k > h or k > w):
        return
    rng = np.random.default_rng(seed)
    oh, ow = _out_hw(h, w, k, stride, padding)
    filt = rng.uniform(-2, 2, (1, k, k, c * mult)).astype(np.float32)
    if rng.random() < 0.3:
        filt = with_specials(filt)
    bias = rng.uniform(-1, 1, c * mult).astype(np.float32)
    if rng.random() < 0.2:
        bias = with_specials(bias)
    model = single_op("DEPTHWISE_CONV_2D", [T((1, h, w, c), "FLOAT32"), T(filt.shape, "FLOAT32", data=filt),
                                            T(bias.shape, "FLOAT32", data=bias)], T((1, oh, ow, c * mult), "FLOAT32"),
                      padding=padding, stride_h=stride, stride_w=stride, depth_multiplier=mult,
                      fused_activation_function=act)
    x = with_specials((rng.normal(size=(1, h, w, c)) * 1e3).astype(np.float32))
    assert_bitwise_matches_tflm(model, [x])


@settings(max_examples=40, deadline=None)
@given(batches=st.integers(1, 3), accum=st.integers(1, 40), depth=st.integers(1, 37),
       act=st.sampled_from(["NONE", "RELU", "RELU6"]), const_w=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_float_fully_connected_with_special_values_matches_the_wheel(batches, accum, depth, act, const_w, seed):
    """The bound float FC (sequential sums, bias, clamp) with NaN, inf and -0 in the input, weights and bias; the
    weights a constant or a second input (read through the bound call's view at every invoke)."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(-2, 2, (depth, accum)).astype(np.float32)
    if rng.random() < 0.3:
        w = with_specials(w)
    bias = rng.uniform(-1, 1, depth).astype(np.float32)
    if rng.random() < 0.3:
        bias = with_specials(bias)
    model = single_op("FULLY_CONNECTED", [T((batches, accum), "FLOAT32"),
                                          T(w.shape, "FLOAT32", data=w if const_w else None),
                                          T((depth,), "FLOAT32", data=bias)], T((batches, depth), "FLOAT32"),
                      fused_activation_function=act)
    x = with_specials((rng.normal(size=(batches, accum)) * 1e3).astype(np.float32))
    assert_bitwise_matches_tflm(model, [x] if const_w else [x, w])


@pytest.mark.parametrize("batches,depth", [(1, 5), (1, 1), (3, 4)])
def test_float_fully_connected_with_weights_given_at_invoke_matches_the_wheel(batches, depth):
    """A filter that is a model input (a resource variable's value in the population): one batch sums through the
    kept transpose of the filter, refreshed at every invoke -- two invokes with different weights and the same
    interpreter, against the wheel."""
    rng = np.random.default_rng(depth)
    model = single_op("FULLY_CONNECTED", [T((batches, 6), "FLOAT32"), T((depth, 6), "FLOAT32"),
                                          T((depth,), "FLOAT32", data=rng.uniform(-1, 1, depth).astype(np.float32))],
                      T((batches, depth), "FLOAT32"), fused_activation_function="NONE")
    it = Interpreter(model)
    for _ in range(2):
        x = (rng.normal(size=(batches, 6)) * 1e3).astype(np.float32)
        w = rng.uniform(-2, 2, (depth, 6)).astype(np.float32)
        it.set_input(x, 0)
        it.set_input(w, 1)
        it.invoke()
        wheel = TflmRunner(model, preserve_all=False)
        wheel.run([x, w])
        assert np.array_equal(it.get_output(0).view(np.uint32), wheel.output(0).view(np.uint32))


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(["AVERAGE_POOL_2D", "MAX_POOL_2D"]), h=st.integers(1, 7), w=st.integers(1, 7),
       c=st.integers(1, 4), k=st.integers(1, 3), stride=st.integers(1, 2), padding=st.sampled_from(["SAME", "VALID"]),
       act=st.sampled_from(["NONE", "RELU", "RELU6"]), seed=st.integers(0, 2**32 - 1))
def test_float_pools_with_special_values_match_the_wheel(op, h, w, c, k, stride, padding, act, seed):
    """The bound float AVERAGE_POOL_2D (kept padded band, one add per tap, divide, clamp) and MAX_POOL_2D (kept
    padded band, running maxima, zero signs, clamp) with NaN, inf and -0."""
    if padding == "VALID" and (k > h or k > w):
        return
    oh, ow = _out_hw(h, w, k, stride, padding)
    model = single_op(op, [T((1, h, w, c), "FLOAT32")], T((1, oh, ow, c), "FLOAT32"),
                      padding=padding, stride_h=stride, stride_w=stride, filter_height=k, filter_width=k,
                      fused_activation_function=act)
    x = with_specials((np.random.default_rng(seed).normal(size=(1, h, w, c)) * 1e3).astype(np.float32))
    assert_bitwise_matches_tflm(model, [x])


@pytest.mark.parametrize("op", ["FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D"])
def test_a_signalling_nan_bias_comes_out_quieted(op):
    """x86 quiets a signalling NaN operand (0x7F800001 + x = 0x7FC00001): so does the bias add, as the wheel does."""
    rng = np.random.default_rng(1)
    bias = np.array([1.0, 0.0, 2.0, 0.0], np.float32)
    bias.view(np.uint32)[1], bias.view(np.uint32)[3] = 0x7F800001, 0xFF800005
    if op == "FULLY_CONNECTED":
        w, x_shape, y_shape, options = rng.uniform(-1, 1, (4, 3)), (1, 3), (1, 4), {}
    elif op == "CONV_2D":
        w, x_shape, y_shape = rng.uniform(-1, 1, (4, 1, 1, 2)), (1, 2, 2, 2), (1, 2, 2, 4)
        options = {"padding": "VALID", "stride_h": 1, "stride_w": 1}
    else:
        w, x_shape, y_shape = rng.uniform(-1, 1, (1, 1, 1, 4)), (1, 2, 2, 4), (1, 2, 2, 4)
        options = {"padding": "VALID", "stride_h": 1, "stride_w": 1, "depth_multiplier": 1}
    w = w.astype(np.float32)
    model = single_op(op, [T(x_shape, "FLOAT32"), T(w.shape, "FLOAT32", data=w), T((4,), "FLOAT32", data=bias)],
                      T(y_shape, "FLOAT32"), **options)
    assert_bitwise_matches_tflm(model, [rng.normal(size=x_shape).astype(np.float32)])


@settings(max_examples=40, deadline=None)
@given(h=st.integers(1, 6), w=st.integers(1, 6), c_in=st.integers(1, 4), c_out=st.integers(1, 4),
       k=st.integers(1, 4), stride=st.integers(1, 3), padding=st.sampled_from(["SAME", "VALID"]),
       act=st.sampled_from(["NONE", "RELU", "RELU6"]), has_bias=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_float_transpose_conv_with_special_values_matches_the_wheel(h, w, c_in, c_out, k, stride, padding, act,
                                                                     has_bias, seed):
    """Float TRANSPOSE_CONV (each output's contributions in the scatter's order, skipped taps adding nothing, then
    the bias and the clamp) with NaN, inf and -0 in the input, filter and bias."""
    rng = np.random.default_rng(seed)
    oh = h * stride if padding == "SAME" else (h - 1) * stride + k
    ow = w * stride if padding == "SAME" else (w - 1) * stride + k
    filt = rng.uniform(-2, 2, (c_out, k, k, c_in)).astype(np.float32)
    if rng.random() < 0.3:
        filt = with_specials(filt)
    inputs = [T((4,), "INT32", data=np.array([1, oh, ow, c_out], np.int32)), T(filt.shape, "FLOAT32", data=filt),
              T((1, h, w, c_in), "FLOAT32")]
    if has_bias:
        bias = rng.uniform(-1, 1, c_out).astype(np.float32)
        inputs.append(T((c_out,), "FLOAT32", data=with_specials(bias) if rng.random() < 0.3 else bias))
    model = single_op("TRANSPOSE_CONV", inputs, T((1, oh, ow, c_out), "FLOAT32"), padding=padding,
                      stride_h=stride, stride_w=stride, fused_activation_function=act)
    x = with_specials((rng.normal(size=(1, h, w, c_in)) * 1e3).astype(np.float32))
    assert_bitwise_matches_tflm(model, [x])


def test_transpose_conv_keeps_the_products_nan_in_its_sums_and_the_totals_against_the_bias():
    """Where both operands are NaN the wheel's TRANSPOSE_CONV keeps the product's NaN in ``output += x * w`` (unlike
    CONV_2D) and the total's in ``acc += bias``; both measured here bit for bit."""
    filt = np.array([np.inf, -np.inf], np.float32).reshape(1, 1, 1, 2)
    bias = np.array([0], np.float32)
    bias.view(np.uint32)[:] = 0xFFC00123
    model = single_op("TRANSPOSE_CONV", [T((4,), "INT32", data=np.array([1, 1, 1, 1], np.int32)),
                                         T(filt.shape, "FLOAT32", data=filt), T((1, 1, 1, 2), "FLOAT32"),
                                         T((1,), "FLOAT32", data=bias)], T((1, 1, 1, 1), "FLOAT32"),
                      padding="VALID", stride_h=1, stride_w=1, fused_activation_function="NONE")
    x = np.zeros((1, 1, 1, 2), np.float32)
    x.view(np.uint32)[:] = [0x7FC00456, 0]     # NaN * inf, then 0 * -inf: the default NaN meets the running NaN
    assert_bitwise_matches_tflm(model, [x])


@pytest.mark.parametrize("words", [(0x7FC00456, 0x7FC00789), (0xFFC00456, 0x7F800001), (0x7FC00001, 0xFFC00002)])
def test_transpose_conv_bound_einsum_keeps_the_later_products_nan(words):
    """A finite filter (the bound merged einsum): two NaN inputs of different payloads reach each output, and the
    wheel keeps the later product's NaN -- so does the bound call (NumPy's einsum keeps it here; the repair after
    it would restore it where another build's would not)."""
    filt = np.array([1.5, -2.0, 0.5, 3.0], np.float32).reshape(2, 1, 1, 2)
    model = single_op("TRANSPOSE_CONV", [T((4,), "INT32", data=np.array([1, 1, 3, 2], np.int32)),
                                         T(filt.shape, "FLOAT32", data=filt), T((1, 1, 3, 2), "FLOAT32")],
                      T((1, 1, 3, 2), "FLOAT32"), padding="VALID", stride_h=1, stride_w=1,
                      fused_activation_function="NONE")
    x = np.zeros((1, 1, 3, 2), np.float32)
    x.view(np.uint32)[0, 0, :2] = words
    x[0, 0, 2] = [1.0, -1.0]
    assert_bitwise_matches_tflm(model, [x])


@pytest.mark.parametrize("op,h,c,stride", [("DEPTHWISE_CONV_2D", 6, 20, 1), ("DEPTHWISE_CONV_2D", 5, 17, 2),
                                           ("DEPTHWISE_CONV_2D", 1, 24, 1), ("CONV_2D", 2, 24, 1),
                                           ("CONV_2D", 7, 3, 2)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_einsum_layouts_of_the_bound_convolutions_match_the_wheel(op, h, c, stride, seed):
    """The layouts the float kernels pick by shape (depthwise channels first below 16 channels, channels last from
    16; conv pixels innermost, or channels innermost with fewer pixels than channels), NaN, infinities and signed
    zeros in the input, a finite filter (the padding read as zeros), bit for bit against the wheel."""
    rng = np.random.default_rng(seed)
    c_in = c if op == "DEPTHWISE_CONV_2D" else 5
    filt_shape = (1, 3, 3, c) if op == "DEPTHWISE_CONV_2D" else (c, 3, 3, c_in)
    filt = rng.uniform(-2, 2, filt_shape).astype(np.float32)
    bias = rng.uniform(-1, 1, c).astype(np.float32)
    o = -(-h // stride)
    options = {"depth_multiplier": 1} if op == "DEPTHWISE_CONV_2D" else {}
    model = single_op(op, [T((1, h, h, c_in), "FLOAT32"), T(filt_shape, "FLOAT32", data=filt),
                           T((c,), "FLOAT32", data=bias)], T((1, o, o, c), "FLOAT32"), padding="SAME",
                      stride_h=stride, stride_w=stride, fused_activation_function="NONE", **options)
    x = with_specials((rng.normal(size=(1, h, h, c_in)) * 10.0 ** rng.integers(-3, 37)).astype(np.float32))
    assert_bitwise_matches_tflm(model, [x])


@pytest.mark.parametrize("h,c,mult,stride", [(5, 8, 2, 1), (4, 6, 3, 2), (3, 16, 2, 1), (6, 1, 16, 1)])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_depthwise_multiplier_channels_last_matches_the_wheel(h, c, mult, stride, seed):
    """From 16 output channels with a multiplier above one, the bound depthwise lays its taps out [.., m, c_in] (the
    filter and the bias permuted alike, the totals clamped into the output seen as [n, m, c_in]): NaN, infinities
    and signed zeros in the input, and on odd seeds in the filter (the taps outside the image left out) and the
    bias, bit for bit against the wheel."""
    rng = np.random.default_rng(seed)
    filt = rng.uniform(-2, 2, (1, 3, 3, c * mult)).astype(np.float32)
    bias = rng.uniform(-1, 1, c * mult).astype(np.float32)
    if seed % 2:
        filt, bias = with_specials(filt), with_specials(bias)
    o = -(-h // stride)
    model = single_op("DEPTHWISE_CONV_2D", [T((1, h, h, c), "FLOAT32"), T(filt.shape, "FLOAT32", data=filt),
                                            T(bias.shape, "FLOAT32", data=bias)], T((1, o, o, c * mult), "FLOAT32"),
                      padding="SAME", stride_h=stride, stride_w=stride, depth_multiplier=mult,
                      fused_activation_function="RELU6" if seed == 2 else "NONE")
    x = with_specials((rng.normal(size=(1, h, h, c)) * 10.0 ** rng.integers(-3, 37)).astype(np.float32))
    assert_bitwise_matches_tflm(model, [x])


@pytest.mark.parametrize("op", ["CONV_2D", "FULLY_CONNECTED", "FULLY_CONNECTED at invoke", "DEPTHWISE_CONV_2D",
                                "DEPTHWISE_CONV_2D x2"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_bias_without_nan_as_the_last_tap_matches_the_wheel(op, seed):
    """A constant bias without NaN is summed as one more tap (``1.f * bias``) by the bound kernels: with infinities,
    signed zeros and huge values in it and NaN, infinities in the input, bit for bit against the wheel (the
    depthwise with few channels, pixels innermost, and with 16 channels of multiplier 2, channels last; one batch
    of a FULLY_CONNECTED whose filter is an input, given at invoke, the bias the last row of its kept transpose)."""
    rng = np.random.default_rng(seed)
    c = 16 if op.endswith("x2") else 7
    bias = (rng.normal(size=c) * 1e38).astype(np.float32)
    bias[:3] = [np.inf, -np.inf, -0.0]
    rng.shuffle(bias)
    if op.startswith("DEPTHWISE"):
        mult = 2 if op.endswith("x2") else 1
        filt = rng.uniform(-2, 2, (1, 3, 3, c)).astype(np.float32)
        x_shape, out_shape = (1, 4, 4, c // mult), (1, 4, 4, c)
        options = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": mult}
        op = "DEPTHWISE_CONV_2D"
    elif op == "CONV_2D":
        filt = rng.uniform(-2, 2, (c, 3, 3, 2)).astype(np.float32)
        x_shape, out_shape, options = (1, 4, 4, 2), (1, 4, 4, c), {"padding": "SAME", "stride_h": 1, "stride_w": 1}
    else:
        filt = rng.uniform(-2, 2, (c, 6)).astype(np.float32)
        batches = 1 if op.endswith("invoke") else 3
        x_shape, out_shape, options = (batches, 6), (batches, c), {}
    at_invoke = op.endswith("invoke")
    model = single_op(op.split()[0], [T(x_shape, "FLOAT32"), T(filt.shape, "FLOAT32", data=None if at_invoke else filt),
                                      T((c,), "FLOAT32", data=bias)], T(out_shape, "FLOAT32"),
                      fused_activation_function="NONE", **options)
    x = (rng.normal(size=x_shape) * 10.0 ** rng.integers(30, 38)).astype(np.float32)
    if not at_invoke or seed % 2:       # (one batch with a NaN in it is NaN throughout: half the seeds without)
        x = with_specials(x)
    assert_bitwise_matches_tflm(model, [x, filt] if at_invoke else [x])
