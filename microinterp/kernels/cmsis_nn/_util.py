"""Helpers shared by the CMSIS-NN rules: tensors of an op, 32-bit struct sizes, the conv padding."""

from __future__ import annotations

from collections.abc import Sequence

from ...model import Operator, Tensor
from ...tflm.structs32 import ILP32, opdata_bytes
from ..padding import compute_padding_height_width
from ..registry import declaration_of


def tensor(op: Operator, tensors: Sequence[Tensor], i: int) -> Tensor | None:
    """Input ``i`` of ``op`` (None when absent or optional)."""
    return tensors[op.inputs[i]] if i < len(op.inputs) and op.inputs[i] >= 0 else None


def output(op: Operator, tensors: Sequence[Tensor]) -> Tensor:
    return tensors[op.outputs[0]]


def reference_opdata(op_name: str) -> int:
    """``sizeof`` the reference kernel's OpData on ILP32 (no ``USE_TFLM_COMPRESSION``)."""
    n = opdata_bytes(declaration_of(op_name).opdata, ILP32)
    assert n is not None, op_name
    return n


def with_ints(nbytes: int, count: int) -> int:
    """``sizeof`` a struct of a 4-aligned struct of ``nbytes`` followed by ``count`` ints."""
    return (nbytes + 3) // 4 * 4 + 4 * count


def conv_padding(op: Operator, in_h: int, in_w: int, f_h: int, f_w: int) -> tuple[int, int]:
    """(pad_h, pad_w) as TFLM's ComputePaddingHeightWidth gives them to CMSIS-NN."""
    o = op.options
    p = compute_padding_height_width(o["stride_h"], o["stride_w"], o.get("dilation_h_factor", 1),
                                     o.get("dilation_w_factor", 1), in_h, in_w, f_h, f_w, o["padding"])
    return p.height, p.width
