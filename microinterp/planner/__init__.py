"""Memory planning: lifetimes from op order (TFLM's rules), then a pure planner from buffers to offsets."""

from .greedy import plan_greedy
from .lifetimes import AllocationInfo, BufferRequest, ScratchRequest, allocation_infos, buffer_requests
from .linear import plan_linear

__all__ = ["AllocationInfo", "BufferRequest", "ScratchRequest", "allocation_infos", "buffer_requests",
           "plan_greedy", "plan_linear"]
