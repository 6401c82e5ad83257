"""Channel groups of the out-of-core band kernels (CONV_2D, FULLY_CONNECTED).

Out of core, a filter too large for the weights pool streams through it in narrow output-channel tiles (VGG16's
512-channel convolutions in 25-channel tiles, its first FULLY_CONNECTED in 4-channel tiles). One product per tile
would run thousands of skinny GEMMs. Instead a band kernel copies each tile's operand out of the pool as it passes
(the pool half it sat in is overwritten two tiles later) into a shared host block, and runs one product and one
epilogue per **group** of tiles: when the block is full or the band's last tile has arrived. The pager computes a
band's channel tiles in channel order and writes the output band only after the last one, so the results are the
same values, computed by fewer and wider products.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._buffers import claimed_buffer

#: Most bytes of the shared host block that gathers a group's operands.
GROUP_BYTES = 6 << 20


class ChannelGroup:
    """Channel tiles gathered for one product: first channel ``c0``, channels so far ``filled``, and the host
    ``block`` (``[channels, columns]``, claimed from the shared work buffers; None once another group claimed it)."""

    __slots__ = ("block", "c0", "filled")

    def __init__(self, c0: int) -> None:
        self.c0, self.filled, self.block = c0, 0, None

    def release(self) -> None:
        self.block = None


def group_for(memo: dict, role: str, c0: int, ct: int, channels: int, columns: int, dtype: Any) -> ChannelGroup:
    """The band's pending group (``memo["group"]``) when tile ``[c0, c0 + ct)`` fits it, else a new one starting at
    ``c0`` whose block holds ``max(channels, ct)`` rows."""
    group = memo.get("group")
    if group is None or group.filled + ct > channels:
        group = memo["group"] = ChannelGroup(c0)
        group.block, _ = claimed_buffer(role, (max(channels, ct), columns), dtype, group)
    return group


def group_done(memo: dict, group: ChannelGroup, c1: int, ct: int, total: int, channels: int) -> bool:
    """After a tile ending at ``c1`` joined ``group``: True when the group must be computed now (the band's last
    tile, or the next tile would not fit), and then the band's pending group is cleared. A block claimed by someone
    else meanwhile is an internal error (the pager computes one band's channel tiles without interleaving)."""
    if c1 != total and group.filled + min(ct, total - c1) <= channels:
        return False
    if group.block is None:
        raise RuntimeError("a shared host block was claimed while a channel group was pending")
    memo["group"] = None
    return True


def block_rows(group: ChannelGroup) -> np.ndarray:
    """The filled rows of the group's block."""
    return group.block[:group.filled]
