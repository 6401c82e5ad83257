"""The Interpreter's settings in groups: what ``Interpreter(...)`` takes besides the model, the arena and the kernels.

- :class:`~microinterp.runtime.base.OutOfCore` (``backing=``): where tensors and weights live and how the pager
  runs -- pools, flash budget, tile cap, checksum, recovery, fusion, encryption key;
- :class:`Planning` (``planner=``): how the arena's head is planned, how large an in-memory arena may be held in
  host memory, whether every tensor stays readable;
- :class:`Cost` (``cost=``): the board and kernel set the cost model prices an invoke for;
- the firmware build (``target=``, :class:`~microinterp.targets.Target`).

Each group's fields may also be given by name (``Interpreter(model, arena, "sd.img", tile=4096, mcu="stm32h7")``):
:func:`split` routes them into their groups, so one keyword means the same thing everywhere; an unknown one is a
``TypeError`` as for any function.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .cost.mcu import McuProfile, get_profile, kernel_set
from .errors import ConfigError
from .planner import PLANNERS
from .runtime.base import OutOfCore

#: Default ``max_arena``: the largest planned arena run in host memory (real MCU models need a few MB; the optimized
#: kernels keep host buffers several times the activations' size, so a mutated model asking for gigabytes would take
#: the machine's memory). Out of core (``backing=``) has no such limit.
MAX_ARENA = 256 << 20

__all__ = ["MAX_ARENA", "Cost", "OutOfCore", "Planning", "Settings", "split"]


@dataclass(frozen=True)
class Planning:
    """How the arena's head is planned (``planner``: one of :data:`PLANNERS`), the largest in-memory arena held in
    host memory (``max_arena``; beyond it, run out of core), and whether every tensor stays readable after an invoke
    (``preserve_all_tensors``: TFLM's linear plan, as the wheel's ``kPreserveAllTensors``)."""

    planner: str = "tflm"
    max_arena: int = MAX_ARENA
    preserve_all_tensors: bool = False

    def __post_init__(self) -> None:
        if self.planner not in PLANNERS:
            raise ConfigError(f"unknown planner {self.planner!r}; use one of {', '.join(PLANNERS)}")
        if self.planner == "phased" and self.preserve_all_tensors:
            raise ConfigError("planner='phased' keeps only bands of intermediate tensors; it cannot preserve them all")


@dataclass(frozen=True)
class Cost:
    """The board (``mcu``: a profile name, ``CORE@CLOCK`` or a :class:`~microinterp.cost.mcu.McuProfile`) and the
    kernel set (``kernels``: ``optimized``/``cmsis-nn`` or ``reference``) the cost model prices an invoke for."""

    mcu: str | McuProfile = "stm32f746"
    kernels: str = "optimized"

    def __post_init__(self) -> None:
        kernel_set(self.kernels)                # an unknown kernel set is a ConfigError

    @property
    def profile(self) -> McuProfile:
        return self.mcu if isinstance(self.mcu, McuProfile) else get_profile(self.mcu)


#: Keyword -> (group, field) for the group fields given by name.
FIELDS = {**{f.name: ("out_of_core", f.name) for f in dataclasses.fields(OutOfCore) if f.name != "backing"},
          "max_arena": ("planning", "max_arena"), "preserve_all_tensors": ("planning", "preserve_all_tensors"),
          "mcu": ("cost", "mcu"), "cost_kernels": ("cost", "kernels"), "kernels": ("target", "kernels")}


class Settings:
    """One interpreter's settings, grouped (see the module docstring)."""

    __slots__ = ("cost", "kernels", "out_of_core", "planning")

    def __init__(self, out_of_core: OutOfCore | None, planning: Planning, cost: Cost, kernels: str | None):
        self.out_of_core, self.planning, self.cost, self.kernels = out_of_core, planning, cost, kernels


def split(backing: Any, planner: str | Planning, cost: str | McuProfile | Cost | None,
          kwargs: dict[str, Any]) -> Settings:
    """The groups of ``Interpreter(backing=, planner=, cost=, **kwargs)``: the group fields given by name are taken
    out of ``kwargs`` (what remains is LiteRT's constructor arguments; ``kernels=`` is the target's, returned
    beside them). A field given both ways is an error."""
    named: dict[str, dict[str, Any]] = {"out_of_core": {}, "planning": {}, "cost": {}, "target": {}}
    for key in [k for k in kwargs if k in FIELDS]:
        group, field = FIELDS[key]
        named[group][field] = kwargs.pop(key)
    ooc = _out_of_core(backing, named["out_of_core"])
    if isinstance(planner, Planning):
        planning = _with(planner, named["planning"], "planner")
    else:
        planning = Planning(planner, **named["planning"])
    if isinstance(cost, Cost):
        costs = _with(cost, named["cost"], "cost")
    else:
        costs = Cost(**({"mcu": cost} if cost is not None else {}), **named["cost"])
    return Settings(ooc, planning, costs, named["target"].get("kernels"))


def _out_of_core(backing: Any, fields: dict[str, Any]) -> OutOfCore | None:
    if isinstance(backing, OutOfCore):
        return _with(backing, fields, "backing")
    if backing is None:             # out-of-core fields without a backing have nothing to configure
        return None
    return OutOfCore(backing, **fields)


def _with(group: Any, fields: dict[str, Any], argument: str) -> Any:
    if fields:
        raise TypeError(f"{', '.join(sorted(fields))} given both by name and in {argument}={group!r}")
    return group
