"""Host time per op, time in kernels and the interpreter overhead (microinterp.host_profile)."""

from __future__ import annotations

import numpy as np
import pytest

import microinterp as mi
from microinterp.testing.models import demo_cnn


def _input(it):
    d = it.get_input_details(0)
    return np.random.default_rng(0).integers(-128, 128, size=tuple(d["shape"])).astype(np.int8)


def test_in_memory_overhead_is_measured_around_the_kernels():
    it = mi.Interpreter(demo_cnn())
    x = _input(it)
    it.set_input(x, 0)
    it.invoke()
    want = it.get_output(0).copy()
    it.set_input(x, 0)                  # the invoke may have overwritten its input (planned memory is shared)
    hp = it.host_profile(rounds=5)
    assert hp.rounds == 5 and not hp.out_of_core
    assert len(hp.op_seconds) == len(it.profile) and all(s > 0 for s in hp.op_seconds)
    assert 0 < hp.kernel_seconds <= hp.total_seconds
    assert 0 <= hp.overhead < 1
    assert "interpreter overhead" in hp.summary()
    np.testing.assert_array_equal(it.get_output(0), want)     # the timing loop runs the same calls


def test_overhead_counts_what_is_not_a_kernel(monkeypatch):
    """A slow loop around fast kernels shows as overhead: replace every call by a no-op and the time left is the
    interpreter's own."""
    it = mi.Interpreter(demo_cnn())
    it.runtime.calls = [((lambda: None), i) for _, i in it.runtime.calls]
    hp = it.host_profile(rounds=5)
    assert hp.overhead > 0.2


def test_out_of_core_reports_ops_and_the_pager_outside_them(tmp_path):
    it = mi.Interpreter(demo_cnn(), arena=45_000, backing=tmp_path / "sd.img")
    assert it.out_of_core
    it.set_input(_input(it), 0)
    hp = it.host_profile(rounds=2, warmup=1)
    assert hp.out_of_core and len(hp.op_seconds) == len(it.profile)
    assert 0 < hp.kernel_seconds <= hp.total_seconds and 0 <= hp.overhead < 1
    it.close()


def test_rounds_must_be_positive():
    with pytest.raises(ValueError, match="rounds"):
        mi.Interpreter(demo_cnn()).host_profile(rounds=0)
