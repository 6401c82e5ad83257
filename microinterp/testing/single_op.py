"""Helpers for differential tests of one op: random quantized inputs and an assertion against the TFLM wheel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .tflm import compare_optimized, compare_with_tflm, uses_optimized

_RANGES = {"INT8": (-128, 127), "UINT8": (0, 255), "INT16": (-32768, 32767), "INT32": (-(1 << 31), (1 << 31) - 1)}


def random_tensor(rng: np.random.Generator, shape: Sequence[int], type_name: str = "INT8",
                  low: float | None = None, high: float | None = None) -> np.ndarray:
    """Uniform random values over the whole range of ``type_name`` (or [low, high]); floats in [-4, 4)."""
    type_name = type_name.upper()
    if type_name == "FLOAT32":
        lo = -4.0 if low is None else low
        hi = 4.0 if high is None else high
        return rng.uniform(lo, hi, size=tuple(shape)).astype(np.float32)
    lo, hi = _RANGES[type_name]
    lo = lo if low is None else int(low)
    hi = hi if high is None else int(high)
    dtype = {"INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16, "INT32": np.int32}[type_name]
    return rng.integers(lo, hi, size=tuple(shape), endpoint=True).astype(dtype)


def assert_matches_tflm(model: Any, inputs: Sequence[np.ndarray] | np.ndarray, *, optimized: bool = False,
                        per_op: bool = True) -> list[np.ndarray]:
    """Run ``model`` in microinterp and in the wheel; raise AssertionError naming the first differing op.

    When some op of the model has an optimized kernel, the optimized run must also equal the reference run, op by
    op — so every differential case of a reference kernel is a differential case of its optimized kernel too.
    """
    result = compare_with_tflm(model, inputs, optimized=optimized, per_op=per_op)
    if not result.ok:
        raise AssertionError(f"microinterp differs from TFLM: {result}")
    if uses_optimized(model):
        opt = compare_optimized(model, inputs)
        if not opt.ok:
            raise AssertionError(f"optimized kernels differ from the reference kernels: {opt}")
    return result.outputs
