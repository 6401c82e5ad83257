"""Issue 27: float32 (and bool) elementwise ops, comparisons, logic, SOFTMAX and LOG_SOFTMAX run out of core in row
bands, not whole; the output equals the in-memory run's (which equals the wheel's), NaN and infinities included."""

from __future__ import annotations

import numpy as np
import pytest

import microinterp as mi
from microinterp.testing.builder import ModelBuilder

from .conftest import smallest_out_of_core_arena

SHAPE = (1, 48, 48, 16)           # 147 KB of float32: two of them make the in-memory plan larger than a band
UNARY = ["ABS", "RELU", "RELU6", "LOGISTIC", "TANH", "SQRT", "EXP", "LOG", "NEG", "SQUARE", "SIN", "COS", "FLOOR",
         "CEIL", "ROUND", "RSQRT", "ELU", "HARD_SWISH", "SOFTMAX", "LOG_SOFTMAX"]
BINARY = ["ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "FLOOR_DIV", "FLOOR_MOD", "PRELU"]
COMPARE = ["EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL"]
OPTIONS = {"SOFTMAX": {"beta": 1.0}, "ADD": {"fused_activation_function": "NONE"},
           "SUB": {"fused_activation_function": "NONE"}, "MUL": {"fused_activation_function": "NONE"},
           "DIV": {"fused_activation_function": "NONE"}}


def _model(op: str) -> bytes:
    """x (float32) -> ABS -> op -> (a second op for bool outputs) -> output: the op's input and output are both
    intermediates, so out of core the op reads and writes the card."""
    b = ModelBuilder()
    x = b.add_tensor("x", SHAPE, "FLOAT32")
    a = b.add_tensor("a", SHAPE, "FLOAT32")
    b.add_op("ABS" if op != "ABS" else "NEG", [x], [a])
    if op in COMPARE:
        c = b.add_tensor("c", SHAPE, "BOOL")
        b.add_op(op, [a, x], [c])
        y = b.add_tensor("y", SHAPE, "BOOL")
        b.add_op("LOGICAL_NOT", [c], [y])
    elif op in BINARY:
        other = b.add_tensor("other", (1, 1, 1, SHAPE[3]) if op in ("MUL", "PRELU") else (1, 1, 1, 1), "FLOAT32",
                             data=np.linspace(0.5, 2.0, SHAPE[3] if op in ("MUL", "PRELU") else 1,
                                              dtype=np.float32).reshape((1, 1, 1, -1)))
        y = b.add_tensor("y", SHAPE, "FLOAT32")
        b.add_op(op, [a, other] if op != "SQUARED_DIFFERENCE" else [a, x], [y], **OPTIONS.get(op, {}))
    else:
        y = b.add_tensor("y", SHAPE, "FLOAT32")
        b.add_op(op, [a], [y], **OPTIONS.get(op, {}))
    b.inputs, b.outputs = [x], [y]
    return b.build()


def _input(seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).normal(0, 3, SHAPE).astype(np.float32)
    x.reshape(-1)[:6] = [np.nan, np.inf, -np.inf, -0.0, 1e38, -1e-40]
    return x


@pytest.mark.parametrize("op", UNARY + BINARY + COMPARE)
def test_row_local_op_runs_in_bands_out_of_core(tmp_path, op):
    model = _model(op)
    x = _input(3)
    ref = mi.Interpreter(model)
    ref.set_input(x)
    ref.invoke()
    arena = smallest_out_of_core_arena(model, tmp_path / "a.img", flash=0)
    assert arena < ref.arena_used_bytes / 2
    with mi.Interpreter(model, arena=arena, backing=tmp_path / "a.img", flash=0) as it:
        assert it.out_of_core
        it.set_input(x)
        it.invoke()
        np.testing.assert_array_equal(it.get_output(), ref.get_output())
        modes = {r.op: r.mode for r in it.profile}
        assert modes[op] in ("rows", "chain"), modes
