"""Channel groups of the out-of-core band kernels: which tiles form a group, when it is computed, and that a block
claimed by someone else while a group is pending is an error, not a wrong result."""

from __future__ import annotations

import numpy as np
import pytest

from microinterp.kernels.optimized._buffers import claimed_buffer
from microinterp.kernels.optimized._group import block_rows, group_done, group_for


def run_tiles(total: int, width: int, channels: int) -> list[tuple[int, int]]:
    """The groups ``(c0, c1)`` computed for channel tiles of ``width`` covering ``total`` channels."""
    memo: dict = {}
    done = []
    for c0 in range(0, total, width):
        ct = min(width, total - c0)
        group = group_for(memo, "test_group", c0, ct, channels, 4, np.float32)
        group.block[group.filled:group.filled + ct] = np.arange(c0, c0 + ct)[:, None]
        group.filled += ct
        if group_done(memo, group, c0 + ct, ct, total, channels):
            rows = block_rows(group)
            assert np.array_equal(rows[:, 0], np.arange(group.c0, c0 + ct))    # every tile's rows, in order
            done.append((group.c0, c0 + ct))
    assert memo["group"] is None
    return done


@pytest.mark.parametrize(("total", "width", "channels", "groups"), [
    (10, 3, 7, [(0, 6), (6, 10)]),          # the next tile would not fit: computed early; the last tile is short
    (10, 3, 100, [(0, 10)]),                # one group for the band
    (10, 4, 2, [(0, 4), (4, 8), (8, 10)]),  # tiles wider than a group: one tile each
    (5, 5, 5, [(0, 5)]),
])
def test_tiles_form_groups(total, width, channels, groups):
    assert run_tiles(total, width, channels) == groups


def test_a_block_claimed_while_a_group_is_pending_is_an_error():
    memo: dict = {}
    group = group_for(memo, "test_group", 0, 2, 8, 4, np.float32)
    group.filled += 2
    assert not group_done(memo, group, 2, 2, 8, 8)

    class Other:
        def release(self) -> None:
            pass

    claimed_buffer("test_group", (8, 4), np.float32, Other())     # another owner takes the shared block
    group.filled += 2
    with pytest.raises(RuntimeError, match="claimed"):
        group_done(memo, group, 8, 2, 8, 8)
