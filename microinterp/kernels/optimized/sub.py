"""SUB, optimized int8 path: one 16-bit-indexed gather from the reference's exact 256 x 256 table (see
``_binary_table``); other types run the reference kernel (``kernels/sub.py`` states TFLM's arithmetic)."""

from __future__ import annotations

from ..sub import KERNEL as REFERENCE
from ._binary_table import TableBinary

KERNEL = TableBinary(REFERENCE)
