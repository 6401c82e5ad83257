"""A plan as a table: one row per planned buffer (what ``plan`` prints and ``Interpreter.plan_table`` returns)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..model import Model
from .lifetimes import AllocationInfo, BufferRequest


def plan_rows(model: Model, infos: Sequence[AllocationInfo], owners: Sequence[int],
              requests: Sequence[BufferRequest], offsets: Sequence[int]) -> list[dict[str, Any]]:
    """Every planned buffer: kind, tensor index/name or scratch number, offset, size, lifetime."""
    rows = []
    for owner, offset, req in zip(owners, offsets, requests):
        info = infos[owner]
        name = (model.subgraphs[info.subgraph].tensors[info.index].name
                if info.kind == "tensor" else f"scratch {info.index}")
        rows.append({"kind": info.kind, "subgraph": info.subgraph, "index": info.index, "name": name,
                     "offset": offset, "size": req.size, "nbytes": info.nbytes, "first": req.first,
                     "last": req.last, "offline": req.offline_offset != -1})
    return rows
