"""One op as the band machinery sees it: its kernel and OpData, the :class:`~.tiling.Tiler` that runs it, and
(filled in by whoever schedules it: the out-of-core pager, the phased planner) its tiles, a streamed filter and its
channel tiles, a PAD folded into it, and cached work and cost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .tiling import Tiler, TileSpec


@dataclass
class OpPlan:
    index: int
    op: Any
    kernel: Any
    data: Any
    tiler: Tiler
    tiles: list[TileSpec] = field(default_factory=list)
    streamed: int | None = None            # input index of the filter streamed in channel tiles, if any
    channel_tiles: list[tuple[int, int]] = field(default_factory=list)
    folded: OpPlan | None = None           # the PAD whose input this op reads directly (see fuse_pads)
    work: dict[Any, tuple[int, int]] = field(default_factory=dict)   # (MACs, elements) per tile rows, cached
    cost: tuple[float, float, int] | None = None   # the whole op's cycles, fixed cycles and work, once computed

    @property
    def mode(self) -> str:
        return self.tiler.mode
