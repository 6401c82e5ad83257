"""SOFTMAX against the TFLM wheel: int8 -> int8 and int8 -> int16 (gemmlowp fixed point), int16 -> int16 (two
interpolated LUTs), float32 (glibc expf); softmax over the last axis of rank 1-4 tensors, random input scales, zero
points and beta; the zoo's int8 softmax parameters exhaustively; the output-quantization refusals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from microinterp.testing.single_op import assert_matches_tflm

from .activation_cases import assert_refused, float32_scales, run_case, shapes, unary_model, zero_points
from .single_op_models import T, assert_bitwise_matches_tflm, single_op, with_specials

OP = "SOFTMAX"
OUT_Q = {"INT8": (1.0 / 256, -128), "INT16": (1.0 / 65536, -32768)}
betas = st.one_of(st.just(1.0), st.floats(0.05, 4.0).map(lambda b: float(np.float32(b))))


@given(shape=shapes(), out_type=st.sampled_from(["INT8", "INT16"]), s_in=float32_scales(-3, 1),
       zp=zero_points(), beta=betas, seed=st.integers(0, 2**32 - 1))
@example(shape=(1, 2), out_type="INT8", s_in=0.012518751434981823, zp=-1, beta=1.0, seed=0)  # person_detect
@example(shape=(3, 300), out_type="INT8", s_in=0.001, zp=0, beta=0.05, seed=1)  # big rows, tiny multiplier
@example(shape=(2, 7), out_type="INT16", s_in=10.0, zp=127, beta=4.0, seed=2)  # multiplier capped at 2^31 - 1
@example(shape=(1, 1001), out_type="INT8", s_in=0.2, zp=-20, beta=1.0, seed=3)  # 1001 classes
def test_int8(shape, out_type, s_in, zp, beta, seed):
    model = unary_model(OP, shape, "INT8", out_type, (s_in, zp), OUT_Q[out_type], beta=beta)
    run_case(model, shape, "INT8", seed, include_all_values=True)


@given(shape=shapes(), s_in=float32_scales(-5, -1), beta=betas, seed=st.integers(0, 2**32 - 1),
       narrow=st.booleans())
@example(shape=(2, 50), s_in=1e-5, beta=1.0, seed=0, narrow=False)
def test_int16(shape, s_in, beta, seed, narrow):
    model = unary_model(OP, shape, "INT16", "INT16", (s_in, 0), (1.0 / 32768, 0), beta=beta)
    lo, hi = (-2000, 2000) if narrow else (None, None)
    run_case(model, shape, "INT16", seed, low=lo, high=hi)


@given(shape=shapes(), beta=betas, seed=st.integers(0, 2**32 - 1), spread=st.sampled_from([1.0, 8.0, 40.0]))
def test_float32(shape, beta, seed, spread):
    model = unary_model(OP, shape, "FLOAT32", beta=beta)
    run_case(model, shape, "FLOAT32", seed, low=-spread, high=spread)


@pytest.mark.parametrize("s_in,zp,depth", [
    (0.012518751434981823, -1, 2),   # person_detect
    (0.014636218547821045, -5, 2),   # vww_96_int8
    (0.14469251036643982, 14, 12),   # kws_ref_model
    (0.09173192083835602, 14, 4),    # micro_speech
    (0.17185351252555847, 24, 10),   # pretrainedResnet
    (0.17366045713424683, 3, 10),    # trained_lstm
])
def test_zoo_parameters(s_in, zp, depth):
    """The zoo's int8 softmax layers (beta 1): every input pair for depth 2, 20000 random rows otherwise."""
    if depth == 2:
        a = np.arange(-128, 128, dtype=np.int8)
        x = np.stack(np.meshgrid(a, a, indexing="ij"), axis=-1).reshape(-1, 2)
    else:
        x = np.random.default_rng(depth).integers(-128, 128, size=(20000, depth)).astype(np.int8)
    model = unary_model(OP, x.shape, "INT8", "INT8", (s_in, zp), OUT_Q["INT8"], beta=1.0)
    assert_matches_tflm(model, [x])


def test_refusals():
    s = (2, 5)
    q = (0.1, 0)
    assert_refused(unary_model(OP, s, "INT8", "INT8", q, (1.0 / 256, -127)), "zero point -128")
    assert_refused(unary_model(OP, s, "INT8", "INT8", q, (1.0 / 255, -128)), "exactly 1/256")
    assert_refused(unary_model(OP, s, "INT8", "INT16", q, (1.0 / 65536, 0)), "-32768")
    assert_refused(unary_model(OP, s, "INT8", "INT16", q, (1.0 / 60000, -32768)), "1/65536")
    assert_refused(unary_model(OP, s, "INT16", "INT16", q, (1.0 / 32768, 5)), "zero point 0")
    assert_refused(unary_model(OP, s, "INT16", "INT16", (0.1, 3), (1.0 / 32768, 0)), "zero point 0")
    assert_refused(unary_model(OP, s, "INT16", "INT16", q, (1.0 / 30000, 0)), "1/32768")
    assert_refused(unary_model(OP, s, "INT8", "FLOAT32", q), "differs")
    assert_refused(unary_model(OP, s, "FLOAT32", "INT16", None, (1.0 / 32768, 0)), "INT16 output")
    assert_refused(unary_model(OP, s, "UINT8", "UINT8", (0.1, 128), (1.0 / 256, 0)), "unsupported")
    # beta * s_in * 2^26 <= 1: TFLM aborts the process (TFLITE_CHECK); refused here, the wheel is not asked.
    assert_refused(unary_model(OP, s, "INT8", "INT8", (1e-9, 0), (1.0 / 256, -128)), "must exceed 1", wheel=False)


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(["SOFTMAX", "LOG_SOFTMAX"]), rows=st.sampled_from([1, 2, 3, 64, 65, 200]),
       depth=st.integers(1, 20),
       beta=st.sampled_from([1.0, 0.5, 2.0]), scale=st.sampled_from([1.0, 10.0, 100.0]), specials=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_float_with_special_values_matches_the_wheel_bit_for_bit(op, rows, depth, beta, scale, specials, seed):
    """Float SOFTMAX and LOG_SOFTMAX (bound calls) with NaN, +-inf and -0: the maximum ignores NaN (std::max), inf -
    inf is the default NaN, the sum keeps its first NaN and the division the dividend's -- bit for bit."""
    x = (np.random.default_rng(seed).normal(size=(rows, depth)) * scale).astype(np.float32)
    options = {"beta": beta} if op == "SOFTMAX" else {}
    model = single_op(op, [T((rows, depth), "FLOAT32")], T((rows, depth), "FLOAT32"), **options)
    assert_bitwise_matches_tflm(model, [with_specials(x) if specials else x])


@pytest.mark.parametrize("depth", [1, 3, 5, 8, 17])
@pytest.mark.parametrize("seed", range(3))
def test_one_float_row_with_nan_payloads_matches_the_wheel(depth, seed):
    """The bound one-row form (a classifier's head): NaN of distinct payloads and signs among plain values, and
    +-inf (whose difference is the default NaN) -- every output's bits as the wheel's."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(1, depth)).astype(np.float32)
    words = x.view(np.uint32)
    k = rng.choice(depth, size=max(1, depth // 3), replace=False)
    words[0, k] = 0x7FC00000 | rng.integers(1, 1 << 20, k.size).astype(np.uint32) | (rng.integers(0, 2, k.size)
                                                                                      .astype(np.uint32) << 31)
    if seed == 2 and depth > 2:
        x[0, :2] = [np.inf, np.inf]
    for op in ("SOFTMAX", "LOG_SOFTMAX"):
        assert_bitwise_matches_tflm(single_op(op, [T((1, depth), "FLOAT32")], T((1, depth), "FLOAT32")), [x])


@pytest.mark.parametrize("op", ["SOFTMAX", "LOG_SOFTMAX"])
def test_rows_of_one_element_match_the_wheel(op):
    """Rows of a single element (the bound LOG_SOFTMAX's flat form): NaN of several payloads, +-inf (inf - inf is
    the default NaN), -0, the lowest float and plain values, bit for bit."""
    words = np.array([0x7FC00001, 0xFFC12345, 0x7F800000, 0xFF800000, 0x80000000, 0x00000000, 0xFF7FFFFF,
                      0x7F7FFFFF, 0x3F800000, 0xC2C80000, 0x00000001], np.uint32)
    x = words.view(np.float32).reshape(-1, 1)
    assert_bitwise_matches_tflm(single_op(op, [T(x.shape, "FLOAT32")], T(x.shape, "FLOAT32")), [x])


@pytest.mark.parametrize("depth", [1, 2, 3, 10, 24, 25, 40])
@pytest.mark.parametrize("seed", range(4))
def test_the_row_maximum_is_std_max_from_lowest(depth, seed):
    """bind_row_max (one-row SOFTMAX / LOG_SOFTMAX, a Python fold up to SHORT_ROW elements, an fmax reduction
    beyond): bit for bit the C loop ``max = std::max(max, x)`` from ``lowest()`` -- a NaN never wins, an all-NaN row
    gives lowest(), of equal zeros the first one stays."""
    from microinterp.kernels.softmax import FLT_LOWEST, bind_row_max

    rng = np.random.default_rng(seed)
    row = rng.normal(size=depth).astype(np.float32)
    if seed == 1:
        row[rng.random(depth) < 0.5] = np.nan
    elif seed == 2:
        row[:] = np.nan
    elif seed == 3:
        row[:] = np.where(rng.random(depth) < 0.3, -np.inf, np.float32(0.0))
        row[np.argmax(row == 0)] = np.float32(-0.0)     # the first zero -0.f, the later ones +0.f: it stays
    top = np.empty((), np.float32)
    bind_row_max(row, top)()
    want = np.float32(FLT_LOWEST)
    for v in row:
        want = v if want < v else want       # noqa: FURB136 - std::max(max, v), written as C does
    if depth <= 24 or seed != 3:      # fmax's choice between equal zeros is its own (it cannot change an output)
        assert top.view(np.uint32) == np.float32(want).view(np.uint32)
    else:
        assert top == want
