"""The field-aware fuzzer: it finds the fields, classifies outcomes in a child process, and a short campaign over
in-process seeds (and the zoo, when present) ends with no escape. ``pytest -m slow`` runs a long campaign."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from microinterp.apps.fuzz import campaign, classify, field_slots, mutate, run_mutant
from microinterp.testing.models import demo_cnn

from ..control_flow_models import while_model

ZOO = Path(__file__).resolve().parents[3] / "shared" / "models"


def _infinite_while() -> bytes:
    """A WHILE whose condition never turns false: TFLM (the wheel) loops forever on it too."""
    return while_model("GREATER", -1000, 0)


def _seeds() -> dict[str, bytes]:
    seeds = {"demo_cnn": demo_cnn()}
    for name in ("person_detect", "kws_ref_model", "trained_lstm_int8", "audio_preprocessor_int8", "ad01_int8"):
        path = ZOO / f"{name}.tflite"
        if path.exists():
            seeds[name] = path.read_bytes()
    return seeds


def test_field_slots_find_what_tflm_interprets():
    slots = field_slots(demo_cnn())
    kinds = {s.what.split(" ", 4)[-1].split("[")[0] for s in slots}
    assert {"shape", "type", "buffer", "scale", "zero_point", "opcode_index", "inputs", "outputs"} <= \
        {k.split()[-1] for k in kinds}
    assert any("option field" in s.what for s in slots)
    assert field_slots(b"not a model") == []


def test_mutants_are_reproducible_and_differ_from_their_seed():
    data = demo_cnn()
    a = mutate("demo", data, np.random.default_rng(7))
    b = mutate("demo", data, np.random.default_rng(7))
    assert a.data == b.data and a.edits == b.edits and a.data != data


def test_outcomes_are_classified_in_a_child():
    assert run_mutant(demo_cnn(), "memory").kind == "ok"
    assert run_mutant(demo_cnn(), "out-of-core").kind == "ok"
    bad = run_mutant(b"\x00" * 64, "memory")
    assert (bad.kind, bad.error) == ("typed", "ModelError")
    assert run_mutant(_infinite_while(), "memory", time_limit=3).kind == "hang"


def test_a_hang_the_wheel_shows_too_is_the_models_own_loop():
    pytest.importorskip("tflite_micro")
    o = classify(_infinite_while(), "memory", time_limit=3)
    assert o.kind == "loop" and not o.escaped


def _check(report, out: Path) -> None:
    assert report.mutants > 0
    escapes = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))] if out.exists() else []
    assert not report.escapes, report.summary() + "\n" + json.dumps(escapes[:3], indent=1)


def test_a_short_campaign_has_no_escape(tmp_path):
    report = campaign(_seeds(), 60, tmp_path / "escapes", rng_seed=101, time_limit=30)
    _check(report, tmp_path / "escapes")


def test_every_mode_runs_and_a_short_campaign_of_the_newer_paths_has_no_escape(tmp_path):
    """Every firmware build (target= core and kernel set) and optimize are fuzzed too."""
    from microinterp.apps.fuzz import MODES

    assert {"memory", "out-of-core", "phased", "optimize"} <= set(MODES)
    assert sum(m.startswith("target:") for m in MODES) == 10
    assert run_mutant(demo_cnn(), "target:cortex-m55/cmsis-nn").kind == "ok"
    assert run_mutant(demo_cnn(), "optimize").kind == "ok"
    assert run_mutant(demo_cnn(), "rewrite").kind == "ok"
    modes = ("phased", "target:cortex-m3/cmsis-nn", "target:cortex-m55/cmsis-nn", "target:cortex-m7/reference",
             "optimize", "rewrite")
    report = campaign(_seeds(), 12, tmp_path / "escapes", rng_seed=303, modes=modes, time_limit=30)
    _check(report, tmp_path / "escapes")


@pytest.mark.slow
def test_a_long_campaign_of_every_mode_has_no_escape(tmp_path):
    from microinterp.apps.fuzz import MODES

    report = campaign(_seeds(), 300, tmp_path / "escapes", rng_seed=404, modes=MODES, time_limit=30)
    _check(report, tmp_path / "escapes")


@pytest.mark.slow
def test_a_long_campaign_has_no_escape(tmp_path):
    report = campaign(_seeds(), 3000, tmp_path / "escapes", rng_seed=202, time_limit=30)
    _check(report, tmp_path / "escapes")
