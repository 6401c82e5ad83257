"""Boards from what a user knows about theirs: a core, a clock and a few memory facts.

``"cortex-m33@200MHz"``, ``"cortex-m7@480MHz,flash_ws=4"`` or ``"cortex-m7@480MHz,sram=1M,flash=2M,memory_factor=1.1"`` is a
:class:`~microinterp.cost.mcu.McuProfile` like the named ones: the cost model needs only the core (its instruction
counts and cycles per instruction) and the clock; the rest is the memory system. What the spec leaves out is assumed,
and the profile says so (its ``assumed``, printed with the figures):

* ``sram``, ``flash``: sizes (``512K``, ``2M``); default the core's typical part (:data:`TYPICAL_MEMORY`);
* ``memory_factor``: cycles per zero-wait-state cycle (flash wait states behind a cache), >= 1; default 1.0;
* or the facts it is estimated from: ``flash_ws`` (the flash's wait states at that clock) and ``cache`` (what sits
  in front of the flash: ``l1``, instruction and data caches, as on Cortex-M7/M55/M85 parts; ``icache``, an
  instruction cache or flash accelerator with the weights streaming past it, as ST's ART or the U5's ICACHE; default
  by core): ``memory_factor = 1 + flash_ws x`` :data:`STALL_PER_WAIT_STATE` ``[cache]``, the per-wait-state stall of
  the named boards' own estimates (docs/cost-model.md).

SD, checksum, AES and power figures are those of the named boards with the same core family (estimates, as theirs:
docs/cost-model.md). Every bad spec -- an unknown core, a clock without a unit, an unknown fact -- raises
:class:`~microinterp.errors.ConfigError` listing what is accepted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ..errors import ConfigError
from ..sizes import parse_size

#: Core names a spec may use -> the instruction model's core (an FPU suffix and the "cortex-" prefix are optional).
CORE_NAMES: Mapping[str, str] = MappingProxyType({
    **{f"cortex-m{n}": f"cortex-m{n}" for n in (3, 4, 7, 33, 55, 85)},
    **{f"m{n}": f"cortex-m{n}" for n in (3, 4, 7, 33, 55, 85)},
})

#: (SRAM, flash) assumed for a core when the spec does not say: a common part of that core.
TYPICAL_MEMORY: Mapping[str, tuple[int, int]] = MappingProxyType({
    "cortex-m3": (64 << 10, 512 << 10), "cortex-m4": (256 << 10, 1 << 20), "cortex-m7": (512 << 10, 2 << 20),
    "cortex-m33": (256 << 10, 1 << 20), "cortex-m55": (1 << 20, 2 << 20), "cortex-m85": (1 << 20, 2 << 20),
})

#: The board a firmware build for a core is priced on when the user names a core but no board (``deploy --target
#: CORE``): the named profile of that core where there is one, else a generic board at a typical clock.
DEFAULT_BOARD_OF_CORE: Mapping[str, str] = MappingProxyType({
    "cortex-m3": "cortex-m3@72MHz", "cortex-m4": "stm32l4r5", "cortex-m7": "stm32f746", "cortex-m33": "stm32u575",
    "cortex-m55": "cortex-m55@400MHz", "cortex-m85": "cortex-m85@480MHz",
})

FACTS = ("sram", "flash", "memory_factor", "flash_ws", "cache")

#: Cycles lost per cycle and per flash wait state behind each kind of cache: the named boards' estimates divided by
#: their wait states (the STM32F746's L1 caches at 7 wait states, 1.05; the STM32L4R5's ART at 5, 1.1).
STALL_PER_WAIT_STATE: Mapping[str, float] = MappingProxyType({"l1": 0.05 / 7, "icache": 0.1 / 5})

#: The cache assumed in front of the flash when a spec gives wait states but no ``cache``.
TYPICAL_CACHE: Mapping[str, str] = MappingProxyType({
    "cortex-m3": "icache", "cortex-m4": "icache", "cortex-m33": "icache",
    "cortex-m7": "l1", "cortex-m55": "l1", "cortex-m85": "l1",
})
#: Wait states a spec may give (flash at any clock of these cores needs fewer).
MAX_WAIT_STATES = 15
_CLOCK = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(ghz|mhz|khz|hz)\s*$", re.IGNORECASE)
_UNIT = {"ghz": 1e9, "mhz": 1e6, "khz": 1e3, "hz": 1.0}


def is_spec(name: str) -> bool:
    """Whether ``name`` is a generic board spec (it has an ``@``) rather than a profile name."""
    return isinstance(name, str) and "@" in name


def split_boards(text: str) -> list[str]:
    """A comma-separated list of boards, where a spec's own facts stay with it: ``"stm32f746,cortex-m7@480MHz,
    flash_ws=4,apollo3"`` -> ``["stm32f746", "cortex-m7@480MHz,flash_ws=4", "apollo3"]`` (a ``key=value`` item
    belongs to the spec before it)."""
    boards: list[str] = []
    for item in (t.strip() for t in text.split(",")):
        if "=" in item:
            if not boards or not is_spec(boards[-1]):
                raise ConfigError(f"{item!r} in {text!r} is a board fact with no CORE@CLOCK before it "
                                  "(e.g. cortex-m7@480MHz,flash_ws=4)")
            boards[-1] += "," + item
        elif item:
            boards.append(item)
    if not boards:
        raise ConfigError(f"no board in {text!r}: give a profile name or CORE@CLOCK")
    return boards


def parse_clock(text: str) -> float:
    """``200MHz``, ``1.2GHz``, ``32768Hz`` -> Hz; a number without a unit is refused (MHz or Hz? say which)."""
    m = _CLOCK.match(text)
    if not m:
        raise ConfigError(f"clock {text!r} needs a unit: write e.g. 200MHz, 1.2GHz or 32768Hz")
    hz = float(m[1]) * _UNIT[m[2].lower()]
    if hz <= 0:
        raise ConfigError(f"clock {text!r} must be > 0")
    return hz


def parse_spec(spec: str) -> dict[str, Any]:
    """The profile fields a spec gives: ``name``, ``core_key``, ``core``, ``clock_hz``, ``sram_bytes``,
    ``flash_bytes``, ``memory_factor`` (given, estimated from ``flash_ws`` and ``cache``, or 1.0), ``assumed``."""
    head, *facts = [p.strip() for p in spec.split(",")]
    core_text, _, clock_text = head.partition("@")
    core = CORE_NAMES.get(core_text.strip().lower().removesuffix("f"))
    if core is None:
        raise ConfigError(f"unknown core {core_text.strip()!r} in board {spec!r}; known cores: "
                          f"{', '.join(c for c in CORE_NAMES if c.startswith('cortex'))} (e.g. cortex-m33@200MHz)")
    sram, flash = TYPICAL_MEMORY[core]
    out: dict[str, Any] = {"core_key": core, "core": core.replace("cortex", "Cortex").replace("-m", "-M"),
                           "clock_hz": parse_clock(clock_text), "sram_bytes": sram, "flash_bytes": flash,
                           "memory_factor": 1.0}
    given = set()
    flash_ws, cache = 0, None
    for fact in facts:
        key, eq, value = fact.partition("=")
        key = key.strip().lower()
        if not eq or key not in FACTS:
            raise ConfigError(f"unknown board fact {fact!r} in {spec!r}; accepted: "
                              + ", ".join(f"{k}=VALUE" for k in FACTS) + " (e.g. cortex-m7@480MHz,sram=1M,flash=2M,flash_ws=4)")
        given.add(key)
        value = value.strip()
        if key in ("sram", "flash"):
            n = parse_size(value, key)
            if n <= 0:
                raise ConfigError(f"{key} must be > 0 in {spec!r}")
            out[f"{key}_bytes"] = n
        elif key == "flash_ws":
            if not value.isdigit() or int(value) > MAX_WAIT_STATES:
                raise ConfigError(f"flash_ws {value!r} in {spec!r} must be a whole number of wait states, "
                                  f"0 to {MAX_WAIT_STATES}")
            flash_ws = int(value)
        elif key == "cache":
            if value.lower() not in STALL_PER_WAIT_STATE:
                raise ConfigError(f"cache {value!r} in {spec!r}: give one of "
                                  + ", ".join(STALL_PER_WAIT_STATE) + " (l1: instruction and data caches; icache: an "
                                  "instruction cache or flash accelerator); for flash without either, give "
                                  "memory_factor= instead")
            cache = value.lower()
        else:
            try:
                out["memory_factor"] = float(value)
            except ValueError:
                raise ConfigError(f"memory_factor {value!r} in {spec!r} is not a number (>= 1)") from None
    if "memory_factor" in given and given & {"flash_ws", "cache"}:
        raise ConfigError(f"{spec!r} gives memory_factor and flash_ws/cache: give the factor or the facts it is "
                          "estimated from, not both")
    assumed_cache = cache is None and "flash_ws" in given
    if "flash_ws" in given:
        cache = cache or TYPICAL_CACHE[core]
        out["memory_factor"] = 1.0 + flash_ws * STALL_PER_WAIT_STATE[cache]
    out["name"] = f"{core}@{out['clock_hz'] / 1e6:g}MHz" + "".join(f",{f.replace(' ', '')}" for f in facts)
    missing = [k for k in ("sram", "flash") if k not in given]
    assumed = [f"{_kib(out[k + '_bytes'])} {k.upper() if k == 'sram' else k}" for k in missing]
    additions = [k + "=SIZE" for k in missing]
    if assumed_cache:
        assumed.append(f"{'L1 caches' if cache == 'l1' else 'an instruction cache'} in front of the flash")
        additions.append("cache=l1|icache")
    listed = ", ".join(assumed[:-1]) + " and " + assumed[-1] if len(assumed) > 1 else "".join(assumed)
    out["assumed"] = (f"generic board: {listed} assumed (add "
                      f"{','.join(additions)} to the spec)") if assumed else "generic board"
    return out


def _kib(n: int) -> str:
    return f"{n >> 20} MB" if n % (1 << 20) == 0 else f"{n >> 10} KB"


def board_data(spec: str, family: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Every profile field of a generic board: the spec's fields over ``family[core]`` (the SD, checksum, AES and
    power figures of the named boards of that core family)."""
    fields = parse_spec(spec)
    return {**family[fields["core_key"]], **fields}
