"""Shared helpers of the SOFTMAX / LOGISTIC / TANH / HARD_SWISH differential tests: one-op models, strategies for
scales and zero points, and a refusal check against both microinterp and the wheel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.errors import PrepareError
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.single_op import assert_matches_tflm, random_tensor
from microinterp.testing.tflm import TflmRunner

RANGES = {"INT8": (-128, 127), "INT16": (-32768, 32767)}


def unary_model(op: str, shape: Sequence[int], in_type: str, out_type: str | None = None,
                in_q: tuple[float, int] | None = None, out_q: tuple[float, int] | None = None,
                **options: Any) -> bytes:
    """A model with one ``op`` from a graph input of ``shape`` to a graph output of the same shape."""
    out_type = out_type or in_type
    b = ModelBuilder()
    x = b.add_tensor("x", shape, in_type, **_q(in_q))
    y = b.add_tensor("y", shape, out_type, **_q(out_q))
    b.add_op(op, [x], [y], **options)
    b.inputs, b.outputs = [x], [y]
    return b.build()


def _q(q: tuple[float, int] | None) -> dict:
    return {} if q is None else {"scale": float(q[0]), "zero_point": int(q[1])}


def run_case(model: bytes, shape: Sequence[int], type_name: str, seed: int, *, include_all_values: bool = False,
             low: float | None = None, high: float | None = None) -> None:
    """Random input (optionally starting with every value of an 8-bit type) through microinterp and the wheel."""
    rng = np.random.default_rng(seed)
    x = random_tensor(rng, shape, type_name, low, high)
    if include_all_values and type_name == "INT8":
        flat = x.reshape(-1)
        n = min(flat.size, 256)
        flat[:n] = np.arange(-128, -128 + n, dtype=np.int8)
        rng.shuffle(flat)
    assert_matches_tflm(model, [x])


def float32_scales(lo: float = -3.0, hi: float = 0.5):
    """Log-uniform positive scales, as float32 values."""
    return st.floats(lo, hi).map(lambda e: float(np.float32(10.0 ** e)))


def zero_points(type_name: str = "INT8"):
    lo, hi = RANGES[type_name]
    return st.one_of(st.sampled_from([lo, lo + 1, 0, hi - 1, hi]), st.integers(lo, hi))


def shapes(min_rank: int = 1, max_rank: int = 4, max_side: int = 6, max_last: int = 40):
    """Shapes of rank 1..4 with a longer last axis (the softmax axis)."""
    return st.tuples(st.lists(st.integers(1, max_side), min_size=min_rank - 1, max_size=max_rank - 1),
                     st.integers(1, max_last)).map(lambda t: (*t[0], t[1]))


def assert_refused(model: bytes, match: str | None = None, wheel: bool = True) -> None:
    """microinterp raises PrepareError at build time; with ``wheel`` the wheel refuses the model too."""
    with pytest.raises(PrepareError, match=match):
        Interpreter(model)
    if wheel:
        with pytest.raises(RuntimeError):
            TflmRunner(model)
