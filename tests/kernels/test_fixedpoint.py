"""The streamlined requantization primitives (kernels/_fixedpoint.py) equal the literal ones in quant.py."""

from __future__ import annotations

import numpy as np
import pytest

from microinterp import quant
from microinterp.kernels import _fixedpoint as fp


def _boundary_values(rng: np.random.Generator, m: int) -> np.ndarray:
    """int32 values at and around every rounding boundary of SRDHM(., m) for a sample of quotients."""
    q = rng.integers(-(1 << 31), 1 << 31, 400)
    base = (q * (1 << 31) - (1 << 30)) // max(m, 1)
    x = (base[:, None] + np.arange(-3, 4)[None, :]).reshape(-1)
    x = np.concatenate([x, rng.integers(-(1 << 31), 1 << 31, 2000), [quant.INT32_MIN, quant.INT32_MAX, 0, -1, 1]])
    return x[(x >= quant.INT32_MIN) & (x <= quant.INT32_MAX)].astype(np.int64)


@pytest.mark.parametrize("seed", range(6))
def test_srdhm_rdbpot_mbqm_match_quant(seed):
    rng = np.random.default_rng(seed)
    for _ in range(20):
        m = int(rng.integers(1 << 30, 1 << 31)) if rng.integers(0, 8) else int(rng.integers(0, 1 << 31))
        x = _boundary_values(rng, m)
        assert np.array_equal(fp.srdhm(x, m), quant.srdhm(x, m))
        e = int(rng.integers(0, 32))
        assert np.array_equal(fp.rdbpot(x, e), quant.rdbpot(x, e))
        shift = int(rng.integers(-31, 8))
        assert np.array_equal(fp.mbqm(x, m, shift), quant.mbqm(x, m, shift))
        if shift <= 0:
            assert np.array_equal(fp.mbqm_smaller_than_one_exp(x, m, shift),
                                  quant.mbqm_smaller_than_one_exp(x, m, shift))


def test_per_channel_arrays():
    rng = np.random.default_rng(9)
    m = rng.integers(1 << 30, 1 << 31, 16)
    shift = rng.integers(-20, 5, 16)
    shift[:3] = 0
    x = rng.integers(-(1 << 31), 1 << 31, (50, 16))
    assert np.array_equal(fp.mbqm(x, m, shift), quant.mbqm(x, m, shift))
    e = np.maximum(-shift, 0)
    assert np.array_equal(fp.rdbpot(x, e), quant.rdbpot(x, e))


def test_rdbpot_exhaustive_small_range():
    x = np.arange(-5000, 5000, dtype=np.int64)
    for e in range(14):
        assert np.array_equal(fp.rdbpot(x, e), quant.rdbpot(x, e))
