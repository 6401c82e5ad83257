"""Encrypted SD images (storage/crypto.py): no plaintext record on the card, exact outputs, and tampering, moved
records, replayed records, wrong and missing keys all detected; nonces never repeat across reopens; the cost model
charges AES-GCM."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

import microinterp as mi
from microinterp.errors import IntegrityError, StorageError
from microinterp.pager.engine import Engine
from microinterp.storage.crypto import RecordCipher, check_key
from microinterp.testing.models import demo_cnn

pytest.importorskip("cryptography")

KEY = bytes(range(32))
ARENA = 45_000


def _model_and_input():
    model = demo_cnn()
    x = np.random.default_rng(4).integers(-128, 128, size=(1, 64, 64, 3), dtype=np.int8)
    ref = mi.Interpreter(model)
    ref.set_input(x)
    ref.invoke()
    return model, x, ref.get_output()


def _run(model, x, path, **kw):
    it = mi.Interpreter(model, arena=ARENA, backing=path, flash=0, **kw)
    it.set_input(x)
    it.invoke()
    return it


def _file_digest(path) -> bytes:
    return hashlib.sha256(Path(path).read_bytes()).digest()


def test_no_plaintext_record_is_on_the_card_and_outputs_are_exact(tmp_path):
    model, x, expected = _model_and_input()
    path = tmp_path / "sd.img"
    with _run(model, x, path, key=KEY) as it:
        assert np.array_equal(it.get_output(), expected) and it.sd_image.encrypted
        raw = Path(path).read_bytes()
        checked = 0
        for home in it.runtime.homes:
            if home is None or home.device != "weights":
                continue
            data = np.asarray(it.runtime.tensors[home.tensor].data).reshape(-1).view(np.uint8).tobytes()
            for r in range(home.records):
                record = data[r * home.record_bytes:(r + 1) * home.record_bytes]
                if len(record) >= 16 and len(set(record)) > 1:
                    assert record not in raw
                    checked += 1
        assert checked > 10
        for chunk in range(0, x.size - 64, 64):                  # the input, written to the card by set_input
            assert x.tobytes()[chunk:chunk + 64] not in raw
    with _run(model, x, tmp_path / "plain.img") as plain:      # the same search finds the plaintext otherwise
        w = next(h for h in plain.runtime.homes if h is not None and h.device == "weights" and h.nbytes >= 64)
        data = np.asarray(plain.runtime.tensors[w.tensor].data).reshape(-1).view(np.uint8).tobytes()
        assert data[:64] in (tmp_path / "plain.img").read_bytes()


def test_reopening_with_the_key_reuses_and_continues_the_nonces(tmp_path):
    model, x, expected = _model_and_input()
    path = tmp_path / "sd.img"
    with _run(model, x, path, key=KEY) as it:
        first = {RecordCipher.counter_of(e[2]) for a in ("weights", "activations")
                 for e in it.sd_image._entries[a].values()}
    with _run(model, x, path, key=KEY.hex()) as it:             # a key as 64 hex digits
        assert it.sd_image.action == "reused" and np.array_equal(it.get_output(), expected)
        again = [RecordCipher.counter_of(e[2]) for e in it.sd_image._entries["activations"].values()]
        assert len(set(again)) == len(again) and min(again) > max(first)


def test_wrong_or_missing_key_is_refused_and_the_image_untouched(tmp_path):
    model, x, _ = _model_and_input()
    path = tmp_path / "sd.img"
    _run(model, x, path, key=KEY).close()
    before = _file_digest(path)
    for key, match in ((None, "encrypted SD image: pass its key"), (bytes(32), "wrong key")):
        with pytest.raises(StorageError, match=match):
            mi.Interpreter(model, arena=ARENA, backing=path, flash=0, key=key)
    with pytest.raises(StorageError, match="wrong key"):        # another model, wrong key: still not touched
        mi.Interpreter(demo_cnn(seed=3), arena=ARENA, backing=path, flash=0, key=bytes(32))
    assert _file_digest(path) == before
    for bad in (b"short", "zz" * 32, 12345):
        with pytest.raises(StorageError, match="key"):
            check_key(bad)


def test_a_plain_image_opened_with_a_key_is_reinitialised_encrypted(tmp_path):
    model, x, expected = _model_and_input()
    path = tmp_path / "sd.img"
    _run(model, x, path).close()
    with _run(model, x, path, key=KEY) as it:
        assert it.sd_image.action == "reinitialised" and "encryption" in it.sd_image.reason
        assert np.array_equal(it.get_output(), expected)


def _swap(path, a: int, b: int, n: int) -> None:
    with open(path, "r+b") as f:
        f.seek(a)
        x = f.read(n)
        f.seek(b)
        y = f.read(n)
        f.seek(a)
        f.write(y)
        f.seek(b)
        f.write(x)


def test_records_moved_between_slots_are_detected(tmp_path):
    model, x, _ = _model_and_input()
    path = tmp_path / "sd.img"
    with _run(model, x, path, key=KEY) as it:
        sd = it.sd_image
        start = sd.area_offset("weights")
        home = max((h for h in it.runtime.homes if h is not None and h.device == "weights"), key=lambda h: h.records)
        assert home.records >= 2
        _swap(path, start + home.record_offset(0), start + home.record_offset(1), home.record_bytes)
        with pytest.raises(IntegrityError, match="authentication failed"):
            it.invoke()


def test_a_replayed_activation_record_is_detected(tmp_path, monkeypatch):
    """An activation record put back as an earlier invoke wrote it (valid ciphertext and tag, old counter)."""
    model, x, _ = _model_and_input()
    path = tmp_path / "sd.img"
    with _run(model, x, path, key=KEY) as it:
        pager = it.runtime
        plan = next(p for p in pager.plans if p.mode in ("rows", "reduce") and p.op.outputs[0] not in pager.fused_tensors
                    and p.index not in pager.chain_of)
        home = pager.homes[plan.op.outputs[0]]
        at = it.sd_image.area_offset("activations") + home.record_offset(0)
        with open(path, "rb") as f:
            f.seek(at)
            old = f.read(home.record_bytes)
        original = Engine.run_op

        def replay(self, p, bufs, record, only=None, depth=0):
            original(self, p, bufs, record, only, depth)
            if p.index == plan.index and only is None:
                with open(path, "r+b") as f:
                    f.seek(at)
                    f.write(old)

        monkeypatch.setattr(Engine, "run_op", replay)
        it.set_input(-x)                                        # other data: the record's content changes
        with pytest.raises(IntegrityError, match="authentication failed"):
            it.invoke()


def test_the_cost_model_charges_aes_gcm(tmp_path):
    model, x, _ = _model_and_input()
    with _run(model, x, tmp_path / "e.img", key=KEY) as enc, _run(model, x, tmp_path / "p.img") as plain:
        mcu = enc.mcu
        for a, b in zip(enc.profile, plain.profile):
            for t in a.tiles:
                moved = t.sd_read_payload + t.sd_write_payload
                assert t.hash_cycles == pytest.approx(mcu.crypto_cycles(moved))
            assert a.sd_read_bytes == b.sd_read_bytes and a.sd_write_bytes == b.sd_write_bytes
        assert sum(r.hash_cycles for r in enc.profile) > sum(r.hash_cycles for r in plain.profile)


def test_without_the_package_the_error_names_the_extra(monkeypatch, tmp_path):
    import builtins

    real = builtins.__import__

    def no_crypto(name, *args, **kwargs):
        if name.startswith("cryptography"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_crypto)
    with pytest.raises(StorageError, match=r"microinterp\[crypto\]"):
        RecordCipher(os.urandom(32), os.urandom(16), "fp")
