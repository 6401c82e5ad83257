"""Corrupted, truncated, foreign and reused SD images: detected, recovered where possible, never overwritten."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import microinterp as mi
from microinterp.errors import IntegrityError, StorageError
from microinterp.pager.engine import Engine
from microinterp.testing.models import demo_cnn

from .conftest import in_memory, random_input, small_net, smallest_out_of_core_arena

ARENA = 45_000
#: The corruption tests run on plain images and on encrypted ones (AES-GCM tags instead of checksums).
KEYS = st.sampled_from([None, bytes(range(32))])
DETECTED = "checksum mismatch|authentication failed"


def _flip(path, home, sd, record: int, bit: int) -> int:
    """Flip one payload bit of ``record`` of ``home`` in the image file; returns the byte offset."""
    start = sd.geometry.area(home.device)[0] + home.record_offset(record)
    length = min(home.record_bytes, home.nbytes - record * home.record_bytes)
    at = start + (bit // 8) % length
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)[0]
        f.seek(at)
        f.write(bytes([b ^ (1 << (bit % 8))]))
    return at


def _weight_homes(it):
    """Weights records an invoke reads (an alias's shape tensor, say, is never read at invoke)."""
    used = {ti for p in it.runtime.plans if p.mode not in ("alias", "fused") for ti in p.op.inputs}
    return [h for h in it.runtime.homes if h is not None and h.device == "weights" and h.tensor in used]


@given(pick=st.integers(0, 10**6), bit=st.integers(0, 10**6), key=KEYS)
@example(pick=3516, bit=0, key=None)      # the RESHAPE's shape tensor: on the card but never read at invoke
def test_a_flipped_weight_bit_is_detected_and_recovered(tmp_path_factory, pick, bit, key):
    model = demo_cnn()
    x = random_input(model)
    expected = in_memory(model, x)
    path = tmp_path_factory.mktemp("sd") / "sd.img"
    with mi.Interpreter(model, arena=ARENA, backing=path, flash=0, key=key) as it:
        it.set_input(x)
        it.invoke()
        homes = _weight_homes(it)
        home = homes[pick % len(homes)]
        record = (pick // len(homes)) % home.records
        at = _flip(path, home, it.sd_image, record, bit)
        with pytest.raises(IntegrityError, match=DETECTED) as e:
            it.invoke()
        assert e.value.tensor == f"t{home.tensor} {home.name}" and e.value.tile == record
        assert e.value.area == "weights" and e.value.sd_offset <= at
    with mi.Interpreter(model, arena=ARENA, backing=path, flash=0, recover=True, key=key) as it:
        assert it.sd_image.action == "reused"          # the table is intact: only the record's data is bad
        it.set_input(x)
        it.invoke()
        assert np.array_equal(it.get_output(), expected)
        assert len(it.recoveries) == 1 and it.recoveries[0]["area"] == "weights"
        it.invoke()                                     # repaired on the card: no second recovery
        assert len(it.recoveries) == 1 and np.array_equal(it.get_output(), expected)


def _corrupt_after(monkeypatch, path, op_index: int, bit: int):
    """Flip a bit of op ``op_index``'s first output record right after the op wrote it (silent cell corruption
    between a write and the next read)."""
    original, original_chain = Engine.run_op, Engine.run_chain
    seen = []

    def corrupt(self, plan):
        home = self.homes[plan.op.outputs[0]]
        seen.append(_flip(path, home, self.sd, bit % home.records, bit // 7))

    def run_op(self, plan, bufs, record, only=None, depth=0):
        original(self, plan, bufs, record, only, depth)
        if plan.index == op_index and only is None and not seen:
            corrupt(self, plan)

    def run_chain(self, chain, bufs, records, only=None, depth=0):     # a fused chain writes its last op's output
        original_chain(self, chain, bufs, records, only, depth)
        if chain.last.index == op_index and only is None and not seen:
            corrupt(self, chain.last)

    monkeypatch.setattr(Engine, "run_op", run_op)
    monkeypatch.setattr(Engine, "run_chain", run_chain)
    return seen


def _on_card(pager, op: int) -> int:
    """``op``, or the nearest later op whose output is on the card (not an alias, not inside a fused chain)."""
    while pager.plans[op].mode == "alias" or pager.plans[op].op.outputs[0] in pager.fused_tensors:
        op += 1
    return op


@given(op=st.integers(0, 9), bit=st.integers(0, 10**6), key=KEYS)
def test_a_flipped_activation_bit_is_detected_and_recomputed(tmp_path_factory, op, bit, key):
    model = demo_cnn()
    x = random_input(model, 1)
    expected = in_memory(model, x)
    path = tmp_path_factory.mktemp("sd") / "sd.img"
    with pytest.MonkeyPatch.context() as mp:
        with mi.Interpreter(model, arena=ARENA, backing=path, key=key) as it:
            if it.runtime.plans[op].mode == "alias":
                op -= 1
            op = _on_card(it.runtime, op)
            _corrupt_after(mp, path, op, bit)
            it.set_input(x)
            with pytest.raises(IntegrityError, match=DETECTED):
                it.invoke()
        with mi.Interpreter(model, arena=ARENA, backing=path, recover=True, key=key) as it:
            _corrupt_after(mp, path, op, bit)
            it.set_input(x)
            it.invoke()
            assert np.array_equal(it.get_output(), expected)
            assert [(r["action"], r["producer"]) for r in it.recoveries] == [("recomputed", op)]
            assert sum(r.recoveries for r in it.profile) == 1


@pytest.mark.parametrize("key", [None, bytes(range(32))])
def test_a_corrupted_model_input_cannot_be_recomputed(tmp_path, key):
    model = demo_cnn()
    with mi.Interpreter(model, arena=ARENA, backing=tmp_path / "sd.img", recover=True, key=key) as it:
        it.set_input(random_input(model))
        home = it.runtime.homes[it.get_input_details(0)["index"]]
        _flip(tmp_path / "sd.img", home, it.sd_image, 0, 5)
        with pytest.raises(IntegrityError, match="model input"):
            it.invoke()


def test_reopening_reuses_the_weights(tmp_path):
    model, path = demo_cnn(), tmp_path / "sd.img"
    x = random_input(model)
    with mi.Interpreter(model, arena=ARENA, backing=path, flash=0) as it:
        assert it.sd_image.action == "created" and it.runtime.weights_written > 0
    before = os.path.getmtime(path), os.path.getsize(path)
    with mi.Interpreter(model, arena=ARENA, backing=path, flash=0) as it:
        assert it.sd_image.action == "reused" and it.runtime.weights_written == 0
        it.set_input(x)
        it.invoke()
        assert np.array_equal(it.get_output(), in_memory(model, x))
    assert os.path.getsize(path) == before[1]


def test_an_image_of_another_model_is_reinitialised(tmp_path):
    path = tmp_path / "sd.img"
    with mi.Interpreter(demo_cnn(), arena=ARENA, backing=path, flash=0):
        pass
    other = small_net(4, 64)
    x = random_input(other)
    arena = smallest_out_of_core_arena(other, tmp_path / "probe.img", flash=0)
    with mi.Interpreter(other, arena=arena, backing=path, flash=0) as it:
        assert it.out_of_core and it.sd_image.action == "reinitialised"
        it.set_input(x)
        it.invoke()
        assert np.array_equal(it.get_output(), in_memory(other, x))


def test_a_truncated_image_is_rebuilt(tmp_path):
    model, path = demo_cnn(), tmp_path / "sd.img"
    with mi.Interpreter(model, arena=ARENA, backing=path, flash=0):
        pass
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    x = random_input(model)
    with mi.Interpreter(model, arena=ARENA, backing=path, flash=0) as it:
        assert it.sd_image.action == "rebuilt" and it.sd_image.reason
        it.set_input(x)
        it.invoke()
        assert np.array_equal(it.get_output(), in_memory(model, x))


def test_a_foreign_file_is_never_overwritten(tmp_path):
    path = tmp_path / "thesis.docx"
    content = b"PK\x03\x04 not an SD image" * 100
    path.write_bytes(content)
    with pytest.raises(StorageError, match="not a microinterp SD image"):
        mi.Interpreter(demo_cnn(), arena=ARENA, backing=path)
    assert path.read_bytes() == content


def test_an_integrity_error_names_the_repair_and_the_repair_lasts(tmp_path, capsys):
    """The error on a damaged weight record says how to repair the image (recover=True; on the command line
    --recover); a run with --recover rewrites the record from the model, and later runs need no repair."""
    from microinterp.apps.cli import main

    model, path = demo_cnn(), tmp_path / "sd.img"
    mfile, xfile = tmp_path / "m.tflite", tmp_path / "x.npy"
    mfile.write_bytes(model)
    x = random_input(model)
    np.save(xfile, x)
    with mi.Interpreter(model, arena=ARENA, backing=path, flash=0) as it:
        it.set_input(x)
        it.invoke()
        home = _weight_homes(it)[0]
        _flip(path, home, it.sd_image, 0, 3)
    for _ in range(2):                  # the same precise error on every reopen, with the way out
        with mi.Interpreter(model, arena=ARENA, backing=path, flash=0) as it, \
                pytest.raises(IntegrityError, match="run again with recover=True") as e:
            it.invoke()
        assert "weight records rewritten from the model" in str(e.value) and e.value.area == "weights"
        assert f"microinterp run MODEL --backing {path} --recover" in str(e.value)
    run = ["run", str(mfile), "--input", str(xfile), "--arena", str(ARENA), "--backing", str(path), "--flash", "0"]
    assert main([*run, "--mcu", "stm32f746"]) == 1
    err = capsys.readouterr().err
    assert "run again with --recover" in err and "recover=True" not in err
    assert main([*run, "--recover", "--json"]) == 0
    capsys.readouterr()
    with mi.Interpreter(model, arena=ARENA, backing=path, flash=0) as it:      # repaired on the card for good
        it.set_input(x)
        it.invoke()
        assert np.array_equal(it.get_output(), in_memory(model, x)) and not it.recoveries
