"""The bytes of a firmware's arena head, for the CMSIS-NN kernels that read outside their tensors.

Under ``target=`` microinterp runs in an arena of its own plan; a firmware's planned head has the same tensors at
other offsets (its scratch buffers differ). A kernel that reads only its tensors does not care. One that reads past
its input or reuses its scratch buffer's old contents (Helium's 1xN convolution, :mod:`.convolve_1_x_n`) computes
from whatever the firmware's arena holds there, so microinterp keeps an image of that head: every tensor of
subgraph 0 stored at the firmware's offset when it is written (the graph inputs before each invoke, each op's
outputs after it), and the kernel's own scratch writes made on the image as the firmware makes them. The image
starts zeroed (a static ``tensor_arena`` is in ``.bss``) and persists across invokes, as the firmware's arena does.

Not known: what other kernels' scratch buffers held (their im2col contents); the image holds what tensors last
wrote there. It is kept only for models with such a kernel (:attr:`wanted`), so other runs pay nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

#: bytes past the head a read may reach (a few columns of an input at the head's end): zeros
MARGIN = 4096


class DeviceImage:
    def __init__(self, head_bytes: int, tensors: Mapping[int, int], scratch: Mapping[int, tuple[int, ...]]):
        self.bytes = np.zeros(head_bytes + MARGIN, np.uint8)
        self.tensors = dict(tensors)        # subgraph-0 tensor index -> offset in the firmware's head
        self.scratch = dict(scratch)        # subgraph-0 op position -> its scratch buffers' offsets, in order
        self.wanted = False                 # set by a kernel at prepare that reads the image

    @classmethod
    def of(cls, estimate: Any) -> DeviceImage:
        """From a firmware build's arena estimate (:func:`microinterp.memory32.estimate_arena` with ``target``)."""
        tensors, scratch = {}, {}
        for b in estimate.buffers:
            if b["subgraph"] != 0:
                continue
            if b["kind"] == "tensor":
                tensors[b["index"]] = b["offset"]
            elif b["kind"] == "scratch":
                node = estimate.scratch[b["index"]].node
                scratch[node] = (*scratch.get(node, ()), b["offset"])
        return cls(estimate.head_bytes, tensors, scratch)

    def store(self, index: int, value: np.ndarray) -> None:
        """Tensor ``index`` written with ``value`` (at its firmware offset; tensors the head does not hold: none)."""
        at = self.tensors.get(index)
        if at is not None and value is not None:
            raw = np.ascontiguousarray(value).view(np.uint8).ravel()
            self.bytes[at:at + raw.size] = raw

    def fill(self, at: int, value: int, n: int) -> None:
        """``arm_memset_s8``."""
        self.bytes[at:at + n] = np.uint8(value & 0xFF)

    def copy(self, dst: int, src: int, n: int) -> None:
        """``arm_memcpy_s8`` on Helium: 16-byte vector loads and stores, front to back, so where the destination
        overlaps the source ahead of it the later loads read bytes the earlier stores wrote."""
        for i in range(0, n, 16):
            k = min(16, n - i)
            self.bytes[dst + i:dst + i + k] = self.bytes[src + i:src + i + k].copy()

    def read(self, at: int, n: int) -> np.ndarray:
        return self.bytes[at:at + n].view(np.int8)
