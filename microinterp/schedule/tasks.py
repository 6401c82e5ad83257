"""The nodes and the graph the scheduler works on: :class:`Task` (one SD command, one channel tile's compute, or a
join) and :class:`TaskGraph` (every task of some frames, the pools and the sequential peaks). Built by
:func:`microinterp.schedule.taskgraph.build_graph`, run by :mod:`microinterp.schedule.simulator`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

POOLS = ("input", "weights", "output")
READ, COMPUTE, WRITE, JOIN = "read", "compute", "write", "join"


class Task:
    """One node of the graph. ``resource`` is ``io``, ``cpu`` or ``none`` (a join); ``alloc`` the pool it allocates
    when selected (or None) and ``buffer`` how many bytes; ``frees`` the (pool, bytes, buffer id) it releases when it
    finishes; ``state`` goes INIT -> READY -> SELECTED -> FINISHED."""

    __slots__ = (
        "alloc",
        "buf_id",
        "buffer",
        "channels",
        "cycles",
        "end",
        "frame",
        "frees",
        "hash_cycles",
        "id",
        "kind",
        "layer",
        "nbytes",
        "npred",
        "op",
        "payload",
        "pool",
        "resource",
        "segments",
        "seq",
        "start",
        "state",
        "succ",
        "tile",
    )

    def __init__(self, id: int, kind: str, frame: int, op: int, layer: int, tile: int, seq: int):
        self.id, self.kind, self.frame, self.op, self.layer, self.tile, self.seq = id, kind, frame, op, layer, tile, seq
        self.resource = "cpu" if kind == COMPUTE else ("none" if kind == JOIN else "io")
        self.pool: str | None = None
        self.nbytes = self.payload = 0
        self.alloc: str | None = None
        self.buffer = 0
        self.buf_id = -1
        self.cycles = 0.0
        self.hash_cycles = 0.0
        self.frees: list[tuple[str, int, int]] = []
        self.succ: list[int] = []
        self.npred = 0
        self.state = "INIT"
        self.start = self.end = -1.0
        self.segments: list[tuple[float, float]] = []
        self.channels = 0

    @property
    def priority(self) -> tuple[int, int]:
        return (self.frame, self.seq)

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return (f"Task({self.id} {self.kind} f{self.frame} op{self.op} t{self.tile} seq{self.seq} "
                f"{self.pool or ''} {self.nbytes}B {self.cycles:.0f}c {self.state})")


@dataclass
class TaskGraph:
    """Tasks of ``frames`` frames of one model on one pager configuration."""

    tasks: list[Task]
    frames: int
    pools: dict[str, int]                       # pool -> bytes
    peak: dict[str, list[int]]                  # pool -> sequential peak usage at each seq position (one frame)
    suffix_peak: dict[str, list[int]]           # pool -> max of peak over seq >= i
    seq_len: int                                # tasks per frame (seq positions)
    precise: bool                               # exact record-range dependencies (else per-tensor barriers)
    clock_hz: float
    hash_on_cpu: bool
    options: dict[str, Any] = field(default_factory=dict)
    ops: list[dict[str, Any]] = field(default_factory=list)     # per op: index, name, mode, tiles

    def by_kind(self, kind: str, frame: int | None = None) -> list[Task]:
        return [t for t in self.tasks if t.kind == kind and (frame is None or t.frame == frame)]

    def totals(self, frame: int | None = 0) -> dict[str, Any]:
        """Counts and bytes of one frame (or all with ``frame=None``), in the pager's counter names."""
        ts = [t for t in self.tasks if frame is None or t.frame == frame]
        reads = [t for t in ts if t.kind == READ]
        writes = [t for t in ts if t.kind == WRITE]
        computes = [t for t in ts if t.kind == COMPUTE]
        return {
            "tasks": len([t for t in ts if t.kind != JOIN]),
            "io_tasks": len(reads) + len(writes),
            "compute_tasks": len(computes),
            "tiles": len({(t.frame, t.op, t.tile) for t in computes}),
            "sd_read_commands": len(reads),
            "sd_read_bytes": sum(t.nbytes for t in reads),
            "sd_read_payload": sum(t.payload for t in reads),
            "sd_write_commands": len(writes),
            "sd_write_bytes": sum(t.nbytes for t in writes),
            "sd_write_payload": sum(t.payload for t in writes),
            "compute_cycles": sum(t.cycles for t in computes),
            "io_cycles": sum(t.cycles for t in reads + writes),
            "total_cycles": sum(t.cycles for t in ts),
        }
