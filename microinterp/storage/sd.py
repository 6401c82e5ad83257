"""The SD image's file IO: :class:`SdImage` creates, reopens, checks, reads and writes an image on a file.

The on-disk layout, the header and table records, the life cycle and crash safety are those of
:mod:`microinterp.storage.format` (its docstring). IO is sector-granular like a real card: one ``os.preadv`` /
``os.pwritev`` per run of records, counted per area for the cost model; POSIX only, one thread at a time.
"""

from __future__ import annotations

import fcntl
import operator
import os
import stat
import struct
import time
from collections.abc import Hashable
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import Self

import numpy as np

from ..errors import IntegrityError, StorageError
from .checksum import DEFAULT_CHECKSUM, Checksum, crc32, get_checksum
from .crypto import COUNTER_BLOCK, ENTRY_BYTES, IMAGE_ID_BYTES, RecordCipher, check_key
from .device import FileDevice
from .format import (
    _BUILDING,
    _DIGEST,
    _ENCRYPTED,
    _ENTRY,
    _HEADER,
    _HEADER_CRC_AT,
    _POS_LEN,
    _READY,
    _STATE_NAMES,
    AREAS,
    DATA_AREAS,
    FORMAT_VERSION,
    MAGIC,
    MAX_FINGERPRINT_BYTES,
    SECTOR_SIZE,
    TABLE_ENTRY_SIZE,
    AreaStats,
    Geometry,
    RecordRun,
    SdStats,
    _byte_view,
    _describe,
    _digest_all,
    _Entry,
    _interleave,
    _key_digest,
    _sectors,
    io_error,
)
from .tiles import TileIO


class SdImage(TileIO):
    """A file-backed SD image; create or reopen it with :meth:`SdImage.open` (see the module docstring)."""

    def __init__(self, fd: int, path: str, fingerprint: str, weights_bytes: int, activation_bytes: int,
                 table_entries: int, checksum: Checksum, key: bytes | None = None):
        self._fd: int | None = None     # owned only once construction succeeded (see the end; __del__ closes it)
        self._dev = FileDevice(fd, path)
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
        size = self._dev.size()
        if size == 0:
            self._initialise("created", None)
            return
        head = self._dev.pread(SECTOR_SIZE, 0, "header")
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
        table = self._dev.pread(used * TABLE_ENTRY_SIZE, table_start, "table", whole_sectors=True)
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
                self._dev.truncate(self.geometry.total_bytes)
            self._write_header(_READY, self._table_digest)
            if self.geometry.total_bytes < size:
                self._dev.truncate(self.geometry.total_bytes)
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
        self._dev.truncate(SECTOR_SIZE)
        self._dev.truncate(self.geometry.total_bytes)

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
        self._dev.pwritev([memoryview(head)], 0, "header", SECTOR_SIZE)
        self._dev.fsync("header")

    def _take_counters(self, n: int) -> int:
        """The first of ``n`` fresh nonce counters; the header reserves a block beyond them first (durably), so no
        counter is used twice under this image's key, across crashes and reopens."""
        start = self._counter
        if start + n > self._counter_limit:
            self._counter_limit = start + n + COUNTER_BLOCK
            self._write_header(self._state, self._table_digest)
        self._counter = start + n
        return start

    def commit_weights(self) -> None:
        """Persist the weights' checksum table, then mark the image ready (each step fsync'ed); seals weights."""
        self._check_open()
        if self._weights_ready:
            return
        table = b"".join(_ENTRY.pack(k, *e) for k, e in self._entries["weights"].items())
        if table:
            self._dev.pwritev([memoryview(table), memoryview(self._zeros)[:(-len(table)) % SECTOR_SIZE]],
                          self.geometry.area("table")[0], "table", len(table))
        self._dev.fsync("checksum table")
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
            self._dev.io(os.pwritev, _interleave(views, run.pads(True)), start + offset, "write", run.span)
        except BaseException:
            for key_digest in run.digests:      # a failed write must not leave the old checksums behind
                entries.pop(key_digest, None)
            raise
        self._dev.count(area, True, run.span, run.payload)
        entries.update(zip(run.digests, zip(run.positions(offset), run.lengths, digests)))

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
        self._dev.io(os.preadv, _interleave(data, run.pads(False)), start + offset, "read", run.span)
        self._dev.count(area, False, run.span, run.payload)
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
        self._dev.pwritev([view, memoryview(self._zeros)[:(-view.nbytes) % SECTOR_SIZE]], start + offset, "weights",
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
        areas = {a: AreaStats(*c) for a, c in self._dev.counters.items()}
        return SdStats(MappingProxyType(areas), self._hash_bytes, self._hash_seconds)

    def reset_stats(self) -> None:
        self._dev.reset_counters()
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
        if self._dev.failed:
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
