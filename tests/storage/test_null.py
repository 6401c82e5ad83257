"""NullStorage: out of core with no image -- the same tiles, traffic and cycles as an SD image, nothing written."""

from __future__ import annotations

import os

import pytest

import microinterp as mi
from microinterp.errors import StorageError
from microinterp.storage.null import NullStorage
from microinterp.testing.models import demo_cnn


def test_a_dry_run_counts_what_an_image_would_and_writes_nothing(tmp_path):
    model = demo_cnn()
    before = set(os.listdir(tmp_path))
    with mi.Interpreter(model, arena=45_000, backing=NullStorage(), flash=0) as dry:
        assert dry.out_of_core and dry.sd_image.action.startswith("dry run")
        counted = dry.simulate()
    assert set(os.listdir(tmp_path)) == before
    with mi.Interpreter(model, arena=45_000, backing=tmp_path / "sd.img", flash=0) as real:
        real.invoke()
        moved = real.profile
    key = [(r.op, [(t.rows, t.io, t.compute_cycles, t.io_cycles, t.hash_cycles) for t in r.tiles]) for r in moved]
    assert [(r.op, [(t.rows, t.io, t.compute_cycles, t.io_cycles, t.hash_cycles) for t in r.tiles])
            for r in counted] == key


def test_invoking_a_dry_run_says_what_to_pass():
    with mi.Interpreter(demo_cnn(), arena=45_000, backing=NullStorage(), flash=0) as it, \
            pytest.raises(StorageError, match="stores nothing.*backing='sd.img'"):
        it.invoke()


def test_profile_dry_run_leaves_no_image(tmp_path, capsys):
    from microinterp.apps.cli import main

    model = tmp_path / "m.tflite"
    model.write_bytes(demo_cnn())
    img = tmp_path / "sd.img"
    assert main(["profile", str(model), "--arena", "45000", "--backing", str(img), "--dry-run"]) == 0
    assert "MCU estimate" in capsys.readouterr().out and not img.exists()
