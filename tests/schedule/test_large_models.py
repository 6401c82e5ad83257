"""VGG16 / AlexNet / MobileNet v1 shaped models (SwapNN's) at 512 KB SRAM and 128 KB tiles: the scheduler's totals
equal the pager's counters, and the overheads stay within what docs/scheduler.md reports (slow: building VGG16
takes seconds)."""

from __future__ import annotations

import pytest

from microinterp.runtime.profile import totals
from microinterp.schedule import build_graph, simulate
from microinterp.schedule.run import Config, open_records, run
from microinterp.testing import models

pytestmark = pytest.mark.slow

#: (model, latency overhead at most, SwapNN's latency overhead) at 20 MB/s, base schedule and double buffering
CASES = [("mobilenet_v1", 0.75, 1.50), ("alexnet", 1.45, 0.50), ("vgg16", 0.31, 0.069)]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    out = {}
    for name, *_ in CASES:
        path = d / f"{name}.tflite"
        path.write_bytes(getattr(models, name)())
        out[name] = str(path)
    return out


@pytest.mark.parametrize("name,at_most,swapnn", CASES)
def test_totals_match_and_overheads(built, tmp_path, name, at_most, swapnn):
    cfg = Config(sram=512 * 1024, tile=128 * 1024, frames=2, flash=0)
    opened = open_records(built[name], cfg, tmp_path / "sd.img")
    try:
        assert opened.out_of_core
        g = build_graph(opened.records, pager=opened.pager, mcu=opened.mcu, frames=2)
        assert g.precise
        want, got = totals(opened.records), g.totals(0)
        for k in ("sd_read_commands", "sd_read_bytes", "sd_read_payload", "sd_write_commands", "sd_write_bytes",
                  "sd_write_payload", "tiles"):
            assert got[k] == want[k], k
        assert g.totals(1)["sd_read_bytes"] == want["sd_read_bytes"]
        s = simulate(g, preempt=True)
        assert s.makespan > 0
    finally:
        opened.close()
    r, _, _ = run(built[name], cfg, name, tmp_path / "b.img")
    assert 0 < r.latency_overhead <= at_most
    db, _, _ = run(built[name], Config(sram=512 * 1024, tile=128 * 1024, frames=2, flash=0, double_buffer=True),
                   name, tmp_path / "c.img")
    assert db.latency_s <= r.latency_s * 1.01
    if name == "mobilenet_v1":
        assert r.latency_overhead < swapnn          # beats SwapNN's +150 %


@pytest.mark.parametrize("name,at_most,swapnn", CASES)
def test_reference_kernel_costs_beat_swapnn_at_20_mb_s(built, tmp_path, name, at_most, swapnn):
    """Issue 6's goal in the regime of SwapNN's figures: TFLM's reference kernels on the 216 MHz M7 (S_cpu ≈ 145
    MMAC/s for conv), the profile's 20/10 MB/s card, double buffering: every latency overhead beats SwapNN's."""
    cfg = Config(sram=512 * 1024, tile=128 * 1024, frames=2, flash=0, kernels="reference", double_buffer=True,
                 sd_read_mb_s=20, sd_write_mb_s=10)
    r, _, _ = run(built[name], cfg, name, tmp_path / "r.img")
    assert r.options["kernels"] == "reference"
    assert 0 < r.latency_overhead < swapnn
