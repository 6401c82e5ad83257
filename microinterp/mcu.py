"""Microcontroller profiles: the cycle coefficients the cost model and the out-of-core pager charge.

A :class:`McuProfile` is frozen data plus four pure helpers::

    compute_cycles(op_class, macs, elements) = fixed + cycles_per_mac * macs + cycles_per_element * elements
    sd_io_cycles(nbytes, commands, write)    = clock_hz * (commands * sd_command_latency_s + nbytes / bandwidth)
    flash_cycles(nbytes)                      = flash_read_cycles_per_byte * nbytes
    hash_cycles(nbytes, algorithm)            = per-byte cost of the algorithm, in hardware when the MCU has an
                                                engine for it (crc32), else in software

``macs`` are multiply-accumulates for conv / depthwise / fc and window operations (compares or adds) for pooling;
``elements`` are output elements (requantization, activation, copy). Op classes: conv, depthwise, fc, pool,
elementwise, softmax, other (:func:`op_class` maps TFLite operator names). Each op class has two kernel sets:
``optimized`` (CMSIS-NN, what TFLM links on Cortex-M) and ``reference`` (TFLM's portable C kernels).

Where the numbers come from (E = estimate, to be recalibrated; every coefficient sits in :data:`OP_CYCLES` and
:data:`_PROFILE_DATA` below, nowhere else):

- STM32F746NG (the SwapNN reference board, shared/docs/out-of-core.md): Cortex-M7 @ 216 MHz, 340 KB SRAM
  (320 KB main + 16 KB ITCM + 4 KB backup), 1 MB flash (datasheet). SDMMC in 4-bit mode at 48 MHz: a 24 MB/s bus
  ceiling, inside the 10-40 MB/s of out-of-core.md; E: 20 MB/s read, 10 MB/s write (card programming is slower),
  100 us per command. Flash at 216 MHz has 7 wait states behind the ART accelerator / 256-bit lines: E 0.25
  cycles/byte streamed. CRC unit (IEEE CRC-32, 32 bits per 4 AHB cycles): 1 cycle/byte; no HASH engine (that is
  the STM32F756). Compute: E = 0.75 x the Apollo3 (Cortex-M4) coefficients (dual-issue M7, same DSP instructions).
- Apollo3 Blue (SparkFun Edge, the TFLM paper's board): Cortex-M4F @ 96 MHz (burst mode), 384 KB SRAM, 1 MB flash
  (datasheet). No SDIO host: an SD card hangs off an IOM in SPI mode, SPI clock <= 48 MHz = 6 MB/s ceiling; E: 4 MB/s
  read, 2 MB/s write, 200 us per command. Flash behind a 16 KB cache: E 0.5 cycles/byte. The security block has a
  hardware CRC32 engine (AmbiqSuite ``am_hal_crc32``): E 1 cycle/byte.
- Compute coefficients for the Cortex-M4 are fitted so that person_detect.tflite (6.19 M conv MACs, 0.96 M
  depthwise MACs, 28 conv/depthwise ops) reproduces the TFLM paper's kernel totals on the Apollo3 within ~2 %:
  18 987 K cycles with reference kernels, 4 853 K with CMSIS-NN. The split between conv and depthwise, the
  per-element terms and every other op class are E (CMSIS-NN's SMLAD does 2 MACs per cycle at best; reference
  kernels are plain C, ~2-4 cycles per MAC).
- Software hashing (E, typical C implementations on a 32-bit core): crc32 table-driven ~6 cycles/byte (M4) /
  ~4 (M7); blake2b (64-bit arithmetic emulated) ~40 / ~30; xxh3-64 ~4 / ~3.

Calibration against the TFLM paper's figures belongs to a later issue; replace the numbers in the tables, keep
the shape.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .errors import MicroInterpError

OP_CLASS_NAMES = ("conv", "depthwise", "fc", "pool", "elementwise", "softmax", "other")
KERNEL_SETS = ("optimized", "reference")

#: TFLite builtin operator name -> op class; anything not listed is "other".
OP_CLASS_OF: Mapping[str, str] = MappingProxyType({
    "CONV_2D": "conv", "TRANSPOSE_CONV": "conv", "CONV_3D": "conv",
    "DEPTHWISE_CONV_2D": "depthwise",
    "FULLY_CONNECTED": "fc", "BATCH_MATMUL": "fc",
    "AVERAGE_POOL_2D": "pool", "MAX_POOL_2D": "pool", "L2_POOL_2D": "pool", "MEAN": "pool", "SUM": "pool",
    "ADD": "elementwise", "SUB": "elementwise", "MUL": "elementwise", "SQUARED_DIFFERENCE": "elementwise",
    "RELU": "elementwise", "RELU6": "elementwise", "LEAKY_RELU": "elementwise", "HARD_SWISH": "elementwise",
    "LOGISTIC": "elementwise", "TANH": "elementwise", "PRELU": "elementwise", "MAXIMUM": "elementwise",
    "MINIMUM": "elementwise",
    "SOFTMAX": "softmax", "LOG_SOFTMAX": "softmax",
})


@dataclass(frozen=True)
class OpCycles:
    """Cycle coefficients of one op class: per MAC (or window op), per output element, and fixed per op."""

    cycles_per_mac: float
    cycles_per_element: float
    fixed_cycles: float


def _costs(table: dict[str, tuple[float, float, float]]) -> Mapping[str, OpCycles]:
    assert set(table) == set(OP_CLASS_NAMES), sorted(table)
    return MappingProxyType({k: OpCycles(*v) for k, v in table.items()})


#: THE table of compute coefficients: profile -> kernel set -> op class -> (cycles/MAC, cycles/element, fixed).
OP_CYCLES: Mapping[str, Mapping[str, Mapping[str, OpCycles]]] = MappingProxyType({
    "apollo3": MappingProxyType({
        "optimized": _costs({"conv": (0.52, 4, 1500), "depthwise": (0.6, 4, 1500), "fc": (0.5, 4, 1000),
                             "pool": (1.0, 3, 1000), "elementwise": (0, 6, 500), "softmax": (0, 60, 1000),
                             "other": (0, 1, 300)}),
        "reference": _costs({"conv": (2.2, 8, 2000), "depthwise": (3.6, 8, 2000), "fc": (2.0, 8, 1000),
                             "pool": (3.0, 6, 1000), "elementwise": (0, 20, 500), "softmax": (0, 150, 1000),
                             "other": (0, 2, 300)}),
    }),
    "stm32f746": MappingProxyType({
        "optimized": _costs({"conv": (0.39, 3, 1125), "depthwise": (0.45, 3, 1125), "fc": (0.375, 3, 750),
                             "pool": (0.75, 2.25, 750), "elementwise": (0, 4.5, 375), "softmax": (0, 45, 750),
                             "other": (0, 0.75, 225)}),
        "reference": _costs({"conv": (1.65, 6, 1500), "depthwise": (2.7, 6, 1500), "fc": (1.5, 6, 750),
                             "pool": (2.25, 4.5, 750), "elementwise": (0, 15, 375), "softmax": (0, 112, 750),
                             "other": (0, 1.5, 225)}),
    }),
})


@dataclass(frozen=True)
class McuProfile:
    """One microcontroller: clock, memories, compute coefficients, SD card, flash and hashing costs."""

    name: str
    core: str
    clock_hz: float
    sram_bytes: int
    flash_bytes: int
    op_cycles: Mapping[str, Mapping[str, OpCycles]]     # kernel set -> op class -> coefficients
    sd_read_bytes_per_s: float
    sd_write_bytes_per_s: float
    sd_command_latency_s: float
    flash_read_cycles_per_byte: float
    hash_cycles_per_byte: Mapping[str, float]           # software, per checksum algorithm
    hash_accel_cycles_per_byte: float                   # with the hash engine (algorithms in hash_accel_algorithms)
    has_hash_accelerator: bool
    hash_accel_algorithms: tuple[str, ...] = ()

    def compute_cycles(self, op_class: str, macs: int = 0, elements: int = 0, *,
                       kernels: str = "optimized") -> float:
        """Cycles of one op (or one tile of it): fixed + per-MAC + per-output-element terms."""
        if kernels not in self.op_cycles:
            raise MicroInterpError(f"unknown kernel set {kernels!r}; known: {', '.join(self.op_cycles)}")
        costs = self.op_cycles[kernels]
        if op_class not in costs:
            raise MicroInterpError(f"unknown op class {op_class!r}; known: {', '.join(costs)}")
        c = costs[op_class]
        return c.fixed_cycles + c.cycles_per_mac * macs + c.cycles_per_element * elements

    def sd_io_cycles(self, nbytes: int, commands: int = 1, write: bool = False) -> float:
        """CPU-clock cycles an SD transfer of ``nbytes`` in ``commands`` commands takes (latency + bandwidth)."""
        bandwidth = self.sd_write_bytes_per_s if write else self.sd_read_bytes_per_s
        return self.clock_hz * (commands * self.sd_command_latency_s + nbytes / bandwidth)

    def flash_cycles(self, nbytes: int) -> float:
        """Cycles to stream ``nbytes`` from on-chip flash."""
        return self.flash_read_cycles_per_byte * nbytes

    def hash_cycles(self, nbytes: int, algorithm: str = "crc32", *, accelerated: bool | None = None) -> float:
        """Cycles to checksum ``nbytes``; uses the hash engine when present and it supports ``algorithm``
        (``accelerated=False`` forces software, ``True`` requires the engine)."""
        engine = self.has_hash_accelerator and algorithm in self.hash_accel_algorithms
        if accelerated and not engine:
            raise MicroInterpError(f"{self.name} has no hash engine for {algorithm!r}")
        if engine and accelerated is not False:
            return self.hash_accel_cycles_per_byte * nbytes
        if algorithm not in self.hash_cycles_per_byte:
            raise MicroInterpError(f"no software cost for checksum {algorithm!r}; known: "
                                   f"{', '.join(self.hash_cycles_per_byte)}")
        return self.hash_cycles_per_byte[algorithm] * nbytes

    def seconds(self, cycles: float) -> float:
        return cycles / self.clock_hz

    def replace(self, **changes: object) -> McuProfile:
        """A copy with some fields changed (for calibration or what-if studies)."""
        return dataclasses.replace(self, **changes)


def _hash_costs(crc32: float, blake2b: float, xxh3: float) -> Mapping[str, float]:
    return MappingProxyType({"crc32": crc32, "blake2b": blake2b, "blake2b-64": blake2b, "xxh3": xxh3})


#: Everything but the compute coefficients, per profile (sources and estimates: module docstring).
_PROFILE_DATA = {
    "stm32f746": {"core": "Cortex-M7", "clock_hz": 216e6, "sram_bytes": 340 * 1024, "flash_bytes": 1024 * 1024,
                  "sd_read_bytes_per_s": 20e6, "sd_write_bytes_per_s": 10e6, "sd_command_latency_s": 100e-6,
                  "flash_read_cycles_per_byte": 0.25, "hash_cycles_per_byte": _hash_costs(4, 30, 3),
                  "hash_accel_cycles_per_byte": 1.0, "has_hash_accelerator": True,
                  "hash_accel_algorithms": ("crc32",)},
    "apollo3": {"core": "Cortex-M4F", "clock_hz": 96e6, "sram_bytes": 384 * 1024, "flash_bytes": 1024 * 1024,
                "sd_read_bytes_per_s": 4e6, "sd_write_bytes_per_s": 2e6, "sd_command_latency_s": 200e-6,
                "flash_read_cycles_per_byte": 0.5, "hash_cycles_per_byte": _hash_costs(6, 40, 4),
                "hash_accel_cycles_per_byte": 1.0, "has_hash_accelerator": True,
                "hash_accel_algorithms": ("crc32",)},
}

MCU_PROFILES: Mapping[str, McuProfile] = MappingProxyType({
    name: McuProfile(name=name, op_cycles=OP_CYCLES[name], **data) for name, data in _PROFILE_DATA.items()
})

#: Other names accepted by get_profile (lower case).
ALIASES: Mapping[str, str] = MappingProxyType({
    "stm32f746ng": "stm32f746", "stm32f7": "stm32f746", "f746": "stm32f746", "stm32f746-disco": "stm32f746",
    "apollo3-blue": "apollo3", "sparkfun-edge": "apollo3",
})


def get_profile(name: str) -> McuProfile:
    """The profile called ``name`` (case-insensitive, aliases accepted); a clear error lists the known names."""
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in MCU_PROFILES:
        known = ", ".join(sorted(MCU_PROFILES)) + " (aliases: " + ", ".join(sorted(ALIASES)) + ")"
        raise MicroInterpError(f"unknown MCU profile {name!r}; known: {known}")
    return MCU_PROFILES[key]


def op_class(op_name: str) -> str:
    """Op class of a TFLite builtin operator name (e.g. ``CONV_2D`` -> ``conv``); unknown names -> ``other``."""
    return OP_CLASS_OF.get(op_name, "other")
