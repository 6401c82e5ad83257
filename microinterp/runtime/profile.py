"""Per-op and per-tile records of an invoke: work, MCU cycles, flash and SD traffic, checksum cost, host time.

``Interpreter.profile`` is a list of :class:`OpRecord`; each holds its :class:`TileRecord` list. The numbers of a
tile::

    compute_cycles = [op's fixed cycles + TFLM's per-op overhead, first tile only]
                     + (op's cycles - its fixed cycles) x the tile's share of the op's MACs (else elements)
    io_cycles      = flash_cycles(flash bytes) + sd_io_cycles(read sectors, read commands)
                     + sd_io_cycles(written sectors, write commands, write=True)
    hash_cycles    = hash_cycles(checksummed payload bytes read + written, algorithm)

with the op's cycles from the interpreter's :class:`~microinterp.mcu.McuProfile` (instructions x cycles per
instruction). An op is ``io``-bound when its IO
and checksum cycles exceed its compute cycles. SD bytes are physical (whole 512-byte sectors, what the card moves);
``payload`` counts are the tensor bytes inside them. The JSON form (:func:`profile_json`) is documented in
docs/profile-schema.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

SCHEMA = "microinterp.profile/1"

_COUNTERS = ("macs", "elements", "flash_read_bytes", "sd_read_bytes", "sd_read_payload", "sd_read_commands",
             "sd_write_bytes", "sd_write_payload", "sd_write_commands", "compute_cycles", "io_cycles", "hash_cycles")


class IoStep(NamedTuple):
    """One step of a tile, typed: what the schedule simulator reads (:mod:`microinterp.schedule.taskgraph`) instead
    of re-deriving the engine's loop. The first four fields are the profile's ``io`` entry (docs/profile-schema.md):

    * ``("read", pool, physical bytes, payload)`` per SD read command (pool ``input`` or ``weights``), with its
      ``role`` (``resident``: an op's input read once, charged to its first tile; ``band``: the tile's input rows;
      ``stream``: a channel tile of a streamed filter), the image ``area`` and ``home`` offset of the tensor's records,
      and the tensor bytes ``[lo, hi)`` the command covers; ``band``: the bytes of a fused PAD's padded band built in
      the input pool from this read;
    * ``("write", "output", physical bytes, payload)`` per SD write command, with the same location fields;
    * ``("flash", "weights", n, n)`` for in-place flash reads; ``("compute", "cpu", channels, 0)`` per channel tile.
    """

    kind: str
    pool: str
    nbytes: int
    payload: int
    role: str = ""
    area: str = ""
    home: int = -1
    lo: int = 0
    hi: int = 0
    band: int = 0


@dataclass
class TileRecord:
    """One tile: output rows ``[y0, y1)`` (or ``None``) and the channel range it computed."""

    index: int
    rows: tuple[int, int] | None = None
    channels: tuple[int, int] | None = None
    macs: int = 0
    elements: int = 0
    flash_read_bytes: int = 0
    sd_read_bytes: int = 0
    sd_read_payload: int = 0
    sd_read_commands: int = 0
    sd_write_bytes: int = 0
    sd_write_payload: int = 0
    sd_write_commands: int = 0
    compute_cycles: float = 0.0
    io_cycles: float = 0.0
    hash_cycles: float = 0.0
    #: the tile's steps in order (:class:`IoStep`)
    io: list[IoStep] = field(default_factory=list)

    @property
    def total_cycles(self) -> float:
        return self.compute_cycles + self.io_cycles + self.hash_cycles


@dataclass
class OpRecord:
    """One op of the last invoke (``mode``: ``in-memory``, ``rows``, ``channels``, ``whole``, ``reduce``, ``alias``, ``fused``
    or ``chain``; ``chain``: the index of the last op of the fused chain it belongs to, whose turn runs it)."""

    index: int
    op: str
    op_class: str
    mode: str
    tiles: list[TileRecord] = field(default_factory=list)
    host_seconds: float = 0.0
    recoveries: int = 0
    chain: int | None = None

    def __getattr__(self, name: str) -> Any:
        if name in _COUNTERS:
            return sum(getattr(t, name) for t in self.tiles)
        raise AttributeError(name)

    @property
    def total_cycles(self) -> float:
        return sum(t.total_cycles for t in self.tiles)

    @property
    def bound(self) -> str:
        """``compute`` or ``io``: which side takes more cycles."""
        return "io" if self.io_cycles + self.hash_cycles > self.compute_cycles else "compute"

    def as_dict(self, tiles: bool = True) -> dict[str, Any]:
        d = {"index": self.index, "op": self.op, "class": self.op_class, "mode": self.mode,
             "tiles_count": len(self.tiles), "bound": self.bound, "host_seconds": self.host_seconds,
             "recoveries": self.recoveries, "total_cycles": self.total_cycles, "chain": self.chain}
        d.update({k: getattr(self, k) for k in _COUNTERS})
        if tiles:
            d["tiles"] = [_tile_dict(t) for t in self.tiles]
        return d


def _tile_dict(t: TileRecord) -> dict[str, Any]:
    d = asdict(t)
    d["rows"] = list(t.rows) if t.rows else None
    d["channels"] = list(t.channels) if t.channels else None
    d["total_cycles"] = t.total_cycles
    d["io"] = [list(e[:4]) for e in t.io]
    return d


def totals(records: list[OpRecord]) -> dict[str, Any]:
    out: dict[str, Any] = {k: sum(getattr(r, k) for r in records) for k in _COUNTERS}
    out["total_cycles"] = sum(r.total_cycles for r in records)
    out["tiles"] = sum(len(r.tiles) for r in records)
    out["host_seconds"] = sum(r.host_seconds for r in records)
    out["recoveries"] = sum(r.recoveries for r in records)
    return out


def profile_json(records: list[OpRecord], meta: dict[str, Any], tiles: bool = True) -> dict[str, Any]:
    """The documented JSON document (docs/profile-schema.md)."""
    return {"schema": SCHEMA, **meta, "ops": [r.as_dict(tiles) for r in records], "totals": totals(records)}


def format_table(records: list[OpRecord], clock_hz: float) -> str:
    """A readable per-op table with a totals line (cycles in thousands, bytes in kB)."""
    head = (f"{'#':>3} {'op':<22} {'mode':<9} {'tiles':>5} {'MMACs':>8} {'compute kc':>11} {'io kc':>10} "
            f"{'hash kc':>9} {'SD rd kB':>9} {'SD wr kB':>9} {'flash kB':>9} {'bound':<7} {'host ms':>8}")
    lines = [head, "-" * len(head)]
    for r in records:
        lines.append(
            f"{r.index:>3} {r.op[:22]:<22} {r.mode:<9} {len(r.tiles):>5} {r.macs / 1e6:>8.2f} "
            f"{r.compute_cycles / 1e3:>11.1f} {r.io_cycles / 1e3:>10.1f} {r.hash_cycles / 1e3:>9.1f} "
            f"{r.sd_read_bytes / 1e3:>9.1f} {r.sd_write_bytes / 1e3:>9.1f} {r.flash_read_bytes / 1e3:>9.1f} "
            f"{r.bound:<7} {r.host_seconds * 1e3:>8.2f}")
    t = totals(records)
    lines.append("-" * len(head))
    lines.append(
        f"{'':>3} {'total':<22} {'':<9} {t['tiles']:>5} {t['macs'] / 1e6:>8.2f} {t['compute_cycles'] / 1e3:>11.1f} "
        f"{t['io_cycles'] / 1e3:>10.1f} {t['hash_cycles'] / 1e3:>9.1f} {t['sd_read_bytes'] / 1e3:>9.1f} "
        f"{t['sd_write_bytes'] / 1e3:>9.1f} {t['flash_read_bytes'] / 1e3:>9.1f} {'':<7} {t['host_seconds'] * 1e3:>8.2f}")
    seconds = t["total_cycles"] / clock_hz
    lines.append(f"MCU estimate: {t['total_cycles'] / 1e6:.2f} M cycles = {seconds * 1e3:.1f} ms "
                 f"(compute {t['compute_cycles'] / 1e6:.2f} M, IO {t['io_cycles'] / 1e6:.2f} M, "
                 f"checksums {t['hash_cycles'] / 1e6:.2f} M; sequential, no IO/compute overlap)")
    return "\n".join(lines)
