"""CONV_2D through CMSIS-NN's Helium ``arm_convolve_1_x_n_s8``, where it computes other outputs than the reference.

TFLM's CMSIS-NN ``conv.cc`` calls ``arm_convolve_wrapper_s8``, which takes ``arm_convolve_1_x_n_s8`` for an int8
convolution of a one-row input with a one-row filter (not 1x1), ``stride_w * channels`` a multiple of 4 and no
dilation. On an MVE core (Cortex-M55) that function (CMSIS-NN ``Source/ConvolutionFunctions/arm_convolve_1_x_n_s8.c``)
splits the output row in three:

- ``left_pad_num`` positions from its scratch buffer ``buf``: ``pad_x`` columns of the input zero point, then the
  first ``kernel`` input columns (``arm_memset_s8`` / ``arm_memcpy_s8``), each position reading ``kernel`` columns
  from ``buf + r * stride``;
- the unpadded middle straight from the input;
- ``right_pad_num`` positions from ``buf`` again: ``kernel - 1`` input columns from the first right position's
  window start, then ``right_pad_num`` (odd total padding) or ``pad_x`` columns of the zero point.

with ``total = (out - 1) * stride + kernel - in``, ``asym = total % 2`` (C: -1 for ``VALID`` with total -1),
``right_pad_num = max(1, (pad_x + asym + stride - 1) / stride)`` when ``pad_x + asym`` is not 0. Where the
reference would read input column ``q0 + kernel - 1`` the right buffer holds the zero point (``VALID`` with an odd
total drops that tap of the last position); where a window of a later right position reaches past what was
written, it reads what ``buf`` held before (the left section's columns); where ``q0 + kernel - 2`` is past the
input, the copy reads the bytes after the input tensor in the firmware's arena -- with ``arm_memcpy_s8``'s 16-byte
forward chunks, which read back what they already stored where ``buf`` follows the input. microinterp emulates all
of it on the firmware's arena image (:mod:`.device_image`) for the convolutions where any output would differ
(:func:`plan`); every other one runs the reference arithmetic, which the function matches there. The sums and the
requantization are the reference's (``arm_nn_mat_mult_nt_t_s8`` agrees with it bit for bit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .device_image import DeviceImage


def _c_div(a: int, b: int) -> int:
    """C's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


@dataclass(frozen=True)
class Helium1xN:
    """The sections of one convolution's output row, and where its firmware scratch buffer and input live."""

    op: int             # position in subgraph 0
    x: int              # input tensor index
    pad_x: int
    stride: int
    kernel: int
    in_x: int
    channels: int
    left: int
    middle: int
    right: int
    pad_right: int      # zero-point columns written after the right buffer's input columns
    image: DeviceImage

    def windows(self, batch: int, zero_point: int) -> np.ndarray:
        """``[batch, out_x, kernel * channels]`` int8: the columns each output position's dot product reads."""
        img, ic, s, k = self.image, self.channels, self.stride, self.kernel
        buf = img.scratch[self.op][0]
        out_x = self.left + self.middle + self.right
        found = np.empty((batch, out_x, k * ic), np.int8)
        for b in range(batch):
            base = img.tensors[self.x] + b * self.in_x * ic
            img.fill(buf, zero_point, self.pad_x * ic)
            img.copy(buf + self.pad_x * ic, base, k * ic)
            for r in range(self.left):
                found[b, r] = img.read(buf + r * s * ic, k * ic)
            start = base + (s * self.left - self.pad_x) * ic
            for r in range(self.middle):
                found[b, self.left + r] = img.read(start + r * s * ic, k * ic)
            q0 = (s * (self.left + self.middle) - self.pad_x) * ic
            img.copy(buf, base + q0, (k - 1) * ic)
            img.fill(buf + (k - 1) * ic, zero_point, self.pad_right * ic)
            for r in range(self.right):
                found[b, self.left + self.middle + r] = img.read(buf + r * s * ic, k * ic)
        return found


def plan(ctx: Any, op: Any, x: Any, w: Any, y: Any, pad_w: int, stride_w: int, dilation: tuple[int, int],
         input_offset: int) -> Helium1xN | None:
    """The emulation of ``op`` when the firmware is a Helium build whose ``arm_convolve_1_x_n_s8`` gives some output
    another value than the reference (None otherwise: the reference arithmetic is the firmware's)."""
    image = getattr(ctx, "device_image", None)
    if image is None or x.type_name != "INT8" or ctx.subgraph.index != 0 or len(x.shape) != 4 or \
            len(w.shape) != 4 or len(y.shape) != 4:
        return None
    _, ih, iw, ic = x.shape
    _, fh, fw, fc = w.shape
    if pad_w == 0 and fh == 1 and fw == 1 and dilation == (1, 1) and ic == fc:
        return None         # arm_convolve_1x1_s8(_fast)
    if not (ih == 1 and dilation[1] == 1 and fh == 1 and stride_w > 0 and (stride_w * ic) % 4 == 0 and ic == fc):
        return None
    out_x = y.shape[2]
    total = (out_x - 1) * stride_w + fw - iw
    asym = total - 2 * _c_div(total, 2)
    if pad_w * 2 + asym != total:
        return None         # ARM_CMSIS_NN_FAILURE: TFLM's padding never gives it
    right = max(1, _c_div(pad_w + asym + stride_w - 1, stride_w)) if pad_w + asym != 0 else 0
    left = max(1, _c_div(pad_w + stride_w - 1, stride_w)) if pad_w != 0 else 0
    middle = max(out_x - (right + left), 0)
    if right + middle + left != out_x:
        return None         # arm_convolve_s8
    pad_right = right if asym else pad_w
    found = Helium1xN(op.index, op.inputs[0], pad_w, stride_w, fw, iw, ic, left, middle, right, pad_right, image)
    if not _differs(found):
        return None
    if not image.scratch.get(op.index):
        return None         # no scratch buffer: not the path (the wrapper's buffer size was 0)
    image.wanted = True
    return found


def _differs(p: Helium1xN) -> bool:
    """Whether any tap reads something else than the reference would (input column, or padding)."""
    s, k = p.stride, p.kernel
    for r in range(p.left):
        for t in range(k):
            j = r * s + t
            if j >= p.pad_x and j - p.pad_x >= p.in_x:
                return True     # the left buffer's copy reads past the input
    for r in range(p.middle):
        o = p.left + r
        first = o * s - p.pad_x
        if first < 0 or first + k > p.in_x:
            return True
    q0 = s * (p.left + p.middle) - p.pad_x
    for r in range(p.right):
        for t in range(k):
            j = r * s + t
            column = q0 + j
            inside = 0 <= column < p.in_x
            if j < k - 1:
                if column >= p.in_x:
                    return True     # copied from past the input
            elif j < k - 1 + p.pad_right:
                if inside:
                    return True     # the zero point where the reference reads the input
            else:
                return True         # whatever the buffer held before
    return False
