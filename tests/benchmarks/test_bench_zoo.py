"""Smoke test of the benchmark script (benchmarks/bench_zoo.py): a --quick run on one small generated model."""

from __future__ import annotations

import pytest

from ._scripts import benchmark_script


@pytest.fixture(scope="module")
def bench():
    pytest.importorskip("tflite_micro")
    with benchmark_script("bench_zoo") as module:
        yield module


def test_quick_run_writes_the_table(bench, tmp_path, capsys):
    out = tmp_path / "bench.md"
    results = bench.run(["--quick", "--models", "gen_demo", "--output", str(out)])
    assert [r.name for r in results] == ["gen_demo_cnn"]
    r = results[0]
    assert r.exact and min(r.wheel_ms, r.optimized_ms, r.reference_ms) > 0
    printed = capsys.readouterr().out
    assert "wheel/opt" in printed and "gen_demo_cnn" in printed
    text = out.read_text()
    for needle in ("| model | source | wheel ms | optimized ms | reference ms | wheel/opt | wheel/ref |",
                   "goal / met?", "| CPU |", "| cores |", "| NumPy |", "BLAS", "| Python |", "| date |",
                   "| gen_demo_cnn | generated |", "--quick"):
        assert needle in text, needle


def test_options(bench, capsys):
    assert bench.parse_args([]).rounds == 15 and bench.parse_args([]).output == bench.DEFAULT_OUTPUT
    quick = bench.parse_args(["--quick"])
    assert quick.rounds == 3 and quick.output is None  # a quick run never overwrites docs/benchmarks.md by itself
    with pytest.raises(SystemExit):
        bench.parse_args(["--rounds", "5"])  # a result needs >= 10 rounds
    with pytest.raises(SystemExit, match="unknown model 'nope'"):
        bench.select_cases(bench.all_cases(), "nope")
    assert bench.run(["--list"]) == [] and "gen_mobilenet_v1_96" in capsys.readouterr().out


def test_goal_cells(bench):
    assert bench.goal_cell(10.5, 10.0) == "≥ 10 / yes" and bench.goal_cell(0.19, 0.2) == "≥ 0.2 / no"
    assert bench.goal_cell(3.0, None) == "—"
    assert bench.GOALS["mobilenet_v2_quantized_1x3x224x224"] == 10 and bench.GEOMEAN_GOAL == 4
