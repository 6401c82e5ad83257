"""Smoke test of benchmarks/bench_pager.py's per-part breakdown: it wraps the engine's live execution and the SD
image, so it must follow them when they move."""

from __future__ import annotations

import microinterp as mi

from ..pager.conftest import small_net, smallest_out_of_core_arena
from ._scripts import benchmark_script


def test_the_breakdown_times_every_part_and_puts_the_methods_back(tmp_path):
    with benchmark_script("bench_pager") as bench:
        model = small_net(6, 64)
        arena = smallest_out_of_core_arena(model, tmp_path / "sd.img")
        with mi.Interpreter(model, arena=arena, backing=tmp_path / "sd.img") as it:
            parts = bench.breakdown(it, 2)
            assert parts["kernels"] > 0 and parts["SD read"] > 0 and parts["SD write"] > 0
            assert parts["total"] >= parts["kernels"] + parts["SD read"] + parts["SD write"]
            assert "compute" not in vars(it.runtime.engine.execution)      # the class's method again
