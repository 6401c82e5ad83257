"""SD card wear and energy of out-of-core inference.

Wear (reads do not wear a card, writes do; shared/docs/out-of-core.md):

- ``bytes_per_inference``: physical SD bytes written by one invoke (the pager's ``sd_write_bytes``: whole sectors);
- ``gb_per_day`` at ``fps`` frames per second, running continuously (1 GB = 10^9 bytes);
- lifetime: the card takes ``capacity x pe_cycles`` bytes of NAND programming; the host's bytes cost
  ``write_amplification`` times as much, so it lasts ``capacity x pe_cycles / (write_amplification x bytes/day)``
  days, i.e. ``capacity x pe_cycles / write_amplification`` host bytes (TBW).

Defaults (E = estimate): a 32 GB card (the STM32F746 reference board's), 10 000 program/erase cycles per cell (the
literature figure), write amplification 4 (E, from the same study: 4 GB cards first failed after 6.5-12.5 TB
written, i.e. 1 625-3 125 full-card writes, which at 10 000 cycles is an effective amplification of 3.2-6.2).

Energy per inference from the profile's power figures (:meth:`McuProfile.energy_joules`): the CPU is active while it
computes (kernels, flash reads, software checksums) and idle (clocks on, DMA running) for the rest of the frame; the
card draws its read/write power while it transfers. The reference is the same frame on an ideal MCU with infinite
SRAM: CPU active for the compute-only time, no card.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..cost.mcu import McuProfile

GB = 1e9
DAY_S = 86_400.0
CAPACITY_GB = 32.0
PE_CYCLES = 10_000
WRITE_AMPLIFICATION = 4.0


@dataclass(frozen=True)
class Wear:
    bytes_per_inference: int
    fps: float
    gb_per_day: float
    capacity_gb: float
    pe_cycles: int
    write_amplification: float
    endurance_tb: float          # host bytes the card takes (TBW, 1 TB = 10^12 bytes)
    lifetime_days: float         # inf when nothing is written
    lifetime_years: float

    def as_dict(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and v == float("inf") else v) for k, v in asdict(self).items()}


def wear(bytes_per_inference: int, fps: float, *, capacity_gb: float = CAPACITY_GB, pe_cycles: int = PE_CYCLES,
         write_amplification: float = WRITE_AMPLIFICATION) -> Wear:
    """Daily writes and projected lifetime of the card at ``fps`` inferences per second (see the module docstring)."""
    if fps < 0 or capacity_gb <= 0 or pe_cycles <= 0 or write_amplification < 1:
        raise ValueError("fps >= 0, capacity > 0, P/E cycles > 0 and write amplification >= 1 are required")
    per_day = bytes_per_inference * fps * DAY_S
    endurance = capacity_gb * GB * pe_cycles / write_amplification
    days = endurance / per_day if per_day > 0 else float("inf")
    return Wear(int(bytes_per_inference), float(fps), per_day / GB, capacity_gb, int(pe_cycles),
                float(write_amplification), endurance / 1e12, days, days / 365.25)


@dataclass(frozen=True)
class Energy:
    latency_s: float
    cpu_active_s: float
    sd_read_s: float
    sd_write_s: float
    joules: float                # one inference out of core
    ideal_joules: float          # the same inference on an ideal MCU with infinite SRAM
    overhead: float              # joules / ideal - 1

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def energy(mcu: McuProfile, schedule: Any, compute_cycles: float) -> Energy:
    """Energy of the single-frame ``schedule`` against compute-only on an ideal MCU (see the module docstring)."""
    hz = mcu.clock_hz
    total = schedule.latency_cycles / hz
    cpu = schedule.busy["cpu"] / hz
    rd, wr = schedule.busy["sd_read"] / hz, schedule.busy["sd_write"] / hz
    j = mcu.energy_joules(total, min(cpu, total), rd, wr)
    ideal = mcu.energy_joules(compute_cycles / hz)
    return Energy(total, cpu, rd, wr, j, ideal, j / ideal - 1 if ideal else 0.0)
