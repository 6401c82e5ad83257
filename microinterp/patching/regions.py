"""Which part of each input an op reads for a part of its output: the geometry of patch-based inference.

A *region* is ``(h0, h1, w0, w1)``: rows ``[h0, h1)`` and columns ``[w0, w1)`` of a feature map, in that tensor's own
coordinates. Regions of an op's inputs may reach outside the tensor (negative or past the end); that part is the
padding the original op applied there.

An op takes part in a patched stage when its output at a position depends only on a window of its inputs:

- *windowed* ops -- CONV_2D, DEPTHWISE_CONV_2D, the pools and spatial PAD / PADV2 -- read input rows
  ``[h0 * stride - pad, (h1 - 1) * stride - pad + (k - 1) * dilation + 1)`` for output rows ``[h0, h1)`` (TFLM's
  ``padding.h``: ``pad`` is the "before" padding, taps outside the image are skipped); the pools only without
  padding (TFLM averages over the taps inside the image, which explicit padding would change);
- *pointwise* ops (activations, QUANTIZE, elementwise binaries of two feature maps or a feature map and a constant
  that does not vary over H and W, CONCATENATION over channels, TRANSPOSE that keeps the batch first) read the same
  region of every feature-map input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..kernels.padding import compute_padding_height_width
from ..resolver import declaration_of

Region = tuple[int, int, int, int]

#: the geometries (``Kernel.geometry``) of the ops whose output positions read a window of input positions
WINDOWED = ("filter", "pool", "pad")


def geometry(op: Any) -> str | None:
    """``op``'s geometry as its kernel declares it (:data:`microinterp.kernels.contract.GEOMETRIES`)."""
    return declaration_of(op.key).geometry


def windowed(op: Any) -> bool:
    """A convolution, pool or PAD: each output position reads a window of input positions."""
    return geometry(op) in WINDOWED


def pointwise(op: Any) -> bool:
    """Every output element reads the same position of each feature-map input (with its layout)."""
    return declaration_of(op.key).traits.pointwise


@dataclass(frozen=True)
class Layout:
    """Where a feature map keeps its rows and columns (NHWC: axes 1 and 2; an NCHW input read by TRANSPOSE: 2, 3)."""

    h: int
    w: int

    def shape(self, full: tuple[int, ...], region: Region) -> tuple[int, ...]:
        s = list(full)
        s[self.h], s[self.w] = region[1] - region[0], region[3] - region[2]
        return tuple(s)

    def extent(self, full: tuple[int, ...]) -> Region:
        return (0, full[self.h], 0, full[self.w])


NHWC = Layout(1, 2)


@dataclass(frozen=True)
class Window:
    """A windowed op's filter, stride, dilation and "before" padding, per axis."""

    kh: int
    kw: int
    sh: int
    sw: int
    dh: int
    dw: int
    ph: int
    pw: int

    def input_region(self, out: Region) -> Region:
        h0, h1, w0, w1 = out
        return (h0 * self.sh - self.ph, (h1 - 1) * self.sh - self.ph + (self.kh - 1) * self.dh + 1,
                w0 * self.sw - self.pw, (w1 - 1) * self.sw - self.pw + (self.kw - 1) * self.dw + 1)


def window_of(op: Any, tensors: Any) -> Window | None:
    """The window of a windowed op on an NHWC feature map, or None when its padding cannot be made explicit."""
    x = tensors[op.inputs[0]]
    o = op.options
    kind = geometry(op)
    if kind == "pad":
        pads = tensors[op.inputs[1]].data
        if pads is None or pads.shape != (4, 2) or pads[0].any() or pads[3].any():
            return None
        return Window(1, 1, 1, 1, 1, 1, int(pads[1][0]), int(pads[2][0]))
    if kind == "filter":
        f = tensors[op.inputs[1]].shape
        kh, kw = f[1], f[2]
        dh, dw = o.get("dilation_h_factor", 1), o.get("dilation_w_factor", 1)
    else:
        kh, kw, dh, dw = o.get("filter_height", 1), o.get("filter_width", 1), 1, 1
    sh, sw = o.get("stride_h", 1), o.get("stride_w", 1)
    p = compute_padding_height_width(sh, sw, dh, dw, x.shape[1], x.shape[2], kh, kw, o.get("padding", "VALID"))
    if kind == "pool" and (p.height or p.width or p.height_offset or p.width_offset):
        return None
    return Window(kh, kw, sh, sw, dh, dw, p.height, p.width)


def clip(region: Region, extent: Region) -> Region:
    return (max(region[0], extent[0]), min(region[1], extent[1]), max(region[2], extent[2]),
            min(region[3], extent[3]))


def union(a: Region | None, b: Region) -> Region:
    return b if a is None else (min(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), max(a[3], b[3]))


def padding_outside(wanted: Region, extent: Region) -> tuple[int, int, int, int]:
    """How far ``wanted`` reaches past ``extent``: (top, bottom, left, right)."""
    return (max(0, extent[0] - wanted[0]), max(0, wanted[1] - extent[1]), max(0, extent[2] - wanted[2]),
            max(0, wanted[3] - extent[3]))


def area(region: Region) -> int:
    return max(0, region[1] - region[0]) * max(0, region[3] - region[2])
