"""``microinterp schedule`` and ``microinterp sweep`` on a small generated model (plots when matplotlib is there)."""

from __future__ import annotations

import csv
import json

import pytest

from microinterp.apps.cli import main
from microinterp.testing.models import demo_cnn


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "demo.tflite"
    path.write_bytes(demo_cnn())
    return str(path)


def test_schedule_prints_the_overheads_and_json(model, capsys):
    assert main(["schedule", model, "--sram", "45K", "--tile", "8K", "--frames", "2"]) == 0
    out = capsys.readouterr().out
    assert "per-frame latency" in out and "compute-only" in out and "GB/day" in out and "mJ" in out
    assert main(["schedule", model, "--sram", "45K", "--tile", "8K", "--json", "--no-input-reuse"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "ok" and doc["io_tasks"] > 0 and doc["latency_s"] >= doc["compute_only_s"]
    assert doc["options"]["input_reuse"] is False


def test_schedule_kernel_set_sets_the_compute_costs(model, capsys):
    docs = {}
    for ks in ("cmsis-nn", "reference"):
        assert main(["schedule", model, "--sram", "45K", "--tile", "8K", "--frames", "1", "--json",
                     "--kernels", ks]) == 0
        docs[ks] = json.loads(capsys.readouterr().out)
    assert docs["cmsis-nn"]["options"]["kernels"] == "optimized"
    assert docs["reference"]["options"]["kernels"] == "reference"
    # same tiles and bytes, slower kernels: only the compute side changes
    assert docs["reference"]["sd_read_bytes"] == docs["cmsis-nn"]["sd_read_bytes"]
    assert docs["reference"]["compute_only_s"] > 2 * docs["cmsis-nn"]["compute_only_s"]


def test_sweep_writes_csv_and_json_in_parallel(model, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["sweep", model, "--sram", "45K,64K", "--tile", "4K,8K,64", "--frames", "2", "--jobs", "2",
                 "--variants", "base,double-buffer", "--flash", "0", "--out", str(out)]) == 0
    with open(out / "demo.tflite-sweep.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * 2 * 3
    assert {r["status"][:4] for r in rows} == {"ok", "does"}     # a 64-byte tile cannot hold a row
    doc = json.loads((out / "demo.tflite-sweep.json").read_text())
    ok = [r for r in doc["results"] if r["status"] == "ok"]
    assert ok and all(r["io_tasks"] > 0 for r in ok)
    # smaller tiles: at least as many IO tasks
    base = {(r["sram"], r["tile"]): r for r in ok if r["variant"] == "base"}
    assert base[(45 * 1024, 4096)]["io_tasks"] >= base[(45 * 1024, 8192)]["io_tasks"]
    err = capsys.readouterr().err        # progress: one line per grid point as it finishes
    assert [ln for ln in err.splitlines() if ln.startswith("sweep [")][-1].startswith("sweep [12/12]")


def test_a_model_that_fits_runs_in_core(model, capsys):
    assert main(["schedule", model, "--sram", "512K"]) == 0
    out = capsys.readouterr().out
    assert "[runs in core]" in out and "0 IO" in out and "overhead +0.0%" in out and "per-layer" not in out


def test_unknown_generated_model_and_variant(capsys):
    with pytest.raises(SystemExit):
        main(["schedule", "gen:nope"])
    with pytest.raises(SystemExit):
        main(["sweep", "gen:demo_cnn", "--variants", "bogus"])


def test_plots_render(model, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    gantt, mem = tmp_path / "g.png", tmp_path / "m.png"
    assert main(["schedule", model, "--sram", "45K", "--tile", "8K", "--frames", "2", "--gantt", str(gantt),
                 "--memory", str(mem)]) == 0
    assert gantt.stat().st_size > 5000 and mem.stat().st_size > 5000 and (tmp_path / "g-frames.png").exists()
    out = tmp_path / "out"
    assert main(["sweep", model, "--sram", "45K,64K", "--tile", "4K,8K", "--frames", "1", "--plots",
                 "--out", str(out)]) == 0
    assert (out / "demo.tflite-latency-throughput.png").stat().st_size > 5000
    assert (out / "demo.tflite-tasks.png").stat().st_size > 5000


def test_plots_say_how_to_get_matplotlib(monkeypatch):
    import builtins

    from microinterp.schedule import plots

    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(plots.PlotError, match=r"microinterp\[plot\]"):
        plots.plot_tasks([], "x.png")


def test_schedule_and_sweep_speak_the_common_vocabulary(model, tmp_path, capsys):
    """--arena as everywhere (--sram stays an alias), --pools A:B:C as run and profile take it, --json on sweep."""
    assert main(["schedule", model, "--arena", "45K", "--tile", "8K", "--pools", "1:2:1", "--frames", "1",
                 "--json"]) == 0
    a = json.loads(capsys.readouterr().out)
    assert main(["schedule", model, "--sram", "45K", "--tile", "8K", "--pools", "1,2,1", "--frames", "1",
                 "--json"]) == 0
    b = json.loads(capsys.readouterr().out)
    assert a["sram"] == b["sram"] == 45 * 1024 and a["latency_s"] == b["latency_s"]
    assert main(["sweep", model, "--arena", "45K", "--tile", "8K", "--frames", "1", "--out", str(tmp_path / "sw"),
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["results"][0]["status"] == "ok" and (tmp_path / "sw" / "demo.tflite-sweep.csv").exists()
