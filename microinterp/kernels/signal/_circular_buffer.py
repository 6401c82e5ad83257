"""TFLM's ``signal/src/circular_buffer.cc`` as the stateful signal ops use it: a FIFO of int16 samples of a fixed
capacity, stored in the arena's tail (TFLM keeps each sample twice, at ``i`` and ``i + capacity``, so a read never
wraps; the values read are the same). ``read``/``write`` positions and the ``empty`` flag follow the C code:
``available`` is ``write - read`` (plus the capacity when negative; 0 or the capacity when equal, by ``empty``).
"""

from __future__ import annotations

import numpy as np


class CircularBuffer:
    def __init__(self, arena, capacity: int):
        self.capacity = capacity
        self.data = arena.allocate_persistent(2 * 2 * capacity).view(np.int16) if capacity else \
            np.zeros(0, np.int16)
        self.reset()

    def reset(self) -> None:
        self.read = self.write_pos = 0
        self.empty = True
        self.data[...] = 0

    def available(self) -> int:
        diff = self.write_pos - self.read
        if diff > 0:
            return diff
        if diff < 0:
            return self.capacity + diff
        return 0 if self.empty else self.capacity

    def write(self, values) -> None:
        values = np.asarray(values, dtype=np.int16).reshape(-1)
        n = values.size
        if n == 0:
            return
        idx = (self.write_pos + np.arange(n)) % self.capacity
        self.data[idx] = values
        self.data[idx + self.capacity] = values
        self.write_pos = (self.write_pos + n) % self.capacity if self.write_pos + n != self.capacity else 0
        self.empty = False

    def write_zeros(self, n: int) -> None:
        self.write(np.zeros(n, np.int16))

    def extend(self, count: int, times: int) -> None:
        """``CircularBufferExtend``: write the last ``count`` samples again ``times`` times."""
        if times <= 0 or count <= 0:
            return
        start = self.write_pos + self.capacity - count if count > self.write_pos else self.write_pos - count
        last = self.data[(start + np.arange(count)) % self.capacity].copy()
        for _ in range(times):
            self.write(last)

    def get(self, n: int) -> np.ndarray:
        return self.data[(self.read + np.arange(n)) % self.capacity].copy()

    def discard(self, n: int) -> None:
        self.read = (self.read + n) % self.capacity if self.capacity else 0
        if self.read == self.write_pos:
            self.empty = True
