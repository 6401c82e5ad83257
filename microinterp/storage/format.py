"""The SD image's on-disk format: a block device of 512-byte sectors on a file, with a checksum on every tile.

This module is the format (layout, header and table records, geometry, record runs, keys and digests); the file
IO is :class:`microinterp.storage.sd.SdImage`.

On-disk layout (all offsets in whole sectors; T, W, A = sectors of table, weights and activations)::

    sector 0     1                1+T                     1+T+W                    1+T+W+A
    ┌──────────┬────────────────┬───────────────────────┬────────────────────────┐
    │ header   │ checksum table │ weights area          │ activations area       │
    │ 1 sector │ 64 B per entry │ written once, sealed  │ scratch for swapped    │
    │          │ (weights only) │ by commit_weights()   │ tiles, any time        │
    └──────────┴────────────────┴───────────────────────┴────────────────────────┘

Header (little-endian, one sector): magic ``MISDIMG\\0``, format version, sector size, state (``building`` /
``ready``), checksum algorithm name, geometry (start and length of each area), the requested sizes (weights bytes,
activation bytes, table entries), the number of table entries in use and the digest of the used part of the table,
the model fingerprint (UTF-8, at most 256 bytes), for encrypted images (flags bit 0) the image id, the key check and
the first nonce counter not yet reserved (:mod:`.crypto`), and, in the last 4 bytes, a crc32 of the other 508 bytes.
An encrypted image stores every record's ciphertext in place of its plaintext and its nonce counter and GCM tag
where a plain image keeps the record's checksum.
A table entry is ``(key digest: blake2b-128 of the tile key, offset in the area, length, tile digest)``.

Life cycle and crash safety:

- A new (or empty) file: the header is written with state ``building`` and fsync'ed, the file is sized (sparse);
  the caller writes the weights tiles; :meth:`SdImage.commit_weights` writes the table, fsyncs, then rewrites the
  header with state ``ready`` and fsyncs again. A crash anywhere before the last write leaves ``building`` (or a
  header whose crc fails), which the next open detects and rebuilds; the weights area is never trusted unless the
  header says ``ready``. After the commit the weights area is sealed (writes to it raise StorageError).
- Reopening with the same fingerprint, checksum, weights size and table size, state ``ready``, an intact table and
  a file long enough: ``weights_ready`` is True and *nothing is written* (``action == "reused"``). If only the
  activation size differs the weights are kept and the activations area is resized (``reason`` says so).
- Another fingerprint / checksum / weights or table size, or another format version or sector size:
  re-initialised (``action == "reinitialised"``). State ``building``, a bad header crc, a corrupted table or a file
  shorter than its geometry: rebuilt (``action == "rebuilt"``). ``reason`` says why in both cases.
- An existing file that does not start with the magic is never touched: :class:`StorageError`. An *empty* file is
  taken over (it is what a crash between creating the file and writing the first header leaves, and holds nothing
  to lose). A damaged magic therefore makes an image look foreign: it is refused, never overwritten.
- The file is locked (``flock``, exclusive) while open, so two pagers cannot share an image.

IO is sector-granular like a real card: offsets inside an area must be multiples of 512, a tile of ``n`` bytes
occupies ``ceil(n / 512)`` sectors, the unused tail of the last sector is written as zeros and is not
checksummed. ``read`` and ``write`` are one ``os.preadv`` / ``os.pwritev`` each (payload + a small pad buffer), so a
read lands straight in the caller's numpy buffer without a copy. Checksums of activation tiles live in memory
only: the activations area is scratch whose contents do not survive a reopen (reading such a tile after reopening
raises IntegrityError, "never written"). Counters per area (commands and bytes, physical and payload) and the
time spent hashing are kept for the cost model (:meth:`SdImage.stats`). POSIX only (``os.preadv``, ``flock``);
one thread at a time.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import operator
import os
import struct
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import StorageError
from .checksum import Checksum, crc32


def io_error(what: str, path: str, offset: int | None, e: OSError) -> StorageError:
    """The StorageError for a failed OS call on an SD image: names the file, the SD offset (when there is one) and
    the errno (also as the exception's ``errno``, ``filename`` and ``offset`` attributes)."""
    code = errno.errorcode.get(e.errno or 0, str(e.errno))
    where = "" if offset is None else f" at SD offset {offset}"
    err = StorageError(e.errno, f"cannot {what}{where} of the SD image: {e.strerror or e} ({code})", path)
    err.offset = offset  # type: ignore[attr-defined]
    return err

SECTOR_SIZE = 512
MAGIC = b"MISDIMG\x00"
FORMAT_VERSION = 2
MAX_FINGERPRINT_BYTES = 256
TABLE_ENTRY_SIZE = 64
AREAS = ("header", "table", "weights", "activations")
DATA_AREAS = ("weights", "activations")

_BUILDING, _READY = 1, 2
_IOV_MAX = min(os.sysconf("SC_IOV_MAX") if "SC_IOV_MAX" in os.sysconf_names else 1024, 1024)
_STATE_NAMES = {_BUILDING: "building", _READY: "ready"}
# magic, version, sector size, state, flags (1: encrypted), checksum name, 6 x geometry, weights bytes, activation
# bytes, table entries, entries in use, table digest, fingerprint length, fingerprint; encrypted images: image id,
# key check, first nonce counter not yet reserved (storage/crypto.py).
_HEADER = struct.Struct("<8sIIII16s6Q3QQ16sH2x256s16s32sQ")
_HEADER_CRC_AT = SECTOR_SIZE - 4
_ENCRYPTED = 1
_ENTRY = struct.Struct("<16sQQ32s")      # key digest, offset, length, tile digest (checksum, or nonce counter + tag)
assert _HEADER.size <= _HEADER_CRC_AT and _ENTRY.size == TABLE_ENTRY_SIZE


def _sectors(nbytes: int) -> int:
    return -(-nbytes // SECTOR_SIZE)


@dataclass(frozen=True)
class Geometry:
    """Start and length, in sectors, of each area; derived from the requested sizes."""

    table_start: int
    table_sectors: int
    weights_start: int
    weights_sectors: int
    activations_start: int
    activations_sectors: int

    @classmethod
    def for_sizes(cls, weights_bytes: int, activation_bytes: int, table_entries: int) -> Geometry:
        table = _sectors(table_entries * TABLE_ENTRY_SIZE)
        weights = _sectors(weights_bytes)
        return cls(1, table, 1 + table, weights, 1 + table + weights, _sectors(activation_bytes))

    @property
    def total_bytes(self) -> int:
        return (self.activations_start + self.activations_sectors) * SECTOR_SIZE

    def area(self, name: str) -> tuple[int, int]:
        """(absolute byte offset, size in bytes) of area ``name``."""
        start, count = {"header": (0, 1), "table": (self.table_start, self.table_sectors),
                        "weights": (self.weights_start, self.weights_sectors),
                        "activations": (self.activations_start, self.activations_sectors)}[name]
        return start * SECTOR_SIZE, count * SECTOR_SIZE

    def as_tuple(self) -> tuple[int, ...]:
        return (self.table_start, self.table_sectors, self.weights_start, self.weights_sectors,
                self.activations_start, self.activations_sectors)


@dataclass(frozen=True)
class AreaStats:
    """IO counters of one area. ``bytes_*`` are whole sectors moved; ``payload_*`` the tile bytes asked for."""

    reads: int = 0
    writes: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    payload_bytes_read: int = 0
    payload_bytes_written: int = 0


@dataclass(frozen=True)
class SdStats:
    """Snapshot of an image's counters: per area (header, table, weights, activations) and hashing."""

    areas: Mapping[str, AreaStats]
    hash_bytes: int
    hash_seconds: float

    @property
    def total(self) -> AreaStats:
        return AreaStats(*(sum(getattr(a, f) for a in self.areas.values()) for f in AreaStats.__annotations__))


#: A checksum-table entry: ``(offset in the area, payload length, tile digest)`` (a plain tuple: the pager makes
#: thousands per invoke).
_Entry = tuple  # (int, int, bytes)
_POS_LEN = operator.itemgetter(0, 1)
_DIGEST = operator.itemgetter(2)
#: What a read's sector padding lands in (never looked at) and what a write's padding is made of.
_PAD_SINK = bytearray(SECTOR_SIZE)
_ZERO_SECTOR = bytes(SECTOR_SIZE)


def _canonical_key(key: Any) -> Any:
    if isinstance(key, str):
        return key
    if isinstance(key, (tuple, list)):
        return [_canonical_key(k) for k in key]
    try:
        return operator.index(key)
    except TypeError:
        raise StorageError(f"a tile key must be a str, an int or a tuple of them, got {key!r}") from None


def key_digest(key: Hashable) -> bytes:
    """The checksum table's index of a tile key: blake2b-128 of the key's canonical JSON (``[name, tile]`` keys are
    formatted directly). :class:`RecordRun` takes them precomputed (the pager computes each record's once)."""
    if type(key) is tuple and len(key) == 2 and type(key[0]) is str and type(key[1]) is int:
        text = f"[{json.dumps(key[0])},{key[1]}]"
    else:
        text = json.dumps(_canonical_key(key), separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


_key_digest = functools.lru_cache(maxsize=1 << 12)(key_digest)


def _describe(key: Any) -> tuple[Any, Any, str]:
    """(tensor, tile, text) for a key like (tensor_name, tile_index); other keys name themselves."""
    if isinstance(key, tuple) and len(key) >= 2 and isinstance(key[0], str):
        tile = key[1] if len(key) == 2 else key[1:]
        return key[0], tile, f"tensor {key[0]!r} tile {tile}"
    return key, None, f"tile {key!r}"


def _byte_view(data: Any, writable: bool = False) -> memoryview:
    if isinstance(data, np.ndarray):
        if not data.flags.c_contiguous:
            if writable:
                raise StorageError("the `out` buffer must be C-contiguous")
            data = np.ascontiguousarray(data)
        data = data.reshape(-1).view(np.uint8)
    view = memoryview(data)
    if writable and view.readonly:
        raise StorageError("the `out` buffer is read-only")
    return view if (view.format == "B" and view.ndim == 1) else view.cast("B")


@functools.lru_cache(maxsize=2 * SECTOR_SIZE)
def _pad(nbytes: int, write: bool) -> memoryview:
    """The IO vector entry for a record's unused sector tail: zeros to write, or a sink to read into."""
    return memoryview(_ZERO_SECTOR if write else _PAD_SINK)[:nbytes]


class RecordRun:
    """Consecutive tiles (records) moved by ONE command: their key digests (the checksum table's index) and
    payload sizes, with the payload and physical (whole sectors) totals; record ``i`` starts on the sector after
    record ``i - 1`` ends (as :meth:`SdImage.write_tiles` lays them out).

    ``RecordRun(keys, lengths)`` takes any keys and sizes (what :meth:`SdImage.read_tiles` /
    :meth:`SdImage.write_tiles` build per call). :meth:`uniform` describes records of one size (the last may be
    shorter) from digests computed beforehand: the pager keeps one per tensor range it moves, so a command costs no
    key hashing and the per-record work (table look-ups, positions, IO vectors, checksums) runs in C-level ``map``
    calls over ``range`` objects, with no per-record Python objects kept but the digests.
    """

    __slots__ = ("_checked", "_first", "_gaps", "_key_of", "_keys", "_rels", "_slices", "_stride", "digests",
                 "lengths", "payload", "record_bytes", "span")

    def __init__(self, keys: Sequence[Hashable], lengths: Sequence[int]):
        self._keys = tuple(keys)
        self.lengths = tuple(operator.index(n) for n in lengths)
        if len(self._keys) != len(self.lengths):
            raise StorageError(f"{len(self._keys)} keys for {len(self.lengths)} tile lengths")
        if any(n < 0 for n in self.lengths):
            raise StorageError(f"tile lengths must be >= 0, got {min(self.lengths)}")
        self.digests = tuple(map(_key_digest, self._keys))
        self._key_of, self._first, self._stride, self.record_bytes = None, 0, None, None
        self._checked: tuple | None = None     # (area, offset, entries) a sealed area's last check passed for
        slices, rels, gaps, at, rel = [], [], [], 0, 0
        for n in self.lengths:
            slices.append(slice(at, at + n))      # the record in the packed payload
            rels.append(rel)                      # its first sector, from the run's start
            gaps.append(-n % SECTOR_SIZE)         # the unused tail of its last sector
            at += n
            rel += _sectors(n) * SECTOR_SIZE
        self._slices, self._rels, self._gaps = tuple(slices), tuple(rels), tuple(gaps)
        self.payload, self.span = at, rel

    @classmethod
    def uniform(cls, digests: Sequence[bytes], record_bytes: int, last: int, key_of: Any, first: int = 0) -> RecordRun:
        """``len(digests)`` records of ``record_bytes`` bytes, the last of ``last`` (``0 < last <= record_bytes``);
        record ``i``'s key is ``key_of(first + i)`` (only asked for to name a record in an error)."""
        n = len(digests)
        if n and not 0 < last <= record_bytes:
            raise StorageError(f"last record of {last} bytes in a run of {record_bytes}-byte records")
        run = cls.__new__(cls)
        run.digests = tuple(digests)
        run._keys, run._key_of, run._first = None, key_of, first
        run.record_bytes = record_bytes
        run.lengths = (record_bytes,) * (n - 1) + (last,) if n else ()
        run._stride = _sectors(record_bytes) * SECTOR_SIZE
        run._gaps = (-record_bytes % SECTOR_SIZE, -last % SECTOR_SIZE)
        run._slices = run._rels = run._checked = None
        run.payload = record_bytes * (n - 1) + last if n else 0
        run.span = run._stride * (n - 1) + _sectors(last) * SECTOR_SIZE if n else 0
        return run

    def key(self, i: int) -> Hashable:
        """The key of record ``i`` of the run."""
        return self._keys[i] if self._keys is not None else self._key_of(self._first + i)

    def positions(self, offset: int) -> Iterable[int]:
        """The offset in the area of every record when the run starts at ``offset``."""
        if self._stride is not None:
            return range(offset, offset + len(self.lengths) * self._stride, self._stride)
        return map(offset.__add__, self._rels)

    def split(self, view: memoryview) -> list[Any]:
        """Every record's bytes in ``view``, the packed payload (a flat byte view of exactly ``payload`` bytes):
        views into it, no copies (a uniform run's records are the rows of one 2-D array view)."""
        if self._stride is None:
            return list(map(view.__getitem__, self._slices))
        n = len(self.lengths)
        if not n:
            return []
        head = (n - 1) * self.record_bytes
        parts = list(np.frombuffer(view, np.uint8, head).reshape(n - 1, self.record_bytes)) if n > 1 else []
        parts.append(view[head:])
        return parts

    def pads(self, write: bool) -> list[memoryview] | None:
        """IO vector entries for every record's sector tail (None when every record fills whole sectors)."""
        n = len(self.lengths)
        if self._stride is not None:
            gap, last = self._gaps
            if not (gap or last) or not n:
                return None
            return [_pad(gap, write)] * (n - 1) + [_pad(last, write)]
        return [_pad(g, write) for g in self._gaps] if any(self._gaps) else None

    def __len__(self) -> int:
        return len(self.lengths)

    def __repr__(self) -> str:
        return f"RecordRun({len(self.lengths)} records, {self.payload} bytes, {self.span // SECTOR_SIZE} sectors)"


def _digest_all(checksum: Checksum) -> Any:
    """``views -> the digests of every view, concatenated`` (one comparison checks a whole run): crc32 packs
    zlib's integers big-endian in one call, exactly ``checksum(view)`` for each view."""
    if checksum.name == "crc32":
        return lambda views: struct.pack(f">{len(views)}I", *map(crc32, views))
    digest = checksum._fn
    return lambda views: b"".join(map(digest, views))


def _interleave(data: list[Any], pads: list[memoryview] | None) -> list[Any]:
    if pads is None:
        return data
    iov: list[Any] = [None] * (2 * len(data))
    iov[::2] = data
    iov[1::2] = pads
    return iov
