"""SD image: create / reuse / re-initialise / rebuild, foreign files untouched, verified tile IO, exact counters."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp.errors import IntegrityError, StorageError
from microinterp.storage import SECTOR_SIZE, AreaStats, SdImage
from microinterp.storage.checksum import get_checksum
from microinterp.storage.format import MAGIC, TABLE_ENTRY_SIZE, RecordRun, _digest_all, key_digest

FP = "model-a"
SIZES = {"weights_bytes": 10_000, "activation_bytes": 6_000, "table_entries": 16}


def open_image(path, fingerprint=FP, **overrides) -> SdImage:
    return SdImage.open(path, fingerprint=fingerprint, **{**SIZES, **overrides})


def file_state(path: Path) -> tuple[str, int, int, int]:
    st_ = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), st_.st_size, st_.st_mtime_ns, st_.st_ino


def flip_bit(path: Path, byte_offset: int, bit: int = 0) -> None:
    with open(path, "r+b") as f:
        f.seek(byte_offset)
        b = f.read(1)[0]
        f.seek(byte_offset)
        f.write(bytes([b ^ (1 << bit)]))


def weights_tiles() -> dict[tuple[str, int], tuple[int, np.ndarray]]:
    rng = np.random.default_rng(0)
    return {("conv/w", 0): (0, rng.integers(-128, 128, 1000, dtype=np.int8)),
            ("conv/w", 1): (1024, rng.integers(-128, 128, 512, dtype=np.int8)),
            ("fc/w", 0): (2048, rng.integers(-2**31, 2**31, 700, dtype=np.int32))}


def build(path: Path, commit: bool = True, **overrides) -> None:
    with open_image(path, **overrides) as img:
        for key, (offset, data) in weights_tiles().items():
            img.write("weights", offset, data, key=key)
        if commit:
            img.commit_weights()


def check_weights(img: SdImage) -> None:
    for key, (offset, data) in weights_tiles().items():
        got = img.read("weights", offset, data.nbytes, key=key)
        np.testing.assert_array_equal(got.view(data.dtype), data)


# ---------------------------------------------------------------------------------------------- life cycle
def test_create_layout_and_roundtrip(tmp_path):
    path = tmp_path / "sd.img"
    with open_image(path) as img:
        assert (img.action, img.reason, img.weights_ready) == ("created", None, False)
        g = img.geometry
        assert (g.table_start, g.table_sectors) == (1, 2)                       # 16 * 64 B = 2 sectors
        assert (g.weights_sectors, g.activations_sectors) == (20, 12)           # 10 000 B, 6 000 B rounded up
        assert img.area_offset("weights") == 3 * SECTOR_SIZE
        assert img.area_offset("activations") == 23 * SECTOR_SIZE
        assert img.area_size("activations") == 12 * SECTOR_SIZE
        assert path.stat().st_size == g.total_bytes == 35 * SECTOR_SIZE
        assert path.read_bytes()[:8] == MAGIC
        for key, (offset, data) in weights_tiles().items():
            img.write("weights", offset, data, key=key)
        check_weights(img)
        act = np.linspace(-1, 1, 333, dtype=np.float32)
        img.write("activations", 512, act, key=("x", 7))
        out = np.zeros(333, dtype=np.float32)
        got = img.read("activations", 512, act.nbytes, key=("x", 7), out=out)
        assert got is out
        np.testing.assert_array_equal(out, act)
        img.write("activations", 0, b"abc", key="scratch")                      # bytes and a plain str key
        assert bytes(img.read("activations", 0, 3, key="scratch")) == b"abc"
        img.commit_weights()
        assert img.weights_ready


def test_non_contiguous_write_and_padding_is_zero(tmp_path):
    path = tmp_path / "sd.img"
    with open_image(path) as img:
        data = np.arange(100, dtype=np.int16).reshape(10, 10)[:, ::2]            # not contiguous
        img.write("activations", 1024, data, key=("t", 0))
        np.testing.assert_array_equal(img.read("activations", 1024, data.nbytes, key=("t", 0)).view(np.int16),
                                      data.ravel())
        start = img.area_offset("activations") + 1024
    raw = path.read_bytes()
    assert raw[start + data.nbytes:start + SECTOR_SIZE] == bytes(SECTOR_SIZE - data.nbytes)


def test_reopen_same_model_reuses_weights_without_writing(tmp_path):
    path = tmp_path / "sd.img"
    build(path)
    before = file_state(path)
    with open_image(path) as img:
        assert (img.action, img.reason, img.weights_ready) == ("reused", None, True)
        assert img.stats().total.writes == 0
        check_weights(img)
        assert img.stats().total.writes == 0
        with pytest.raises(StorageError, match="sealed"):
            img.write("weights", 0, b"x", key=("conv/w", 0))
    assert file_state(path) == before                  # same bytes, same mtime, same inode: nothing rewritten


def test_activations_do_not_survive_reopen(tmp_path):
    path = tmp_path / "sd.img"
    with open_image(path) as img:
        img.write("activations", 0, b"tile", key=("act", 0))
        img.commit_weights()
    with open_image(path) as img:
        assert img.action == "reused"
        with pytest.raises(IntegrityError, match="never written"):
            img.read("activations", 0, 4, key=("act", 0))


def test_activation_resize_keeps_weights(tmp_path):
    path = tmp_path / "sd.img"
    build(path)
    for activation_bytes in (50_000, 1_000):
        with open_image(path, activation_bytes=activation_bytes) as img:
            assert img.action == "reused" and img.weights_ready
            assert "activations area resized" in img.reason
            assert path.stat().st_size == img.geometry.total_bytes
            check_weights(img)
            assert img.stats().areas["weights"].writes == 0
    with open_image(path, activation_bytes=1_000) as img:
        assert (img.action, img.reason) == ("reused", None)


@pytest.mark.parametrize("overrides, words", [
    ({"fingerprint": "model-b"}, "another model"),
    ({"weights_bytes": 20_000}, "geometry differs"),
    ({"table_entries": 8}, "geometry differs"),
    ({"checksum": "blake2b"}, "checksum"),
])
def test_other_model_or_geometry_is_reinitialised(tmp_path, overrides, words):
    path = tmp_path / "sd.img"
    build(path)
    with open_image(path, **overrides) as img:
        assert img.action == "reinitialised" and words in img.reason
        assert not img.weights_ready
        with pytest.raises(IntegrityError, match="never written"):
            img.read("weights", 0, 1000, key=("conv/w", 0))
        assert path.stat().st_size == img.geometry.total_bytes
        assert img.stats().areas["header"].writes == 1
    # and it is a proper image of the new model: still 'building' until committed
    with open_image(path, **overrides) as img:
        assert img.action == "rebuilt" and "building" in img.reason


def test_crash_before_commit_is_rebuilt(tmp_path):
    path = tmp_path / "sd.img"
    build(path, commit=False)
    with open_image(path) as img:
        assert img.action == "rebuilt" and "building" in img.reason
        assert not img.weights_ready
        with pytest.raises(IntegrityError, match="never written"):
            img.read("weights", 0, 1000, key=("conv/w", 0))


def test_crash_of_a_real_process_is_rebuilt(tmp_path):
    path = tmp_path / "sd.img"
    code = ("import os, sys\nfrom microinterp.storage import SdImage\n"
            f"img = SdImage.open(sys.argv[1], fingerprint={FP!r}, **{SIZES!r})\n"
            "img.write('weights', 0, b'w' * 5000, key=('w', 0))\nos._exit(3)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 3, proc.stderr
    with open_image(path) as img:
        assert img.action == "rebuilt" and "building" in img.reason


def test_crash_between_table_and_header_is_rebuilt(tmp_path, monkeypatch):
    path = tmp_path / "sd.img"
    img = open_image(path)
    img.write("weights", 0, b"w" * 600, key=("w", 0))

    def crash(state, table_digest=b""):
        raise KeyboardInterrupt("power cut")

    monkeypatch.setattr(img, "_write_header", crash)
    with pytest.raises(KeyboardInterrupt):
        img.commit_weights()
    img.close()
    with open_image(path) as img:
        assert img.action == "rebuilt" and "building" in img.reason


@pytest.mark.parametrize("keep", [100, 600, 35 * SECTOR_SIZE - 1, 3 * SECTOR_SIZE + 100])
def test_truncated_file_is_rebuilt(tmp_path, keep):
    path = tmp_path / "sd.img"
    build(path)
    os.truncate(path, keep)
    with open_image(path) as img:
        assert img.action == "rebuilt" and "truncated" in img.reason
        assert not img.weights_ready
        assert path.stat().st_size == img.geometry.total_bytes


@pytest.mark.parametrize("where", [8, 12, 16, 40, 100, 200, 507, 508, 511])
def test_corrupted_header_is_rebuilt(tmp_path, where):
    path = tmp_path / "sd.img"
    build(path)
    flip_bit(path, where, 3)
    with open_image(path) as img:
        assert img.action in ("rebuilt", "reinitialised")   # byte 8 is the version, checked before the crc
        assert not img.weights_ready
        if where >= 12:
            assert img.reason.startswith("header checksum mismatch")


def test_corrupted_table_is_rebuilt(tmp_path):
    path = tmp_path / "sd.img"
    build(path)
    flip_bit(path, SECTOR_SIZE + TABLE_ENTRY_SIZE + 20, 5)      # second entry's offset field
    with open_image(path) as img:
        assert (img.action, img.reason) == ("rebuilt", "checksum table corrupted")


def test_flipped_magic_makes_the_image_foreign_and_untouched(tmp_path):
    path = tmp_path / "sd.img"
    build(path)
    flip_bit(path, 0, 0)
    before = file_state(path)
    with pytest.raises(StorageError, match="not a microinterp SD image"):
        open_image(path)
    assert file_state(path) == before


@pytest.mark.parametrize("content", [
    b"x", b"MISDIMGX", b"hello world\n" * 100, bytes(4096), os.urandom(10_000), MAGIC[:4] + bytes(600),
])
def test_foreign_file_is_never_overwritten(tmp_path, content):
    path = tmp_path / "precious.bin"
    path.write_bytes(content)
    before = file_state(path)
    with pytest.raises(StorageError, match="refusing to overwrite"):
        open_image(path)
    assert file_state(path) == before


@pytest.mark.parametrize("cut", [1, 4, len(MAGIC) - 1])
def test_a_first_header_write_cut_inside_the_magic_is_rebuilt(tmp_path, cut):
    """A file holding only the start of our own magic is what a first header write cut short leaves (ENOSPC,
    EFBIG, a crash): it is ours, and rebuilt, instead of being refused forever as a foreign file."""
    path = tmp_path / "sd.img"
    path.write_bytes(MAGIC[:cut])
    with open_image(path) as img:
        assert img.action == "rebuilt" and "cut short" in img.reason


def test_empty_file_is_taken_over(tmp_path):
    path = tmp_path / "sd.img"
    path.touch()
    with open_image(path) as img:
        assert img.action == "created"
        assert path.stat().st_size == img.geometry.total_bytes


def test_unopenable_path_is_a_storage_error(tmp_path):
    with pytest.raises(StorageError, match="cannot open"):
        open_image(tmp_path)                               # a directory
    with pytest.raises(StorageError, match="cannot open"):
        open_image(tmp_path / "missing-dir" / "sd.img")


def test_image_is_locked_while_open(tmp_path):
    path = tmp_path / "sd.img"
    with open_image(path), pytest.raises(StorageError, match="in use"):
        open_image(path)
    open_image(path).close()


# ---------------------------------------------------------------------------------------------- integrity
def test_integrity_error_names_tensor_tile_and_offset(tmp_path):
    path = tmp_path / "sd.img"
    build(path)
    flip_bit(path, 3 * SECTOR_SIZE + 1024 + 17, 6)             # inside ("conv/w", 1)
    with open_image(path) as img:
        assert img.action == "reused"
        with pytest.raises(IntegrityError) as info:
            img.read("weights", 1024, 512, key=("conv/w", 1))
        err = info.value
        assert (err.tensor, err.tile, err.area, err.sd_offset) == ("conv/w", 1, "weights", 3 * 512 + 1024)
        assert "tensor 'conv/w' tile 1" in str(err) and f"SD offset {3 * 512 + 1024}" in str(err)
        assert "checksum mismatch" in str(err)
        img.read("weights", 0, 1000, key=("conv/w", 0))           # the neighbours are intact
        img.read("weights", 2048, 2800, key=("fc/w", 0))


def test_read_must_match_what_was_written(tmp_path):
    with open_image(tmp_path / "sd.img") as img:
        img.write("activations", 512, b"a" * 700, key=("t", 0))
        with pytest.raises(IntegrityError, match="never written"):
            img.read("activations", 512, 700, key=("t", 1))
        with pytest.raises(IntegrityError, match="written at offset 512 with 700 bytes"):
            img.read("activations", 0, 700, key=("t", 0))
        with pytest.raises(IntegrityError, match="written at offset 512 with 700 bytes"):
            img.read("activations", 512, 600, key=("t", 0))
        with pytest.raises(IntegrityError, match="never written"):
            img.read("weights", 512, 700, key=("t", 0))            # areas have separate tables
        img.write("activations", 512, b"b" * 10, key=("t", 0))     # rewriting a key replaces its record
        assert bytes(img.read("activations", 512, 10, key=("t", 0))) == b"b" * 10


def test_overlapping_write_is_detected(tmp_path):
    with open_image(tmp_path / "sd.img") as img:
        img.write("activations", 0, b"a" * 1024, key=("a", 0))
        img.write("activations", 512, b"b" * 512, key=("b", 0))     # clobbers a's second sector
        with pytest.raises(IntegrityError, match="tensor 'a' tile 0: checksum mismatch"):
            img.read("activations", 0, 1024, key=("a", 0))


def _check_tiles(img: SdImage, tiles: dict, flipped: set, areas: tuple[str, ...]) -> None:
    for key, (area, offset, payload) in tiles.items():
        if area not in areas:
            continue
        if key in flipped:
            for _ in range(2):                                           # detected every time, not just once
                with pytest.raises(IntegrityError) as info:
                    img.read(area, offset, payload.size, key=key)
                assert (info.value.tensor, info.value.tile) == key
                assert info.value.sd_offset == img.area_offset(area) + offset
        else:
            np.testing.assert_array_equal(img.read(area, offset, payload.size, key=key), payload)


ALGORITHMS = ["crc32", "blake2b", "blake2b-64"] + (["xxh3"] if importlib.util.find_spec("xxhash") else [])


@given(data=st.data(), checksum=st.sampled_from(ALGORITHMS), commit=st.booleans())
def test_any_bit_flip_in_any_tile_is_detected(data, checksum, commit):
    sizes = {"fingerprint": "m", "weights_bytes": 64 * 512, "activation_bytes": 64 * 512, "table_entries": 64,
             "checksum": checksum}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sd.img"
        tiles = {}
        with SdImage.open(path, **sizes) as img:
            for area in ("weights", "activations"):
                sector = 0
                for i in range(data.draw(st.integers(1, 6))):
                    n = data.draw(st.integers(1, 3 * SECTOR_SIZE))
                    payload = np.frombuffer(data.draw(st.binary(min_size=n, max_size=n)), np.uint8)
                    key = (f"{area}/{i % 2}", i)
                    img.write(area, sector * SECTOR_SIZE, payload, key=key)
                    tiles[key] = (area, sector * SECTOR_SIZE, payload)
                    sector += -(-n // SECTOR_SIZE) + data.draw(st.integers(0, 2))
            if commit:
                img.commit_weights()
            flipped = set(data.draw(st.lists(st.sampled_from(sorted(tiles)), min_size=1, max_size=3, unique=True)))
            for key in flipped:
                area, offset, payload = tiles[key]
                bits = data.draw(st.lists(st.integers(0, payload.size * 8 - 1), min_size=1, max_size=4,
                                          unique=True))
                for bit in bits:
                    flip_bit(path, img.area_offset(area) + offset + bit // 8, bit % 8)
            _check_tiles(img, tiles, flipped, ("weights", "activations"))
        if commit:                                   # the weights' checksums survive a reopen
            with SdImage.open(path, **sizes) as img:
                assert img.action == "reused"
                _check_tiles(img, tiles, flipped, ("weights",))


# ---------------------------------------------------------------------------------------------- counters
def test_counters_are_exact(tmp_path):
    path = tmp_path / "sd.img"
    with open_image(path) as img:
        s = img.stats()
        assert s.areas["header"].writes == 1 and s.areas["header"].bytes_written == 512
        assert s.total.reads == 0 and s.hash_bytes == 0
        img.reset_stats()
        img.write("weights", 0, np.zeros(1000, np.int8), key=("w", 0))         # 2 sectors
        img.write("weights", 1024, np.zeros(512, np.int8), key=("w", 1))       # 1 sector, no padding
        img.write("activations", 0, np.zeros(10, np.float32), key=("a", 0))    # 40 B -> 1 sector
        img.read("weights", 0, 1000, key=("w", 0))
        img.read("activations", 0, 40, key=("a", 0), out=np.empty(10, np.float32))
        img.read("activations", 0, 40, key=("a", 0))
        img.commit_weights()
        s = img.stats()
        assert s.areas["weights"] == AreaStats(reads=1, writes=2, bytes_read=1024, bytes_written=1536,
                                               payload_bytes_read=1000, payload_bytes_written=1512)
        assert s.areas["activations"] == AreaStats(reads=2, writes=1, bytes_read=1024, bytes_written=512,
                                                   payload_bytes_read=80, payload_bytes_written=40)
        assert s.areas["table"] == AreaStats(writes=1, bytes_written=512, payload_bytes_written=2 * TABLE_ENTRY_SIZE)
        assert s.areas["header"] == AreaStats(writes=1, bytes_written=512, payload_bytes_written=512)
        assert s.hash_bytes == 1512 + 40 + 1000 + 80 + 2 * TABLE_ENTRY_SIZE
        assert s.hash_seconds > 0
        assert s.total.writes == 5 and s.total.bytes_written == 3072
    with open_image(path) as img:
        s = img.stats()
        assert s.areas["header"] == AreaStats(reads=1, bytes_read=512, payload_bytes_read=512)
        assert s.areas["table"] == AreaStats(reads=1, bytes_read=512, payload_bytes_read=2 * TABLE_ENTRY_SIZE)
        assert s.total.writes == 0 and s.hash_bytes == 2 * TABLE_ENTRY_SIZE


# ---------------------------------------------------------------------------------------------- misuse
def test_misuse_raises_storage_errors(tmp_path):
    path = tmp_path / "sd.img"
    with pytest.raises(StorageError, match="weights_bytes must be >= 0"):
        open_image(path, weights_bytes=-1)
    with pytest.raises(StorageError, match="fingerprint longer"):
        open_image(path, fingerprint="x" * 257)
    with pytest.raises(StorageError, match="unknown checksum"):
        open_image(path, checksum="md5")
    img = open_image(path, table_entries=2)
    with pytest.raises(StorageError, match="not a multiple of 512"):
        img.write("activations", 100, b"x", key="k")
    with pytest.raises(StorageError, match="do not fit the activations area"):
        img.write("activations", 5632, b"x" * 513, key="k")
    with pytest.raises(StorageError, match="do not fit"):
        img.read("activations", 6144, 1, key="k")
    with pytest.raises(StorageError, match="unknown area 'table'"):
        img.write("table", 0, b"x", key="k")
    with pytest.raises(StorageError, match="tile key must be"):
        img.write("activations", 0, b"x", key=("t", 1.5))
    img.write("activations", 0, b"abcd", key="k")
    with pytest.raises(StorageError, match="`out` buffer has 8 bytes"):
        img.read("activations", 0, 4, key="k", out=np.empty(2, np.int32))
    with pytest.raises(StorageError, match="read-only"):
        img.read("activations", 0, 4, key="k", out=np.frombuffer(b"zzzz", np.uint8))
    assert img.read("activations", 0, 4, key="k", out=np.empty(1, np.int32)).view(np.uint8).tobytes() == b"abcd"
    assert bytes(img.read("activations", 0, 4, key="k")) == b"abcd"
    img.write("weights", 0, b"a", key=("w", np.int64(0)))                     # numpy ints are ints
    assert bytes(img.read("weights", 0, 1, key=("w", 0))) == b"a"
    img.write("weights", 512, b"b", key=("w", 1))
    img.write("weights", 512, b"c", key=("w", 1))                             # rewrite: no new entry
    with pytest.raises(StorageError, match="checksum table full"):
        img.write("weights", 1024, b"d", key=("w", 2))
    img.close()
    img.close()
    assert img.closed
    with pytest.raises(StorageError, match="closed"):
        img.read("weights", 0, 1, key=("w", 0))


def test_zero_sized_areas(tmp_path):
    with SdImage.open(tmp_path / "sd.img", fingerprint="", weights_bytes=0, activation_bytes=0,
                      table_entries=0) as img:
        assert img.geometry.total_bytes == SECTOR_SIZE
        img.commit_weights()
    with SdImage.open(tmp_path / "sd.img", fingerprint="", weights_bytes=0, activation_bytes=0,
                      table_entries=0) as img:
        assert img.action == "reused"


def test_large_tile_roundtrip_without_copy(tmp_path):
    n = 3 * 1024 * 1024 + 77
    data = np.random.default_rng(1).integers(0, 256, n, dtype=np.uint8)
    with open_image(tmp_path / "sd.img", activation_bytes=n) as img:
        img.write("activations", 0, data, key=("big", 0))
        out = np.empty(n, np.uint8)
        assert img.read("activations", 0, n, key=("big", 0), out=out) is out
        np.testing.assert_array_equal(out, data)


# ---------------------------------------------------------------------------------------------- record runs
@given(record=st.integers(1, 1600), count=st.integers(1, 9), short=st.integers(0, 1599), sectors=st.integers(0, 3),
       flip=st.integers(-1, 8))
def test_uniform_runs_are_the_tiles_they_describe(record, count, short, sectors, flip):
    """A prepared uniform run reads and writes exactly what read_tiles / write_tiles do with the same keys and
    sizes (same layout, same checksum entries), and names the failing record in its errors."""
    last = record - short % record
    keys = [("t", i) for i in range(5, 5 + count)]
    lengths = [record] * (count - 1) + [last]
    run = RecordRun.uniform([key_digest(k) for k in keys], record, last, lambda i: ("t", i), 5)
    general = RecordRun(keys, lengths)
    assert (run.digests, run.lengths, run.payload, run.span) == \
        (general.digests, general.lengths, general.payload, general.span)
    offset = sectors * SECTOR_SIZE
    assert list(run.positions(offset)) == list(general.positions(offset))
    data = np.random.default_rng(record).integers(0, 256, run.payload, dtype=np.uint8)
    assert [bytes(r) for r in run.split(memoryview(data))] == [bytes(r) for r in general.split(memoryview(data))]
    size = run.span + offset + SECTOR_SIZE
    with tempfile.TemporaryDirectory() as tmp, SdImage.open(Path(tmp) / "sd.img", fingerprint="r", weights_bytes=0,
                                                             activation_bytes=size, table_entries=0) as img:
        img.write_run("activations", offset, run, data)
        out = np.empty_like(data)
        img.read_tiles("activations", offset, list(zip(keys, lengths)), out)      # the general reader
        np.testing.assert_array_equal(out, data)
        at = 0
        tiles = []
        for k, n in zip(keys, lengths):
            tiles.append((k, data[at:at + n]))
            at += n
        img.write_tiles("activations", offset, tiles)                              # the general writer
        out[...] = 0
        img.read_run("activations", offset, run, out)
        np.testing.assert_array_equal(out, data)
        assert (img.stats().hash_bytes, img.stats().areas["activations"].bytes_read) == (4 * run.payload,
                                                                                      2 * run.span)
        if 0 <= flip < count:
            pos = offset + flip * _sectors(record) * SECTOR_SIZE
            flip_bit(Path(tmp) / "sd.img", img.area_offset("activations") + pos, 3)
            with pytest.raises(IntegrityError, match=f"tensor 't' tile {5 + flip}: checksum mismatch") as e:
                img.read_run("activations", offset, run, out)
            assert e.value.sd_offset == img.area_offset("activations") + pos
        with pytest.raises(IntegrityError, match="tile 5: written at offset"):
            img.read_run("activations", offset + SECTOR_SIZE, run, out)
        with pytest.raises(StorageError, match="data has"):
            img.write_run("activations", offset, run, data[1:])


def _sectors(n: int) -> int:
    return -(-n // SECTOR_SIZE)


@pytest.mark.parametrize("checksum", ALGORITHMS)
def test_run_digests_are_the_checksums_of_each_record(checksum):
    algo = get_checksum(checksum)
    data = np.random.default_rng(3).integers(0, 256, 5000, dtype=np.uint8)
    views = [memoryview(data)[a:b] for a, b in ((0, 0), (0, 1), (1, 513), (513, 5000))]
    views += list(data[:4000].reshape(4, -1))          # numpy rows, as uniform runs split their payload
    assert _digest_all(algo)(views) == b"".join(algo(v) for v in views)


def test_a_weights_run_checked_once_is_still_checked_where_it_differs(tmp_path):
    keys = [("w", i) for i in range(3)]
    run = RecordRun.uniform([key_digest(k) for k in keys], 700, 300, lambda i: ("w", i))
    data = np.arange(run.payload, dtype=np.int64).astype(np.uint8)
    with open_image(tmp_path / "sd.img", weights_bytes=8 * SECTOR_SIZE) as img:
        img.write_run("weights", 0, run, data)
        img.commit_weights()
        out = np.empty_like(data)
        for _ in range(2):
            img.read_run("weights", 0, run, out)
            np.testing.assert_array_equal(out, data)
        with pytest.raises(IntegrityError, match="tile 0: written at offset 0 with 700 bytes, not 512"):
            img.read_run("weights", SECTOR_SIZE, run, out)
        flip_bit(tmp_path / "sd.img", img.area_offset("weights") + 2 * SECTOR_SIZE + 5)
        with pytest.raises(IntegrityError, match="tile 1: checksum mismatch"):
            img.read_run("weights", 0, run, out)
