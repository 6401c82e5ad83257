"""The two-stack arena: one block of exactly ``size`` bytes, as TFLM's SingleArenaBufferAllocator.

::

    start (aligned up to 16)                                                    end (not aligned)
    │ head: planned, non-persistent tensors ▶ │ temp ▶ │    free    │ ◀ tail: persistent data │
    └──────────────── head_bytes ─────────────┘                     └────── tail_bytes ───────┘

* Persistent allocations (kernel persistent buffers, variable tensors) grow down from the end:
  ``new_tail = align_down(tail - n, 16)`` (absolute addresses, so every tail buffer is 16-aligned); they fail if
  they would cross the head, with TFLM's message ("Failed to allocate tail memory. Requested: n, available a,
  missing: m", where m = head - new_tail counts the alignment padding and a = n - m).
* The head is one resizable block, ``align_up(start) + plan size``, set once the plan is known; it fails if it
  would cross the tail.
* ``used_bytes = (end - tail) + head`` (+ the start's alignment padding), which is what an arena of that size needs.

:class:`SizingArena` has the same interface with no upper bound; the interpreter uses it to measure the smallest arena
a model needs (``arena=None``, or to say how much is missing when an arena is too small).
"""

from __future__ import annotations

import numpy as np

from .errors import ArenaOverflowError

ALIGNMENT = 16


def align_up(n: int, a: int = ALIGNMENT) -> int:
    return (n + a - 1) // a * a


def align_down(n: int, a: int = ALIGNMENT) -> int:
    return n // a * a


class Arena:
    """A fixed block of memory with a head growing up and a tail growing down."""

    def __init__(self, size: int):
        if size < 0:
            raise ValueError(f"arena size must be >= 0, got {size}")
        self.size = int(size)
        try:
            self.buffer = np.zeros(self.size, dtype=np.uint8)
        except MemoryError:
            raise ArenaOverflowError("the arena itself", self.size, 0,
                                     hint="this host cannot allocate that much memory") from None
        addr = self.buffer.ctypes.data
        self.start = min(align_up(addr) - addr, self.size)  # offset of the aligned start
        self.end = self.size
        self.tail = self.end                                   # lowest byte of the tail (offset)
        self.head = 0                                          # bytes of the head, from start

    # -- allocation ----------------------------------------------------------------------------------------------
    def allocate_persistent(self, nbytes: int, alignment: int = ALIGNMENT) -> np.ndarray:
        nbytes = int(nbytes)
        addr = self.buffer.ctypes.data
        new_tail = align_down(addr + self.tail - nbytes, alignment) - addr
        if new_tail < self.start + self.head:
            # TFLM's figures: missing = head - aligned_result (so the alignment padding counts as missing),
            # available = requested - missing.
            missing = self.start + self.head - new_tail
            raise ArenaOverflowError("tail memory", nbytes, max(0, nbytes - missing))
        self.tail = new_tail
        return self.buffer[new_tail:new_tail + nbytes]

    def set_head(self, nbytes: int) -> None:
        nbytes = int(nbytes)
        if self.start + nbytes > self.tail:
            raise ArenaOverflowError("head memory (planned tensors)", nbytes, self.tail - self.start)
        self.head = nbytes

    def head_view(self, offset: int, nbytes: int) -> np.ndarray:
        begin = self.start + offset
        return self.buffer[begin:begin + nbytes]

    # -- counters ------------------------------------------------------------------------------------------------
    @property
    def tail_bytes(self) -> int:
        return self.end - self.tail

    @property
    def head_bytes(self) -> int:
        return self.head

    @property
    def used_bytes(self) -> int:
        return self.start + self.head + self.tail_bytes


class SizingArena:
    """Measures what an :class:`Arena` would need: allocations succeed and are counted, nothing is bounded."""

    def __init__(self) -> None:
        self.start = 0
        self.head = 0
        self._tail = 0

    def allocate_persistent(self, nbytes: int, alignment: int = ALIGNMENT) -> np.ndarray:
        self._tail = align_up(self._tail + int(nbytes), alignment)
        return np.zeros(int(nbytes), dtype=np.uint8)

    def set_head(self, nbytes: int) -> None:
        self.head = int(nbytes)

    @property
    def tail_bytes(self) -> int:
        return self._tail

    @property
    def head_bytes(self) -> int:
        return self.head

    @property
    def used_bytes(self) -> int:
        # the tail grows down from a 16-aligned end: a head that ends off the alignment (an offline plan with an
        # unaligned offset) leaves the gap to the next boundary unused
        return align_up(self.head, ALIGNMENT) + self._tail
