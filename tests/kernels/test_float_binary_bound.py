"""Float ADD, SUB and MUL as the interpreter runs them (``bind``: one ufunc and one clamp on fixed views) against the
TFLM wheel, bit for bit, with NaN, infinities and signed zeros in both inputs, every fused activation and broadcast
shapes whose lengths leave NumPy's vector loops a remainder."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import microinterp as mi

from .single_op_models import T, assert_bitwise_matches_tflm, single_op, with_specials


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(["ADD", "SUB", "MUL"]), act=st.sampled_from(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]),
       n=st.integers(1, 37), broadcast=st.sampled_from(["same", "scalar", "row"]), seed=st.integers(0, 2**32 - 1))
def test_bound_float_binary_matches_the_wheel(op, act, n, broadcast, seed):
    rng = np.random.default_rng(seed)
    shape = (1, 2, n)
    other = {"same": shape, "scalar": (1,), "row": (1, 1, n)}[broadcast]
    x1 = with_specials((rng.normal(size=shape) * 1e37).astype(np.float32))
    x2 = with_specials((rng.normal(size=other) * 10.0 ** rng.integers(-3, 39)).astype(np.float32)[::-1].copy())
    model = single_op(op, [T(shape, "FLOAT32"), T(other, "FLOAT32")], T(shape, "FLOAT32"),
                      fused_activation_function=act)
    it = mi.Interpreter(model)
    assert all(type(call).__name__ == "function" for call, _ in it.runtime.calls)     # the bound call runs
    assert_bitwise_matches_tflm(model, [x1, x2])
