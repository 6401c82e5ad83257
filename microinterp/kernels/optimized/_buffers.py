"""Host-side work buffers of the optimized kernels (the Python process's memory, not arena memory).

:func:`work_buffer` hands out a reusable buffer per *role* (one block per role and thread, grown on demand, its
views cached: this is on every invoke's path). :func:`claimed_buffer` / :func:`still_claimed` add ownership for
blocks whose content outlives one call: the out-of-core band kernels of every layer share one im2col block and one
channel-group block, and an owner learns whether the block still holds what it left there.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

_pool = threading.local()


def work_buffer(role: str, shape: tuple[int, ...], dtype) -> np.ndarray:
    """A reusable host-side buffer of ``shape``/``dtype`` for ``role``: one block per role and thread, grown on
    demand; the views handed out are cached (this is on every invoke's path)."""
    views = getattr(_pool, "views", None)
    if views is None:
        views = _pool.views = {}
        _pool.blocks = {}
    key = (role, shape, dtype)
    view = views.get(key)
    if view is None:
        dtype = np.dtype(dtype)
        n = math.prod(shape) * dtype.itemsize
        block = _pool.blocks.get(role)
        if block is None or block.size < n:
            for k in [k for k in views if k[0] == role]:     # views of the old block: drop them first, so the
                del views[k]                                  # old block is freed before the new one is taken
            block = _pool.blocks[role] = None
            block = _pool.blocks[role] = np.empty(max(n, 64), np.uint8)
        view = views[key] = block[:n].view(dtype).reshape(shape)
    return view


def claimed_buffer(role: str, shape: tuple[int, ...], dtype, owner: Any) -> tuple[np.ndarray, bool]:
    """:func:`work_buffer` for ``role`` claimed by ``owner``, and whether ``owner`` was the last to claim this very
    block: then it holds what the owner left in it (layouts that are written once, such as an im2col block's 1.0
    column and zero-point margins, need not be rewritten). The previous owner, if another, is told to drop its views
    of the block (``owner.release()``), so no stale block stays alive. Out of core, the band kernels of every layer
    share these blocks: the host heap holds one block per role, not one per layer."""
    owners = getattr(_pool, "owners", None)
    if owners is None:
        owners = _pool.owners = {}
    previous = owners.get(role)
    if previous is not None and previous[0] is not owner:
        previous[0].release()           # before work_buffer, which may replace the block by a larger one
    view = work_buffer(role, shape, dtype)
    ptr = view.__array_interface__["data"][0]
    kept = previous is not None and previous[0] is owner and previous[1] == ptr
    owners[role] = (owner, ptr)
    return view, kept


def still_claimed(role: str, owner: Any, view: np.ndarray) -> bool:
    """True while nobody claimed ``role`` since ``owner`` claimed it as ``view``."""
    owners = getattr(_pool, "owners", None)
    entry = None if owners is None else owners.get(role)
    return entry is not None and entry[0] is owner and entry[1] == view.__array_interface__["data"][0]
