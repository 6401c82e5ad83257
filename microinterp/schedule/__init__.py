"""Scheduling out-of-core invokes: the pager's tiles as a task graph, simulated on a CPU and an IO chain.

- :mod:`.taskgraph`: tasks (read / compute / write) and edges from the pager's tile records;
- :mod:`.simulator`: SwapNN's two-worker scheduler with separate buffer pools, frame pipelining;
- :mod:`.run`: building a pager for a model and an SRAM/tile configuration, the baselines, overheads and sweeps;
- :mod:`.wear`: SD card wear (GB/day, lifetime) and energy per inference.

docs/scheduler.md describes the model, the choices and the measured results.
"""

from .simulator import Schedule, simulate
from .taskgraph import build_graph
from .tasks import Task, TaskGraph

__all__ = ["Schedule", "Task", "TaskGraph", "build_graph", "simulate"]
