"""The card under an SD image: positioned, vectored, sector-counted IO on one open file.

:class:`FileDevice` is what :class:`~microinterp.storage.sd.SdImage` reads and writes through: ``os.pread`` /
``os.preadv`` / ``os.pwritev`` resumed after short transfers (at most IOV_MAX buffers per call), ``fsync`` and
``ftruncate``; every command counted per image area (commands, physical bytes, payload) for the cost model. An
``OSError`` becomes a :class:`~microinterp.errors.StorageError` naming the file, the offset and the operation; after
a failed write, sync or resize the device is marked ``failed`` (what was written since the last sync cannot be
trusted) and the image refuses further use until reopened. POSIX only, one thread at a time.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import StorageError
from .format import _IOV_MAX, AREAS, SECTOR_SIZE, _sectors, io_error


class FileDevice:
    """IO on the open file ``fd`` of the image at ``path`` (see the module docstring); it does not own ``fd``."""

    def __init__(self, fd: int, path: str):
        self.fd, self.path = fd, path
        self.failed = False         # a write or a sync failed: refuse further use until reopened
        self.reset_counters()

    def reset_counters(self) -> None:
        #: per area: read commands, write commands, physical bytes read / written, payload read / written
        self.counters = {a: [0] * 6 for a in AREAS}

    def size(self) -> int:
        try:
            return os.fstat(self.fd).st_size
        except OSError as e:
            raise io_error("stat", self.path, None, e) from e

    def truncate(self, nbytes: int) -> None:
        try:
            os.ftruncate(self.fd, nbytes)
        except OSError as e:
            self.failed = True
            raise io_error(f"size to {nbytes} bytes", self.path, None, e) from e
        self.fsync(f"size of {nbytes} bytes")

    def fsync(self, what: str) -> None:
        """fsync, or a StorageError: after a failed fsync nothing written since the last one can be trusted, so the
        device is marked failed (reopen the image: its header says what survived)."""
        try:
            os.fsync(self.fd)
        except OSError as e:
            self.failed = True
            raise io_error(f"sync the {what}", self.path, None, e) from e

    def count(self, area: str, write: bool, physical: int, payload: int) -> None:
        c = self.counters[area]
        i = 1 if write else 0
        c[i] += 1
        c[2 + i] += physical
        c[4 + i] += payload

    def pread(self, nbytes: int, pos: int, area: str, whole_sectors: bool = False) -> bytes:
        """A small read (header, table); returns what the file has (maybe short) trimmed to nbytes."""
        physical = _sectors(nbytes) * SECTOR_SIZE if whole_sectors else nbytes
        if not physical:
            return b""
        try:
            data = os.pread(self.fd, physical, pos)
        except OSError as e:
            raise io_error(f"read {physical} bytes of the {area}", self.path, pos, e) from e
        self.count(area, False, physical, nbytes)
        return data[:nbytes]

    def preadv(self, views: list[memoryview], pos: int, area: str, payload: int) -> None:
        total = self.io(os.preadv, views, pos, "read")
        self.count(area, False, total, payload)

    def pwritev(self, views: list[memoryview], pos: int, area: str, payload: int) -> None:
        total = self.io(os.pwritev, views, pos, "write")
        self.count(area, True, total, payload)

    def io(self, call: Any, views: list[memoryview], pos: int, verb: str, total: int | None = None) -> int:
        """Vectored IO to completion (at most IOV_MAX buffers per call, short transfers resumed; empty buffers are
        harmless); returns the byte count (``total``, when the caller knows it)."""
        if total is None:
            total = sum(v.nbytes for v in views)
        done, i = 0, 0
        while done < total:
            try:
                n = call(self.fd, views[i:i + _IOV_MAX], pos + done)
            except OSError as e:
                if verb == "write":
                    self.failed = True
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
