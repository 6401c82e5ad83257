"""Checksum algorithms: known values, every buffer type, xxh3 present or missing."""

from __future__ import annotations

import hashlib
import sys
import types
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp.errors import StorageError
from microinterp.storage import CHECKSUM_NAMES, get_checksum
from microinterp.storage.checksum import XXHASH_MISSING


def test_crc32_is_zlibs():
    crc = get_checksum()
    assert (crc.name, crc.digest_size) == ("crc32", 4)
    assert crc(b"123456789") == bytes.fromhex("cbf43926")          # the CRC-32/IEEE check value
    assert int.from_bytes(crc(b"hello"), "big") == zlib.crc32(b"hello")


@given(st.binary(max_size=5000), st.integers(0, 2**32 - 1))
def test_the_crc32_in_use_gives_zlibs_values(data, start):
    """zlib-ng's crc32, when installed (the test extra installs it), is the stdlib's function: an image written with
    one reads with the other."""
    from microinterp.storage.checksum import CRC32_IMPLEMENTATION, crc32

    assert CRC32_IMPLEMENTATION in ("zlib", "zlib-ng")
    assert crc32(data) == zlib.crc32(data) and crc32(data, start) == zlib.crc32(data, start)
    rows = np.frombuffer(data.ljust(5000, b"x"), np.uint8).reshape(50, 100)
    assert [crc32(r) for r in rows] == [zlib.crc32(r) for r in rows]    # numpy rows, as a run's records are read


@pytest.mark.parametrize("name, size", [("blake2b", 16), ("blake2b-64", 8), ("BLAKE2B", 16)])
def test_blake2b(name, size):
    algo = get_checksum(name)
    assert algo.digest_size == size and algo.name == name.lower()
    assert algo(b"abc") == hashlib.blake2b(b"abc", digest_size=size).digest()


@given(data=st.binary(max_size=2000), dtype=st.sampled_from(["u1", "i1", "<i2", "<i4", "<f4", "<f8"]))
def test_every_buffer_type_gives_the_bytes_digest(data, dtype):
    width = np.dtype(dtype).itemsize
    data = data[:len(data) - len(data) % width]
    arr = np.frombuffer(data, dtype)
    for name in ("crc32", "blake2b", "blake2b-64"):
        algo = get_checksum(name)
        expected = algo(bytes(data))
        assert len(expected) == algo.digest_size
        assert algo(arr) == algo(bytearray(data)) == algo(memoryview(data)) == expected
        if arr.size >= 2 and arr.size % 2 == 0:
            assert algo(arr.reshape(2, -1)) == expected


def test_digests_differ_for_a_single_bit():
    for name in ("crc32", "blake2b", "blake2b-64"):
        algo = get_checksum(name)
        assert algo(b"\x00" * 64) != algo(b"\x00" * 63 + b"\x01")


def test_non_contiguous_input_is_refused():
    with pytest.raises(StorageError, match="C-contiguous"):
        get_checksum()(np.arange(10, dtype=np.int32)[::2])


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(StorageError) as info:
        get_checksum("sha1")
    for name in CHECKSUM_NAMES:
        assert name in str(info.value)


def test_xxh3_missing_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "xxhash", None)                  # makes `import xxhash` fail
    with pytest.raises(StorageError) as info:
        get_checksum("xxh3")
    assert str(info.value) == XXHASH_MISSING
    assert "pip install 'microinterp[xxhash]'" in str(info.value)


def test_xxh3_wraps_xxhash(monkeypatch):
    fake = types.ModuleType("xxhash")
    fake.xxh3_64_intdigest = lambda buf: len(bytes(buf)) * 0x0101010101010101
    monkeypatch.setitem(sys.modules, "xxhash", fake)
    algo = get_checksum("xxh3")
    assert (algo.name, algo.digest_size) == ("xxh3", 8)
    assert algo(np.zeros(3, np.uint8)) == bytes([3] * 8)


def test_xxh3_real():
    xxhash = pytest.importorskip("xxhash")
    algo = get_checksum("xxh3")
    assert algo(b"abc") == xxhash.xxh3_64(b"abc").digest()
    assert algo(np.arange(100, dtype=np.int32)) == xxhash.xxh3_64(np.arange(100, dtype=np.int32).tobytes()).digest()


def test_without_zlib_ng_the_stdlib_crc32_is_used(monkeypatch):
    import importlib

    from microinterp.storage import checksum

    monkeypatch.setitem(sys.modules, "zlib_ng", None)          # import zlib_ng -> ImportError
    monkeypatch.setitem(sys.modules, "zlib_ng.zlib_ng", None)
    try:
        reloaded = importlib.reload(checksum)
        assert reloaded.CRC32_IMPLEMENTATION == "zlib" and reloaded.crc32 is zlib.crc32
        assert reloaded.get_checksum()(b"123456789") == bytes.fromhex("cbf43926")
    finally:
        monkeypatch.undo()
        importlib.reload(checksum)
