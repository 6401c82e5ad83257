"""Where every tensor lives when a model runs out of core, and how it is cut into checksummed records.

Homes:

- **flash**: constant tensors, in op order, while they fit the flash budget (the memory-mapped model plays the part
  of on-chip NOR flash: kernels read them in place, nothing is copied into SRAM);
- **weights area** of the SD image: the constant tensors that did not fit, written once;
- **activations area** of the SD image: every non-constant tensor that is not a variable (each its own region, so
  every intermediate stays on the card for the whole invoke and a corrupted tile can be recomputed from its
  producer's inputs);
- **arena tail**: variable tensors (their state must survive between invokes), with the kernels' persistent data.

A tensor on the SD image is a flat byte string cut into **records** of ``record_bytes`` (the last one may be
shorter). Every record starts on a sector boundary and has its own checksum, so any run of consecutive records is
one SD command (:meth:`~microinterp.storage.sd.SdImage.read_run`) and every byte read is verified. Record sizes:

- activations: whole *rows* of the tensor's split axis (axis 1 of an NHWC tensor, the rows a row band is made of),
  at least :data:`RECORD_TARGET` bytes when a row is smaller, so a producer's row band is always whole records;
  when a consumer reads along a deeper axis (a TRANSPOSE reading NCHW planes by rows), records are that axis' lines;
- weights: whole output channels (dim 0) of a filter with ≥ 2 dims, grouped to at least :data:`RECORD_TARGET`
  bytes, so a channel tile is whole records; other constants are one record.

Record padding (the unused tail of a record's last sector) is what a real card moves too: the SD counters report
physical bytes (whole sectors) next to payload bytes.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from ..storage.format import SECTOR_SIZE, RecordRun, key_digest

#: Smallest record (bytes) a tensor is cut into, when its rows are smaller.
RECORD_TARGET = 512


def sectors(nbytes: int) -> int:
    return -(-nbytes // SECTOR_SIZE)


@dataclass(frozen=True)
class Home:
    """One tensor's place: ``device`` is ``flash``, ``weights``, ``activations`` or ``tail``."""

    tensor: int
    name: str
    nbytes: int
    device: str
    offset: int = 0            # byte offset of record 0 inside the SD area (sector multiple)
    record_bytes: int = 0      # payload bytes per record (the last may be shorter)
    row_bytes: int = 0         # bytes of one unit of the split axis (a row, or a channel of a filter)

    @property
    def records(self) -> int:
        return -(-self.nbytes // self.record_bytes) if self.record_bytes else 0

    @property
    def on_sd(self) -> bool:
        return self.device in ("weights", "activations")

    @property
    def span(self) -> int:
        """Bytes the tensor takes on the SD image (whole sectors per record)."""
        full, last = divmod(self.nbytes, self.record_bytes) if self.record_bytes else (0, 0)
        return (full * sectors(self.record_bytes) + sectors(last)) * SECTOR_SIZE

    def key(self, record: int) -> tuple[str, int]:
        """Checksum-table key of a record: names the tensor (index and name) and the record number."""
        return (f"t{self.tensor} {self.name}", record)

    def record_range(self, lo: int, hi: int) -> tuple[int, int]:
        """Records ``[r0, r1)`` that hold bytes ``[lo, hi)``."""
        return lo // self.record_bytes, -(-hi // self.record_bytes)

    def record_offset(self, record: int) -> int:
        return self.offset + record * sectors(self.record_bytes) * SECTOR_SIZE

    @functools.cached_property
    def digests(self) -> tuple[bytes, ...]:
        """Every record's key digest (the SD checksum table's index), computed once."""
        return tuple(key_digest(self.key(r)) for r in range(self.records))

    @functools.cached_property
    def _runs(self) -> dict[tuple[int, int], RecordRun]:
        return {}

    def run(self, r0: int, r1: int, keep: bool = True) -> RecordRun:
        """Records ``[r0, r1)`` as one SD command, built on first use and kept (unless ``keep`` is False): a tensor
        is moved in the same few record ranges on every invoke."""
        run = self._runs.get((r0, r1))
        if run is None:
            rb = self.record_bytes
            run = RecordRun.uniform(self.digests[r0:r1], rb, min(rb, self.nbytes - (r1 - 1) * rb), self.key, r0)
            if keep:
                self._runs[(r0, r1)] = run
        return run


def record_bytes_for(nbytes: int, row_bytes: int, aligned_rows: bool) -> int:
    """Record size of a tensor of ``nbytes`` made of units of ``row_bytes``.

    ``aligned_rows``: records must be whole units (a row-tiled producer writes whole records). Units smaller than
    :data:`RECORD_TARGET` are grouped; larger ones are one record each.
    """
    if nbytes <= 0:
        return 0
    row_bytes = max(1, min(row_bytes, nbytes))
    per = max(1, math.ceil(RECORD_TARGET / row_bytes)) if aligned_rows or row_bytes < RECORD_TARGET else 1
    return min(nbytes, per * row_bytes)
