"""Memory planning: lifetimes from op order (TFLM's rules), then a pure planner from buffers to offsets.

:data:`PLANNERS` is the one vocabulary of planners: ``Interpreter(planner=...)``, ``--planner`` on every command,
and the ``planner`` field of ``plan --json`` use these names.
"""

from types import MappingProxyType

from .greedy import plan_greedy
from .lifetimes import AllocationInfo, BufferRequest, ScratchRequest, allocation_infos, buffer_requests
from .linear import plan_linear

#: planner name -> what it does (``linear`` is what ``preserve_all_tensors=True`` plans: nothing shares memory).
PLANNERS = MappingProxyType({
    "tflm": "TFLM's GreedyMemoryPlanner: first fit, largest buffers first (what the firmware does)",
    "optimal": "the smallest plan found (lower bound, then a bounded search); microinterp optimize hands it to TFLM",
    "phased": "row-band phases with line buffers: a smaller head for a few more kernel calls",
})

__all__ = ["PLANNERS", "AllocationInfo", "BufferRequest", "ScratchRequest", "allocation_infos", "buffer_requests",
           "plan_greedy", "plan_linear"]
