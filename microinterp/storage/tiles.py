"""Tiles by key on an image: the convenience layer over an image's record runs (``write_run`` / ``read_run``), for
callers that write or read a few tiles without preparing a :class:`~.format.RecordRun`."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from .format import RecordRun, _byte_view


class TileIO:
    """``write``/``read`` one tile and ``write_tiles``/``read_tiles`` consecutive ones, each with its own checksum
    entry, in one command; the image class supplies ``write_run``, ``read_run``, ``_write`` and ``_check_open``."""

    def write(self, area: str, offset: int, data: Any, *, key: Hashable) -> None:
        """Write one tile (bytes-like or numpy array) at ``offset`` in ``area`` and record its checksum."""
        self.write_tiles(area, offset, [(key, data)])

    def write_tiles(self, area: str, offset: int, tiles: Sequence[tuple[Hashable, Any]]) -> None:
        """Write consecutive tiles in ONE command: tile ``i`` starts on the sector after tile ``i - 1`` ends (the
        unused tail of each tile's last sector is written as zeros); each tile gets its own checksum entry."""
        self._check_open()
        views = [_byte_view(data) for _, data in tiles]
        self._write(area, offset, RecordRun([k for k, _ in tiles], [v.nbytes for v in views]), views)

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
