"""Smoke test of benchmarks/bench_sequence.py: a short run (3 time steps, one round, one wider float LSTM) checks
every model against the wheel and prints the table and the float LSTM's floor."""

from __future__ import annotations

import pytest

from ._scripts import benchmark_script


@pytest.fixture(scope="module")
def bench():
    pytest.importorskip("tflite_micro")
    with benchmark_script("bench_sequence") as module:
        yield module


def test_short_run_prints_every_model_and_the_floor(bench, capsys):
    assert bench.main(["--rounds", "1", "--steps", "3", "--states", "64"]) == 0
    printed = capsys.readouterr().out
    rows = [line for line in printed.splitlines() if line.endswith("| bit-exact |")]
    assert [r.split(" | ")[0] for r in rows] == ["| LSTM float32, 3 steps", "| LSTM int8, 3 steps",
                                                "| LSTM float32, 3 steps, 64 states",
                                                "| SVDF float32 (float32 state)", "| SVDF int8 (int16 state)"]
    assert "| **sum: one step** |" in printed
    assert "floor: 3 steps x" in printed and "at best" in printed
