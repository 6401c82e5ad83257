"""What every part of the report writes with: escaped text and a tensor's one-line description."""

from __future__ import annotations

import html
from typing import Any


def escape(x: Any) -> str:
    """``x`` as text safe inside an HTML element or a quoted attribute."""
    return html.escape(str(x), quote=True)


def tensor_desc(t: Any) -> str:
    """``INT8[1, 96, 96, 1] q(0.0078, 0)``: type, shape and quantization."""
    q = t.quantization
    quant = ""
    if q is not None and q.scales.size:
        quant = f" q({q.scale:.4g}, {q.zero_point})" if not q.per_channel else f" q(per-channel x{q.scales.size})"
    return f"{t.type_name}{list(t.shape)}{quant}"
