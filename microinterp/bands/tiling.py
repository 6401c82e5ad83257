"""How each op is cut into tiles out of core: the band machinery's side of the declarations of :mod:`..kernels.bands`.

How an op runs (``Tiler.mode``):

- ``rows``: the output (4-D, batch 1) is cut into row bands along axis 1; each band needs a band of input rows (with
  the halo its filter reaches), declared by the kernel's tiler (``input_rows``). CONV_2D additionally streams its
  filter in output-channel tiles when the whole filter does not fit the weights pool: the input band stays resident
  while the channel tiles go by, and the output band is written once all its channels are done.
- ``channels``: FULLY_CONNECTED (batch 1): the input vector and the output are resident, the filter streams in
  output-channel tiles.
- ``reduce``: MEAN / SUM over the rows: bands of input rows into running totals, the whole output written after the
  last band.
- ``whole``: every other op (and declared ops whose shapes do not allow bands): inputs are read whole into the input
  pool, the kernel's ``invoke`` runs on pool views, outputs are written whole. The op must fit its pools.
- ``alias``: RESHAPE-like ops of an activation share their input's records and move nothing.
- ``fused``: a constant-fill PAD whose only reader takes it in row bands is built inside that reader's reads.

Which op runs how is the kernel's declaration (its ``bands`` attribute, :mod:`..kernels.bands`); this module adds only
what holds for every op: an empty tensor, a RESHAPE of an activation, a constant main input, a plugin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from ..kernels.bands import BandViews, Tiler
from ..kernels.contract import declaration, declares
from ..kernels.pad import PadTiler
from ..kernels.registry import builtin_ids

__all__ = ["ALIAS", "WHOLE", "BandViews", "PadTiler", "TileSpec", "Tiler", "band_kernel", "has_bands", "is_builtin",
           "line_bytes", "tiler_for"]


@dataclass
class TileSpec:
    """One output tile: output rows ``[y0, y1)`` (rows mode) and the weight channel tiles computed into it."""

    index: int
    y0: int
    y1: int
    channel_tiles: list[tuple[int, int]]


class WholeTiler(Tiler):
    mode = "whole"


class AliasTiler(Tiler):
    """RESHAPE / SQUEEZE / EXPAND_DIMS of an activation: the output is the input's bytes under another shape, so
    out of core it shares the input's records on the card and the op moves nothing."""

    mode = "alias"


class FusedPadTiler(Tiler):
    """A PAD whose only reader takes it in row bands: the reader's band of padded rows is built on the fly from the
    PAD's input rows (``pad_rows`` into the input pool), so the padded tensor never goes to the card. A CONV_2D /
    DEPTHWISE_CONV_2D reader whose zero padding can stand for the PAD (``fold_pad``) reads the PAD's input directly
    instead: no padded band at all."""

    mode = "fused"
    row_inputs: ClassVar[dict[int, int]] = {0: 1}


WHOLE = WholeTiler()
ALIAS = AliasTiler()


def line_bytes(shape: tuple[int, ...], itemsize: int, axis: int) -> int:
    """Bytes of one index step along ``axis`` (the product of the dims after it, times the item size)."""
    return itemsize * math.prod(shape[axis + 1:])


def band_kernel(resolver: Any, key: str, optimized: bool) -> Any:
    """The kernel whose band functions run an op in bands: the optimized kernel when the interpreter is optimized,
    resolves to it and it declares band functions of its own (the convolutions, FULLY_CONNECTED), else what the
    resolver gives for the reference layer (plugins and explicit registrations stay themselves)."""
    if optimized and resolver.layer_of(key, True) == "optimized":
        kernel = resolver.find(key, True)
        if declares(kernel, "bands"):
            return kernel
    return resolver.find(key, False)


def has_bands(op: Any, kernel: Any, replaced: Any = None) -> bool:
    """Whether ``kernel`` (an override of ``replaced``) declares bands the tiles may use, itself or by inheritance
    (:func:`~..kernels.contract.declaration`)."""
    return declaration(kernel, replaced).bands is not None


def is_builtin(kernel: Any) -> bool:
    """One of microinterp's own kernels (reference or optimized)."""
    return id(kernel) in builtin_ids()


def tiler_for(op: Any, data: Any, tensors: list[Any], kernel: Any, replaced: Any = None) -> Tiler:
    """The tiler for ``op`` run by ``kernel`` (an override of the shipped kernel ``replaced``, when it is one): its
    declaration's (:mod:`..kernels.bands`), after what holds for every
    op -- a kernel without a declaration, an op with several outputs or an empty tensor runs whole; a RESHAPE-like op
    of an activation is an alias; a constant main input runs whole unless the declaration takes constants."""
    ins = [tensors[i] if i >= 0 else None for i in op.inputs]
    out = tensors[op.outputs[0]] if op.outputs and op.outputs[0] >= 0 else None
    declared = declaration(kernel, replaced) if kernel is not None else None
    decl = declared.bands if declared is not None else None
    if out is None or (len(op.outputs) != 1 and not getattr(decl, "multiple_outputs", False)):
        return WHOLE
    if out.num_elements == 0 or any(t is not None and t.data is None and t.num_elements == 0 for t in ins):
        return WHOLE                # an empty tensor has no rows to band (and no band to fuse)
    if declared is not None and declared.traits.view and is_builtin(kernel) and ins and ins[0] is not None \
            and ins[0].data is None and not ins[0].is_variable and ins[0].nbytes == out.nbytes \
            and ins[0].dtype == out.dtype:
        return ALIAS
    if decl is None:
        return WHOLE
    tiler = decl.for_op(op, data, ins, out)
    if tiler is None:
        return WHOLE
    if ins and ins[0] is not None and ins[0].is_constant and not tiler.takes_constants:
        return WHOLE                # a constant main input (a rewired model) has no records to band
    return tiler
