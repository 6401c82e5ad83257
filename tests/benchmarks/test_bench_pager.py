"""Smoke test of benchmarks/bench_pager.py's per-part breakdown: it wraps the engine's live execution and the SD
image, so it must follow them when they move."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import microinterp as mi

from ..pager.conftest import small_net, smallest_out_of_core_arena

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_pager.py"


def test_the_breakdown_times_every_part_and_puts_the_methods_back(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_pager", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    sys.modules["bench_pager"] = bench
    try:
        spec.loader.exec_module(bench)
        model = small_net(6, 64)
        arena = smallest_out_of_core_arena(model, tmp_path / "sd.img")
        with mi.Interpreter(model, arena=arena, backing=tmp_path / "sd.img") as it:
            parts = bench.breakdown(it, 2)
            assert parts["kernels"] > 0 and parts["SD read"] > 0 and parts["SD write"] > 0
            assert parts["total"] >= parts["kernels"] + parts["SD read"] + parts["SD write"]
            assert "compute" not in vars(it.runtime.engine.execution)      # the class's method again
    finally:
        sys.modules.pop("bench_pager", None)
