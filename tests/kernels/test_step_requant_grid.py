"""GridIndex: searchsorted(thresholds, keys, "right") by a linear guess and corrections, for any sorted thresholds."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from microinterp.kernels._step_requant import GridIndex


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 300), st.floats(1.0, 1e6), st.integers(0, 2**32 - 1),
       st.sampled_from(["grid", "ends", "random", "padded", "float"]))
def test_grid_index_is_searchsorted(n, step, seed, kind):
    rng = np.random.default_rng(seed)
    if kind == "random":
        t = np.sort(rng.integers(-2**40, 2**40, n))
    else:
        t = np.sort(np.round((np.arange(n) + rng.uniform(-0.4, 0.4, n)) * step).astype(np.int64))
        if kind == "ends":       # an MBQM step function's end markers: far below and far above the grid
            t = np.concatenate([[t[0] - 10**9], t, [t[-1] + 10**12]])
        if kind == "padded":     # a coded step function: entries below every key, then a lowest key
            t = np.concatenate([np.full(int(rng.integers(0, 40)), np.iinfo(np.int64).min), [t[0] - 10**9], t])
        if kind == "float":      # float64 thresholds padded with -inf
            t = np.concatenate([np.full(int(rng.integers(0, 40)), -np.inf), [t[0] - 10.0**9], t.astype(np.float64)])
    finite = t[np.isfinite(t)] if t.dtype.kind == "f" else t[t != np.iinfo(np.int64).min]
    keys = rng.integers(int(finite[0]) - 10**7, int(finite[-1]) + 10**7, size=(37, 5)).astype(t.dtype)
    keys.ravel()[:min(len(finite), keys.size)] = finite[:keys.size]     # every threshold itself is a key
    assert np.array_equal(GridIndex(t)(keys), t.searchsorted(keys, "right"))
