"""The SD image: a block device of 512-byte sectors on a file, with a checksum on every tile.

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
import fcntl
import functools
import hashlib
import json
import operator
import os
import stat
import struct
import time
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import Self

import numpy as np

from ..errors import IntegrityError, StorageError
from .checksum import DEFAULT_CHECKSUM, Checksum, crc32, get_checksum
from .crypto import COUNTER_BLOCK, ENTRY_BYTES, IMAGE_ID_BYTES, RecordCipher, check_key


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


class SdImage:
    """A file-backed SD image; create or reopen it with :meth:`SdImage.open` (see the module docstring)."""

    def __init__(self, fd: int, path: str, fingerprint: str, weights_bytes: int, activation_bytes: int,
                 table_entries: int, checksum: Checksum, key: bytes | None = None):
        self._fd: int | None = None     # owned only once construction succeeded (see the end; __del__ closes it)
        self._failed = False        # a write or a sync failed: refuse further use until reopened
        self._key = key
        self.encrypted = key is not None
        self.image_id = b""
        self._cipher: RecordCipher | None = None
        self._counter = self._counter_limit = 0
        self._state = 0
        self.path = path
        self.fingerprint = fingerprint
        self.weights_bytes = weights_bytes
        self.activation_bytes = activation_bytes
        self.table_entries = table_entries
        self.checksum = checksum
        self.geometry = Geometry.for_sizes(weights_bytes, activation_bytes, table_entries)
        self.action = ""                 # "created", "reused", "reinitialised" or "rebuilt"
        self.reason: str | None = None   # why it was not simply created / reused as it was
        self._weights_ready = False
        self._table_digest = b""
        self._entries: dict[str, dict[bytes, _Entry]] = {a: {} for a in DATA_AREAS}
        self._zeros = bytes(SECTOR_SIZE)
        self._areas = {a: self.geometry.area(a) for a in AREAS}
        self._digest_all = _digest_all(checksum)
        self._digest_size = ENTRY_BYTES if self.encrypted else checksum.digest_size
        self.reset_stats()
        self._fd = fd

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path: str | os.PathLike[str], *, fingerprint: str, weights_bytes: int, activation_bytes: int,
             table_entries: int, checksum: str = DEFAULT_CHECKSUM, key: Any = None) -> SdImage:
        """Create, reuse, re-initialise or rebuild the image at ``path`` (``action``/``reason`` tell which).
        ``key`` (32 bytes) makes it an encrypted image (:mod:`.crypto`): an encrypted image is opened only with
        its key (a wrong or missing one is a StorageError, and the image is left untouched); a plain image opened
        with a key is re-initialised encrypted."""
        key = None if key is None else check_key(key)
        sizes = {}
        for name, value in (("weights_bytes", weights_bytes), ("activation_bytes", activation_bytes),
                            ("table_entries", table_entries)):
            sizes[name] = operator.index(value)
            if sizes[name] < 0:
                raise StorageError(f"{name} must be >= 0, got {value}")
        if len(fingerprint.encode()) > MAX_FINGERPRINT_BYTES:
            raise StorageError(f"model fingerprint longer than {MAX_FINGERPRINT_BYTES} bytes (UTF-8)")
        algo = get_checksum(checksum)
        path = os.fspath(path)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise StorageError(f"cannot open SD image {path}: {e.strerror or e}") from e
        image = None
        try:
            try:
                mode = os.fstat(fd).st_mode
            except OSError as e:
                raise io_error("stat", path, None, e) from e
            if not stat.S_ISREG(mode):
                raise StorageError(f"{path} is not a regular file (an SD image is a file that microinterp sizes and "
                                   "writes): choose a file path")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                raise StorageError(f"SD image {path} is in use by another open SdImage") from e
            image = cls(fd, path, fingerprint, sizes["weights_bytes"], sizes["activation_bytes"],
                        sizes["table_entries"], algo, key)
            image._attach()
        except BaseException:
            # the half-open image must not close this fd number again when it is collected: by then the number
            # may belong to another open file (a reopened image)
            if image is not None:
                image._fd = None
            os.close(fd)
            raise
        return image

    def _attach(self) -> None:
        try:
            size = os.fstat(self._fd).st_size
        except OSError as e:
            raise io_error("stat", self.path, None, e) from e
        if size == 0:
            self._initialise("created", None)
            return
        head = self._pread(SECTOR_SIZE, 0, "header")
        if len(head) < len(MAGIC) and MAGIC.startswith(head):
            # our own first header write, cut short before the magic was whole: nothing else was ever written
            self._initialise("rebuilt", f"truncated: the file is {size} bytes, a header write was cut short")
            return
        if not head.startswith(MAGIC):
            raise StorageError(
                f"{self.path} exists and is not a microinterp SD image (no magic {MAGIC!r} at offset 0); "
                "refusing to overwrite it: delete it or choose another path")
        verdict = self._judge(head, size)
        if verdict is not None:
            self._initialise(*verdict)

    def _judge(self, head: bytes, size: int) -> tuple[str, str] | None:
        """None if the image is reused as it is (table loaded), else (action, reason) to re-initialise."""
        if len(head) < SECTOR_SIZE:
            return "rebuilt", f"truncated: the file is {size} bytes, shorter than its header"
        (version,) = struct.unpack_from("<I", head, len(MAGIC))
        if version != FORMAT_VERSION:
            return "reinitialised", f"format version {version}, this build writes {FORMAT_VERSION}"
        (crc,) = struct.unpack_from("<I", head, _HEADER_CRC_AT)
        if crc != crc32(head[:_HEADER_CRC_AT]):
            if _HEADER.unpack_from(head)[4] & _ENCRYPTED and self._key is None:
                raise StorageError(f"{self.path} is an encrypted SD image with a damaged header: only its key may "
                                   "rebuild it (pass key=...); it was not touched")
            return "rebuilt", "header checksum mismatch (torn or corrupted header)"
        (_, _, sector, state, flags, algo, *rest) = _HEADER.unpack_from(head)
        geometry, (w_bytes, a_bytes, entries, used), table_digest, fp_len, fp = \
            rest[:6], rest[6:10], rest[10], rest[11], rest[12]
        image_id, key_check, counter = rest[13], rest[14], rest[15]
        if flags & _ENCRYPTED:      # only its key may touch an encrypted image
            if self._key is None:
                raise StorageError(f"{self.path} is an encrypted SD image: pass its key (key=...); it was not touched")
            cipher = RecordCipher(self._key, image_id, fp[:fp_len].decode(errors="replace"))
            if not cipher.key_matches(key_check):
                raise StorageError(f"wrong key for the encrypted SD image {self.path}; it was not touched")
            self.image_id, self._counter = image_id, counter
        elif self._key is not None:
            return "reinitialised", "encryption requested for a plain image"
        algo = algo.rstrip(b"\0").decode(errors="replace")
        fingerprint = fp[:fp_len].decode(errors="replace")
        if sector != SECTOR_SIZE:
            return "reinitialised", f"sector size {sector}, this build uses {SECTOR_SIZE}"
        if state != _READY:
            return "rebuilt", (f"left half-written (state {_STATE_NAMES.get(state, state)!r}: "
                               "the weights were never committed)")
        stored = Geometry(*geometry)
        if stored != Geometry.for_sizes(w_bytes, a_bytes, entries) or used > entries:
            return "rebuilt", "inconsistent geometry in the header"
        if fingerprint != self.fingerprint:
            return "reinitialised", f"made for another model (fingerprint {fingerprint!r}, not {self.fingerprint!r})"
        if algo != self.checksum.name:
            return "reinitialised", f"checksum {algo!r}, {self.checksum.name!r} requested"
        if (w_bytes, entries) != (self.weights_bytes, self.table_entries):
            return "reinitialised", (f"geometry differs (weights {w_bytes} bytes / {entries} table entries, "
                                     f"requested {self.weights_bytes} / {self.table_entries})")
        if size < stored.total_bytes:
            return "rebuilt", f"truncated: the file is {size} bytes, its geometry needs {stored.total_bytes}"
        table_start, _ = stored.area("table")
        table = self._pread(used * TABLE_ENTRY_SIZE, table_start, "table", whole_sectors=True)
        if self._digest(table) != table_digest[:self.checksum.digest_size]:
            return "rebuilt", "checksum table corrupted"
        weights = {}
        for key, offset, length, digest in _ENTRY.iter_unpack(table):
            if offset % SECTOR_SIZE or offset + length > self.geometry.area("weights")[1]:
                return "rebuilt", "checksum table entry outside the weights area"
            weights[key] = (offset, length, digest[:self._digest_size])
        if self.encrypted:
            self._cipher = RecordCipher(self._key, self.image_id, self.fingerprint)
            self._counter_limit = self._counter
            self._state = _READY
        self._entries["weights"] = weights
        self._table_digest = table_digest
        self._weights_ready = True
        self.action = "reused"
        self._state = _READY
        if a_bytes != self.activation_bytes:
            self.reason = f"activations area resized from {a_bytes} to {self.activation_bytes} bytes"
            if self.geometry.total_bytes > size:
                self._truncate(self.geometry.total_bytes)
            self._write_header(_READY, self._table_digest)
            if self.geometry.total_bytes < size:
                self._truncate(self.geometry.total_bytes)
        return None

    def _initialise(self, action: str, reason: str | None) -> None:
        """Header 'building' (durable) first, then drop every old byte and size the file (sparse)."""
        self.action, self.reason = action, reason
        self._entries = {a: {} for a in DATA_AREAS}
        self._weights_ready = False
        self._table_digest = b""
        if self.encrypted:         # a new image id: a new record key, its counter from 1
            self.image_id = os.urandom(IMAGE_ID_BYTES)
            self._cipher = RecordCipher(self._key, self.image_id, self.fingerprint)
            self._counter = self._counter_limit = 1
        self._write_header(_BUILDING)
        self._truncate(SECTOR_SIZE)
        self._truncate(self.geometry.total_bytes)

    def _write_header(self, state: int, table_digest: bytes = b"") -> None:
        fp = self.fingerprint.encode()
        head = bytearray(SECTOR_SIZE)
        self._state = state
        key_check = self._cipher.key_check() if self._cipher is not None else b""
        _HEADER.pack_into(head, 0, MAGIC, FORMAT_VERSION, SECTOR_SIZE, state, _ENCRYPTED if self.encrypted else 0,
                          self.checksum.name.encode(), *self.geometry.as_tuple(), self.weights_bytes,
                          self.activation_bytes, self.table_entries,
                          len(self._entries["weights"]) if state == _READY else 0, table_digest, len(fp), fp,
                          self.image_id, key_check, self._counter_limit)
        struct.pack_into("<I", head, _HEADER_CRC_AT, crc32(head[:_HEADER_CRC_AT]))
        self._pwritev([memoryview(head)], 0, "header", SECTOR_SIZE)
        self._fsync("header")

    def _take_counters(self, n: int) -> int:
        """The first of ``n`` fresh nonce counters; the header reserves a block beyond them first (durably), so no
        counter is used twice under this image's key, across crashes and reopens."""
        start = self._counter
        if start + n > self._counter_limit:
            self._counter_limit = start + n + COUNTER_BLOCK
            self._write_header(self._state, self._table_digest)
        self._counter = start + n
        return start

    def _truncate(self, nbytes: int) -> None:
        try:
            os.ftruncate(self._fd, nbytes)
        except OSError as e:
            self._failed = True
            raise io_error(f"size to {nbytes} bytes", self.path, None, e) from e
        self._fsync(f"size of {nbytes} bytes")

    def _fsync(self, what: str) -> None:
        """fsync, or a StorageError: after a failed fsync nothing written since the last one can be trusted, so the
        open image refuses further use (reopen it: the header says what survived)."""
        try:
            os.fsync(self._fd)
        except OSError as e:
            self._failed = True
            raise io_error(f"sync the {what}", self.path, None, e) from e

    def commit_weights(self) -> None:
        """Persist the weights' checksum table, then mark the image ready (each step fsync'ed); seals weights."""
        self._check_open()
        if self._weights_ready:
            return
        table = b"".join(_ENTRY.pack(k, *e) for k, e in self._entries["weights"].items())
        if table:
            self._pwritev([memoryview(table), memoryview(self._zeros)[:(-len(table)) % SECTOR_SIZE]],
                          self.geometry.area("table")[0], "table", len(table))
        self._fsync("checksum table")
        self._table_digest = self._digest(table)
        self._write_header(_READY, self._table_digest)
        self._weights_ready = True

    # ------------------------------------------------------------------ tile IO
    @property
    def weights_ready(self) -> bool:
        """True when the weights area holds committed weights for this model (reused or just committed)."""
        return self._weights_ready

    def area_offset(self, area: str) -> int:
        """Absolute byte offset of an area in the file."""
        return self._area(area)[0]

    def area_size(self, area: str) -> int:
        """Size in bytes of an area (the requested size rounded up to whole sectors)."""
        return self._area(area)[1]

    def write(self, area: str, offset: int, data: Any, *, key: Hashable) -> None:
        """Write one tile (bytes-like or numpy array) at ``offset`` in ``area`` and record its checksum."""
        self.write_tiles(area, offset, [(key, data)])

    def write_tiles(self, area: str, offset: int, tiles: Sequence[tuple[Hashable, Any]]) -> None:
        """Write consecutive tiles in ONE command: tile ``i`` starts on the sector after tile ``i - 1`` ends (the
        unused tail of each tile's last sector is written as zeros); each tile gets its own checksum entry."""
        self._check_open()
        views = [_byte_view(data) for _, data in tiles]
        self._write(area, offset, RecordRun([k for k, _ in tiles], [v.nbytes for v in views]), views)

    def write_run(self, area: str, offset: int, run: RecordRun, data: Any) -> None:
        """:meth:`write_tiles` for a prepared run: ``data`` (C-contiguous, exactly ``run.payload`` bytes) holds the
        records back to back; each record is checksummed and written straight from it (no copy)."""
        self._check_open()
        view = _byte_view(data)
        if view.nbytes != run.payload:
            raise StorageError(f"the data has {view.nbytes} bytes, the tiles {run.payload}")
        self._write(area, offset, run, run.split(view))

    def _write(self, area: str, offset: int, run: RecordRun, views: list[Any]) -> None:
        start, size = self._area(area, data=True)
        if area == "weights" and self._weights_ready:
            raise StorageError("the weights area is sealed (weights committed); open the image for a new model "
                               "to rewrite it")
        self._check_range(area, offset, run.span, size)
        entries = self._entries[area]
        if area == "weights":
            new = len(set(run.digests) - entries.keys())
            if len(entries) + new > self.table_entries:
                raise StorageError(f"checksum table full ({self.table_entries} entries) writing "
                                   f"{_describe(run.key(len(run) - 1))[2]}")
        t0 = time.perf_counter()
        if self._cipher is not None:        # ciphertext to the card, (counter, tag) where the checksum goes
            first, seal = self._take_counters(len(views)), self._cipher.seal
            sealed = [seal(area, pos, first + i, v) for i, (pos, v) in enumerate(zip(run.positions(offset), views))]
            views = [memoryview(c) for c, _ in sealed]
            digests = [e for _, e in sealed]
        else:
            digests = list(map(self.checksum._fn, views))
        self._hash_seconds += time.perf_counter() - t0
        self._hash_bytes += run.payload
        try:
            self._io(os.pwritev, _interleave(views, run.pads(True)), start + offset, "write", run.span)
        except BaseException:
            for key_digest in run.digests:      # a failed write must not leave the old checksums behind
                entries.pop(key_digest, None)
            raise
        self._count(area, True, run.span, run.payload)
        entries.update(zip(run.digests, zip(run.positions(offset), run.lengths, digests)))

    def read(self, area: str, offset: int, nbytes: int, *, key: Hashable,
             out: np.ndarray | None = None) -> np.ndarray:
        """Read the tile ``key`` (``nbytes`` at ``offset``) into ``out`` (or a new uint8 array) and verify it.

        Raises IntegrityError, naming tensor, tile and absolute SD byte offset, when the tile was never written
        (at this offset and length) or its checksum does not match.
        """
        if out is None:
            out = np.empty(nbytes, dtype=np.uint8)
        self.read_tiles(area, offset, [(key, nbytes)], out)
        return out

    def read_tiles(self, area: str, offset: int, tiles: Sequence[tuple[Hashable, int]], out: Any) -> None:
        """Read consecutive tiles (laid out as :meth:`write_tiles` writes them) in ONE command into ``out``, packed
        back to back without the sector padding, and verify every tile's checksum (first failure raises)."""
        self._check_open()
        self.read_run(area, offset, RecordRun([k for k, _ in tiles], [n for _, n in tiles]), out)

    def read_run(self, area: str, offset: int, run: RecordRun, out: Any) -> None:
        """:meth:`read_tiles` for a prepared run: the records land straight in ``out`` (one ``preadv``, no copy),
        then every record's checksum is verified from ``out`` (first failure raises)."""
        self._check_open()
        start, size = self._area(area, data=True)
        self._check_range(area, offset, run.span, size)
        view = _byte_view(out, writable=True)
        if view.nbytes != run.payload:
            raise StorageError(f"the `out` buffer has {view.nbytes} bytes, the tiles {run.payload}")
        entries = list(map(self._entries[area].get, run.digests))
        if run._checked is None or run._checked != (area, offset, entries):
            expected = list(zip(run.positions(offset), run.lengths))
            if None in entries or list(map(_POS_LEN, entries)) != expected:
                for i, (entry, (pos, n)) in enumerate(zip(entries, expected)):
                    if entry is None or entry[:2] != (pos, n):
                        written = "never written" if entry is None else (
                            f"written at offset {entry[0]} with {entry[1]} bytes, not {pos} / {n}")
                        raise self._integrity_error(run.key(i), area, pos, n, written)
            if area == "weights":       # sealed: the same entries will be checked again next time
                run._checked = (area, offset, entries)
        data = run.split(view)
        self._io(os.preadv, _interleave(data, run.pads(False)), start + offset, "read", run.span)
        self._count(area, False, run.span, run.payload)
        t0 = time.perf_counter()
        if self._cipher is not None:
            self._open_records(area, offset, run, data, entries)
            self._hash_seconds += time.perf_counter() - t0
            self._hash_bytes += run.payload
            return
        got = self._digest_all(data)
        self._hash_seconds += time.perf_counter() - t0
        self._hash_bytes += run.payload
        if got != b"".join(map(_DIGEST, entries)):
            digest = self.checksum._fn
            for i, (pos, n, view_i, entry) in enumerate(zip(run.positions(offset), run.lengths, data, entries)):
                g = digest(view_i)
                if g != entry[2]:
                    raise self._integrity_error(run.key(i), area, pos, n, f"checksum mismatch ({self.checksum.name} "
                                                                          f"stored {entry[2].hex()}, read {g.hex()})")

    def _open_records(self, area: str, offset: int, run: RecordRun, data: list[Any], entries: list[Any]) -> None:
        """Authenticate and decrypt every record of a run in place (first failure raises IntegrityError)."""
        opener = self._cipher.open
        for i, (pos, n, view, entry) in enumerate(zip(run.positions(offset), run.lengths, data, entries)):
            plain = opener(area, pos, entry[2], view)
            if plain is None:
                raise self._integrity_error(run.key(i), area, pos, n, "authentication failed (AES-GCM tag: the "
                                            "record was altered, moved, replayed or sealed under another key)")
            view[:] = plain if isinstance(view, memoryview) else np.frombuffer(plain, np.uint8)

    def repair_weights(self, offset: int, data: Any, *, key: Hashable) -> None:
        """Rewrite a committed weights tile with its original content (what ``recover=True`` does after a
        corrupted weights read): allowed only when ``data`` matches the checksum stored for ``key``."""
        self._check_open()
        start, _ = self._area("weights", data=True)
        entry = self._entries["weights"].get(_key_digest(key))
        view = _byte_view(data)
        if entry is not None and self._cipher is not None and entry[:2] == (offset, view.nbytes):
            # sealed again under its own counter: the same plaintext gives the same ciphertext and tag
            sealed, again = self._cipher.seal("weights", offset, RecordCipher.counter_of(entry[2]), view)
            if again != entry[2]:
                raise StorageError(f"{_describe(key)[2]}: repair data does not match the stored tag")
            view = memoryview(sealed)
        elif entry is None or entry[:2] != (offset, view.nbytes) or self._digest(view) != entry[2]:
            raise StorageError(f"{_describe(key)[2]}: repair data does not match the stored checksum")
        self._pwritev([view, memoryview(self._zeros)[:(-view.nbytes) % SECTOR_SIZE]], start + offset, "weights",
                      view.nbytes)

    def _integrity_error(self, key: Any, area: str, offset: int, nbytes: int, what: str) -> IntegrityError:
        tensor, tile, text = _describe(key)
        sd_offset = self._area(area)[0] + offset
        err = IntegrityError(f"{text}: {what} at SD offset {sd_offset} ({area} area + {offset}, {nbytes} bytes) "
                             f"in {self.path}")
        err.key, err.tensor, err.tile, err.area, err.sd_offset = key, tensor, tile, area, sd_offset
        return err

    # ------------------------------------------------------------------ counters
    def stats(self) -> SdStats:
        """Counters since open (or the last reset_stats): commands and bytes per area, hashing bytes and time."""
        areas = {a: AreaStats(*c) for a, c in self._counters.items()}
        return SdStats(MappingProxyType(areas), self._hash_bytes, self._hash_seconds)

    def reset_stats(self) -> None:
        self._counters = {a: [0] * 6 for a in AREAS}
        self._hash_bytes = 0
        self._hash_seconds = 0.0

    # ------------------------------------------------------------------ closing
    def close(self) -> None:
        """Close the file (releases the lock). Uncommitted weights stay 'building' and are rebuilt next time."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError as e:
                raise io_error("close", self.path, None, e) from e

    def __del__(self) -> None:
        """A collected image releases its file and lock (``close()`` or ``with`` does it at once)."""
        fd = getattr(self, "_fd", None)
        if fd is not None:
            self._fd = None
            try:
                os.close(fd)
            except OSError:
                pass

    @property
    def closed(self) -> bool:
        return self._fd is None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"SdImage({self.path!r}, {self.action}, weights_ready={self._weights_ready}, "
                f"weights={self.weights_bytes}, activations={self.activation_bytes}, checksum={self.checksum.name})")

    # ------------------------------------------------------------------ private helpers
    def _check_open(self) -> None:
        if self._fd is None:
            raise StorageError(f"SD image {self.path} is closed")
        if self._failed:
            raise StorageError(f"SD image {self.path} had an I/O error on a write or a sync: what was written since "
                               "cannot be trusted; close it and open it again (the image is checked on opening)")

    def _area(self, area: str, data: bool = False) -> tuple[int, int]:
        if area not in (DATA_AREAS if data else AREAS):
            raise StorageError(f"unknown area {area!r}; use one of {', '.join(DATA_AREAS if data else AREAS)}")
        return self._areas[area]

    @staticmethod
    def _check_range(area: str, offset: int, nbytes: int, size: int) -> None:
        if offset < 0 or offset % SECTOR_SIZE:
            raise StorageError(f"offset {offset} in the {area} area is not a multiple of {SECTOR_SIZE} (sectors)")
        if nbytes < 0 or offset + _sectors(nbytes) * SECTOR_SIZE > size:
            raise StorageError(f"{nbytes} bytes at offset {offset} do not fit the {area} area ({size} bytes)")

    def _digest(self, buffer: Any) -> bytes:
        t0 = time.perf_counter()
        digest = self.checksum(buffer)
        self._hash_seconds += time.perf_counter() - t0
        self._hash_bytes += memoryview(buffer).nbytes
        return digest

    def _count(self, area: str, write: bool, physical: int, payload: int) -> None:
        c = self._counters[area]
        i = 1 if write else 0
        c[i] += 1
        c[2 + i] += physical
        c[4 + i] += payload

    def _pread(self, nbytes: int, pos: int, area: str, whole_sectors: bool = False) -> bytes:
        """A small read (header, table); returns what the file has (maybe short) trimmed to nbytes."""
        physical = _sectors(nbytes) * SECTOR_SIZE if whole_sectors else nbytes
        if not physical:
            return b""
        try:
            data = os.pread(self._fd, physical, pos)
        except OSError as e:
            raise io_error(f"read {physical} bytes of the {area}", self.path, pos, e) from e
        self._count(area, False, physical, nbytes)
        return data[:nbytes]

    def _preadv(self, views: list[memoryview], pos: int, area: str, payload: int) -> None:
        total = self._io(os.preadv, views, pos, "read")
        self._count(area, False, total, payload)

    def _pwritev(self, views: list[memoryview], pos: int, area: str, payload: int) -> None:
        total = self._io(os.pwritev, views, pos, "write")
        self._count(area, True, total, payload)

    def _io(self, call: Any, views: list[memoryview], pos: int, verb: str, total: int | None = None) -> int:
        """Vectored IO to completion (at most IOV_MAX buffers per call, short transfers resumed; empty buffers are
        harmless); returns the byte count (``total``, when the caller knows it)."""
        if total is None:
            total = sum(v.nbytes for v in views)
        done, i = 0, 0
        while done < total:
            try:
                n = call(self._fd, views[i:i + _IOV_MAX], pos + done)
            except OSError as e:
                if verb == "write":
                    self._failed = True
                raise io_error(f"{verb} {total} bytes", self.path, pos + done, e) from e
            if n == 0:
                raise StorageError(f"short {verb} at SD offset {pos + done} of {self.path}: the file ends early")
            done += n
            if done == total:
                break
            while n >= views[i].nbytes:
                n -= views[i].nbytes
                i += 1
            if n:
                views = views[:i] + [views[i][n:]] + views[i + 1:]
        return total
