"""Float ADD, SUB and MUL as the interpreter runs them (``bind``: one ufunc and one clamp on fixed views) against the
TFLM wheel, bit for bit, with NaN, infinities and signed zeros in both inputs, every fused activation and broadcast
shapes whose lengths leave NumPy's vector loops a remainder."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import microinterp as mi
from microinterp.kernels.binary_common import (
    bind_clamp,
    bind_clamp_into,
    clamp_float_,
    float_activation_range,
)

from .single_op_models import T, assert_bitwise_matches_tflm, single_op, with_specials


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(["ADD", "SUB", "MUL"]), act=st.sampled_from(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]),
       n=st.integers(1, 37), broadcast=st.sampled_from(["same", "scalar", "row"]), specials=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_bound_float_binary_matches_the_wheel(op, act, n, broadcast, specials, seed):
    """Without specials the inputs are finite, their results finite or overflowing to +-inf (clamped to
    +-FLT_MAX without an activation): the bound call's skip of the clamp while the outputs' sum of squares is
    finite is checked both ways."""
    rng = np.random.default_rng(seed)
    shape = (1, 2, n)
    other = {"same": shape, "scalar": (1,), "row": (1, 1, n)}[broadcast]
    mark = with_specials if specials else np.asarray
    x1 = mark((rng.normal(size=shape) * 1e37).astype(np.float32))
    scale = 10.0 ** rng.integers(-3, 39 if specials else 37)
    x2 = mark((rng.normal(size=other) * scale).astype(np.float32)[::-1].copy())
    model = single_op(op, [T(shape, "FLOAT32"), T(other, "FLOAT32")], T(shape, "FLOAT32"),
                      fused_activation_function=act)
    it = mi.Interpreter(model)
    assert all(type(call).__name__ == "function" for call, _ in it.runtime.calls)     # the bound call runs
    assert_bitwise_matches_tflm(model, [x1, x2])


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(["ADD", "SUB", "MUL"]), rows=st.integers(1, 5), cols=st.integers(1, 35),
       broadcast=st.sampled_from(["none", "row", "col"]), seed=st.integers(0, 2**32 - 1))
def test_two_nans_keep_the_wheels_operand(op, rows, cols, broadcast, seed):
    """Where both operands are NaN (of different payloads and signs) TFLM's ADD and SUB keep the first one's NaN and
    its MUL the second one's; NumPy's vector remainders would differ -- bit for bit, broadcasting too."""
    rng = np.random.default_rng(seed)
    b_shape = {"none": (rows, cols), "row": (1, cols), "col": (rows, 1)}[broadcast]

    def nans(shape, sign):
        return ((0x7FC00000 | rng.integers(1, 1 << 20, shape) | sign << 31).astype(np.uint32)).view(np.float32)

    a, b = nans((rows, cols), 0), nans(b_shape, 1)
    a.reshape(-1)[::3] = 1.5                    # some single NaNs and plain values too
    model = single_op(op, [T((rows, cols), "FLOAT32"), T(b_shape, "FLOAT32")], T((rows, cols), "FLOAT32"),
                      fused_activation_function="NONE")
    assert_bitwise_matches_tflm(model, [a, b])


def test_a_one_element_clamp_is_the_arrays():
    """:func:`bind_clamp` of a single element (compared as float32 scalars) against :func:`clamp_float_` on arrays,
    for every fused activation's bounds and NaN of both signs and payloads, +-inf, +-0, values past each bound --
    bits equal, the -0.f and the NaN payloads kept."""
    specials = np.array([0x7FC00001, 0xFFC12345, 0x7F800000, 0xFF800000, 0x00000000, 0x80000000, 0x3F800000,
                         0xBF800000, 0x40E00000, 0xC0E00000, 0x7F7FFFFF, 0xFF7FFFFF, 0x00000001], np.uint32)
    for act in ("NONE", "RELU", "RELU6", "RELU_N1_TO_1"):
        lo, hi = float_activation_range(act)
        want = clamp_float_(specials.view(np.float32).copy(), lo, hi)
        for i, word in enumerate(specials):
            for shape in ((), (1,), (1, 1, 1)):
                x = np.array(word, np.uint32).view(np.float32).reshape(shape).copy()
                out = np.full(shape, 5.0, np.float32)
                bind_clamp_into(x.copy(), lo, hi, out)()
                bind_clamp(x, lo, hi)()
                assert x.view(np.uint32).reshape(-1)[0] == want.view(np.uint32)[i], (act, hex(word))
                assert out.view(np.uint32).reshape(-1)[0] == want.view(np.uint32)[i], (act, hex(word))


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(["ADD", "SUB", "MUL"]), n=st.integers(1, 37),
       shape=st.sampled_from(["scalar", "row", "rank"]), first=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_a_constant_broadcast_operand_laid_out_matches_the_wheel(op, n, shape, first, seed):
    """A small output with a constant operand of another shape (a scalar, a row, the same values at a lower rank):
    the bound call reads it materialised in the output's shape (no broadcast per call) -- NaN of distinct payloads
    in both operands, infinities, either operand first, bit for bit."""
    rng = np.random.default_rng(seed)
    out_shape = (1, 2, n)
    c_shape = {"scalar": (), "row": (n,), "rank": (2, n)}[shape]
    x = with_specials((rng.normal(size=out_shape) * 1e37).astype(np.float32))
    c = with_specials((rng.normal(size=c_shape) * 1e3).astype(np.float32).reshape(-1)).reshape(c_shape)
    operands = [T(out_shape, "FLOAT32"), T(c_shape, "FLOAT32", data=c)]
    model = single_op(op, operands if first else operands[::-1], T(out_shape, "FLOAT32"),
                      fused_activation_function="NONE")
    assert_bitwise_matches_tflm(model, [x])
