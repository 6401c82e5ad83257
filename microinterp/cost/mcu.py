"""Microcontroller profiles: layer 2 of the cost model (a board), and the SD, flash, hash and power figures.

Layer 1 (:mod:`microinterp.cost.instructions`) says how many instructions TFLM's Cortex-M build executes for an op,
measured on the device oracle. A :class:`McuProfile` turns them into cycles and seconds::

    op_cycles(op)                 = instructions(op, core, kernels) x CORE_CPI[core] x memory_factor
                                    [x calibration factor of the board's published build, with calibrated=True]
    sd_io_cycles(nbytes, commands, write) = clock_hz * (commands * sd_command_latency_s + nbytes / bandwidth)
    flash_cycles(nbytes)          = flash_read_cycles_per_byte * nbytes
    hash_cycles(nbytes, algorithm) = per-byte cost of the algorithm, in hardware when the MCU has an engine for it
    energy_joules(total_s, compute_s, ...) = active/idle CPU power over the run + SD read/write power

The default figure models **today's build** (:data:`TODAY`, the build the instructions were counted on) on the
board's core, clock and memory system, so two boards with the same core differ only by clock and memory. A board
with published TFLM figures also has a **calibrated** figure (``calibrated=True``): today's x the factor that
takes today's build to the published build it was measured with (:data:`CALIBRATIONS`, fitted on
:mod:`microinterp.published`). Reports print which build a figure models. Kernel sets: ``optimized`` (alias
``cmsis-nn``) and ``reference``; a whole inference also pays ``interpreter_cycles_per_op`` per op (TFLM's own
work around the kernels). Sources and estimates (marked E) are in ``docs/cost-model.md``. Bad names and values
raise :class:`~microinterp.errors.ConfigError`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..errors import ConfigError
from ..kernels.contract import OP_CLASSES
from ..resolver import declaration_of

OP_CLASS_NAMES = OP_CLASSES
KERNEL_SETS = ("optimized", "reference")
#: Other names for the kernel sets (lower case).
KERNEL_ALIASES: Mapping[str, str] = MappingProxyType({
    "cmsis-nn": "optimized", "cmsis_nn": "optimized", "cmsisnn": "optimized", "cmsis": "optimized",
    "ref": "reference",
})


@dataclass(frozen=True)
class Calibration:
    """A profile's published software build: its cycles per cycle of today's build on the same board (``factor``),
    fitted on the published figures of :mod:`microinterp.published` measured with that build on that board."""

    factor: float
    build: str
    source: str
    #: op class -> its own factor, where the published build's kernels of that class differ from the rest
    class_factors: Mapping[str, float] = dataclasses.field(default_factory=dict)

    def of(self, op_class: str) -> float:
        return self.class_factors.get(op_class, self.factor)


#: Today's build: the one the instruction model was measured on (the device oracle's; microinterp.targets.BUILD).
TODAY = "TFLM 90b983c + CMSIS-NN 4ab83cc, arm-none-eabi-gcc 12.2 -O2"

#: Cycles per instruction of each core running TFLM's kernels from zero-wait-state memory (E: docs/cost-model.md
#: gives the reasoning; no figure of today's build on hardware has been published).
CORE_CPI = MappingProxyType({"cortex-m3": 1.3, "cortex-m4": 1.25, "cortex-m7": 0.85, "cortex-m33": 1.25,
                             "cortex-m55": 1.2, "cortex-m85": 1.0})

#: Cores the instruction model has no build of, and the core whose build they run: the Cortex-M85 executes the
#: M55's instructions (Armv8.1-M with Helium both; CMSIS-NN dispatches on __ARM_FEATURE_MVE only).
INSTRUCTION_CORE = MappingProxyType({"cortex-m85": "cortex-m55"})

_PAPER = "TFLM paper build (2020), SparkFun Edge SDK"
_V231 = "TFLM 2.3.1 + CMSIS-NN (TAGS=cmsis-nn), mbed-os, gcc-arm-none-eabi 6-2017-q2"
_V25 = "TFLM 2.5 + CMSIS-NN"


def kernel_set(name: str) -> str:
    """The canonical kernel-set name (``optimized`` or ``reference``) for ``name`` or one of its aliases."""
    key = str(name).strip().lower()
    key = KERNEL_ALIASES.get(key, key)
    if key not in KERNEL_SETS:
        raise ConfigError(f"unknown kernel set {name!r}; known: {', '.join(KERNEL_SETS + tuple(KERNEL_ALIASES))}")
    return key


@dataclass(frozen=True)
class McuProfile:
    """One microcontroller: clock, memories, compute coefficients, SD card, flash, hashing and power figures."""

    name: str
    core: str
    clock_hz: float
    sram_bytes: int
    flash_bytes: int
    core_key: str                                       # the instruction model's core (cortex-m4, ...)
    memory_factor: float                                # cycles per zero-wait cycle: flash wait states, caches
    sd_read_bytes_per_s: float
    sd_write_bytes_per_s: float
    sd_command_latency_s: float
    flash_read_cycles_per_byte: float
    hash_cycles_per_byte: Mapping[str, float]           # software, per checksum algorithm
    hash_accel_cycles_per_byte: float                   # with the hash engine (algorithms in hash_accel_algorithms)
    has_hash_accelerator: bool
    hash_accel_algorithms: tuple[str, ...] = ()
    interpreter_cycles_per_op: float = 0.0              # TFLM's own work per op (outside the kernels)
    aes_gcm_cycles_per_byte: float = 0.0                # encrypted SD images: software AES-256-GCM (seal or open)
    aes_accel_cycles_per_byte: float = 0.0              # ... with the part's AES engine (has_aes_accelerator)
    has_aes_accelerator: bool = False
    power_active_mw: float = 0.0                        # CPU computing
    power_idle_mw: float = 0.0                          # CPU waiting (sleep with clocks on, DMA running)
    power_sd_read_mw: float = 0.0                       # SD card (+ its bus) while reading, on top of the CPU
    power_sd_write_mw: float = 0.0                      # SD card (+ its bus) while writing, on top of the CPU
    calibration: Mapping[str, Calibration] = dataclasses.field(default_factory=dict)  # kernel set -> published build
    assumed: str = ""                                   # what a generic board's figures assume (boards.py)
    accelerators: tuple[str, ...] = ()                  # accelerator ops the part runs (tflm_ops.ACCELERATOR_OPS)

    def __post_init__(self) -> None:
        positive = ("clock_hz", "sram_bytes", "flash_bytes", "sd_read_bytes_per_s", "sd_write_bytes_per_s")
        non_negative = ("sd_command_latency_s", "flash_read_cycles_per_byte", "hash_accel_cycles_per_byte",
                        "aes_gcm_cycles_per_byte", "aes_accel_cycles_per_byte",
                        "interpreter_cycles_per_op", "power_active_mw", "power_idle_mw", "power_sd_read_mw",
                        "power_sd_write_mw")
        for f in positive + non_negative:
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 \
                    or (f in positive and v == 0):
                rule = "> 0" if f in positive else ">= 0"
                raise ConfigError(f"MCU profile {self.name!r}: {f} must be a finite number {rule}, got {v!r}")
        if self.core_key not in CORE_CPI:
            raise ConfigError(f"MCU profile {self.name!r}: core_key must be one of {', '.join(CORE_CPI)}, "
                              f"got {self.core_key!r}")
        if not (isinstance(self.memory_factor, (int, float)) and math.isfinite(self.memory_factor)
                and self.memory_factor >= 1):
            raise ConfigError(f"MCU profile {self.name!r}: memory_factor must be a finite number >= 1, "
                              f"got {self.memory_factor!r}")
        for ks, cal in self.calibration.items():
            if ks not in KERNEL_SETS or not (math.isfinite(cal.factor) and cal.factor > 0):
                raise ConfigError(f"MCU profile {self.name!r}: calibration[{ks!r}] needs a known kernel set and a "
                                  f"factor > 0, got {cal}")
        for alg, v in self.hash_cycles_per_byte.items():
            if not math.isfinite(v) or v < 0:
                raise ConfigError(f"MCU profile {self.name!r}: hash_cycles_per_byte[{alg!r}] must be >= 0, got {v}")

    @property
    def cpi(self) -> float:
        """Cycles per instruction on this board: the core's CPI x the memory system's factor."""
        return CORE_CPI[self.core_key] * self.memory_factor

    def instruction_build(self, kernels: str = "optimized") -> str:
        """The instruction model's build for this core and kernel set (``cortex-m4.cmsis-nn``, ...). The reference
        kernels are plain C: a core whose reference build the oracle has not counted takes the Cortex-M4's."""
        from .instructions import coefficients

        core = INSTRUCTION_CORE.get(self.core_key, self.core_key)
        if kernel_set(kernels) == "optimized":
            return f"{core}.cmsis-nn"
        build = f"{core}.reference"
        return build if build in coefficients() else "cortex-m4.reference"

    def build_factor(self, kernels: str = "optimized", calibrated: bool = False, op_class: str = "conv") -> float:
        """1 for today's build; with ``calibrated``, the published build's factor (of ``op_class``) when the board
        has one."""
        cal = self.calibration.get(kernel_set(kernels)) if calibrated else None
        return cal.of(op_class) if cal else 1.0

    def build_name(self, kernels: str = "optimized", calibrated: bool = False) -> str:
        """Which software build a figure models."""
        cal = self.calibration.get(kernel_set(kernels)) if calibrated else None
        return cal.build if cal else TODAY

    @property
    def spec(self) -> str:
        """This board as a generic spec (:mod:`.boards`): ``get_profile(p.spec)`` prices the same cycles and time;
        a named profile adds its SD, power and engine figures (docs/cost-model.md)."""
        def size(n: int) -> str:
            return f"{n >> 20}M" if n % (1 << 20) == 0 else f"{n >> 10}K" if n % 1024 == 0 else str(n)
        return (f"{self.core_key}@{self.clock_hz / 1e6:g}MHz,sram={size(self.sram_bytes)},"
                f"flash={size(self.flash_bytes)},memory_factor={self.memory_factor:g}")

    def figure_note(self, kernels: str = "optimized") -> str:
        """Which board and software build a cycle figure models: printed next to every figure."""
        ks = "CMSIS-NN" if kernel_set(kernels) == "optimized" else "reference"
        assumed = f"; {self.assumed.split(':')[0]}" if self.assumed else ""
        return (f"{self.name} ({self.core_key} @ {self.clock_hz / 1e6:g} MHz, {self.cpi:.3g} cycles/instruction"
                f"{assumed}), {ks} kernels of today's build ({TODAY})")

    def calibration_note(self, kernels: str = "optimized") -> str | None:
        """The board's published build its calibrated figure models, or None when it has none."""
        cal = self.calibration.get(kernel_set(kernels))
        if cal is None:
            return None
        per_class = "".join(f", {k} x{v:.3g}" for k, v in cal.class_factors.items())
        return f"{cal.build}: x{cal.factor:.3g} of today's build{per_class}, fitted on {cal.source}"

    def op_cycles(self, op: Any, tensors: Sequence[Any], kernels: str = "optimized", *,
                  calibrated: bool = False, values: Any = None) -> float:
        """Kernel cycles of one op: its instructions (:func:`microinterp.cost.instructions.op_instructions` for
        this core and kernel set; ``values``: its first input, for data-dependent kernels) x :attr:`cpi`, x the
        published build's factor with ``calibrated``."""
        from .instructions import op_instructions

        n = op_instructions(op, tensors, self.instruction_build(kernels), values)
        return n * self.cpi * self.build_factor(kernels, calibrated, op_class(op.key))

    def op_fixed_cycles(self, op: Any, tensors: Sequence[Any], kernels: str = "optimized", *,
                        calibrated: bool = False) -> float:
        """The part of :meth:`op_cycles` that does not grow with the op's work (its fixed instructions): what a
        second kernel call over part of the op (a tile, a phase) pays again."""
        from .instructions import op_fixed_instructions

        n = op_fixed_instructions(op, tensors, self.instruction_build(kernels))
        return n * self.cpi * self.build_factor(kernels, calibrated, op_class(op.key))

    def cycles_per_mac(self, kernels: str = "optimized", op_class: str = "conv", *,
                       calibrated: bool = False) -> float:
        """Cycles per MAC of a reference layer of the class (:data:`microinterp.cost.instructions.REFERENCE_LAYERS`:
        a 3x3 convolution 32 -> 32 channels on 24x24, a 3x3 depthwise on 32 channels, a 256 -> 64 FC)."""
        from .instructions import reference_instructions_per_mac

        if op_class not in ("conv", "depthwise", "fc"):
            raise ConfigError(f"op class {op_class!r} has no per-MAC cost; S_cpu is defined for MAC op classes")
        return (reference_instructions_per_mac(self.instruction_build(kernels), op_class) * self.cpi
                * self.build_factor(kernels, calibrated, op_class))

    def ops_per_second(self, kernels: str = "optimized", op_class: str = "conv") -> float:
        """Effective compute speed S_cpu (MACs per second) of an op class: ``clock_hz / cycles_per_mac``."""
        return self.clock_hz / self.cycles_per_mac(kernels, op_class)

    def move_cycles(self, nbytes: int) -> float:
        """Cycles to move ``nbytes`` within SRAM (a memmove, as TFLM's RESHAPE copy)."""
        from .instructions import move_instructions_per_byte

        return move_instructions_per_byte(self.instruction_build("optimized")) * self.cpi * nbytes

    @property
    def io_bytes_per_second(self) -> float:
        """Effective IO speed S_io for arithmetic intensity: the SD card's read bandwidth."""
        return self.sd_read_bytes_per_s

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
            raise ConfigError(f"{self.name} has no hash engine for {algorithm!r}")
        if engine and accelerated is not False:
            return self.hash_accel_cycles_per_byte * nbytes
        if algorithm not in self.hash_cycles_per_byte:
            raise ConfigError(f"no software cost for checksum {algorithm!r}; known: "
                              f"{', '.join(self.hash_cycles_per_byte)}")
        return self.hash_cycles_per_byte[algorithm] * nbytes

    def crypto_cycles(self, nbytes: int, *, accelerated: bool | None = None) -> float:
        """Cycles to seal or open ``nbytes`` of records with AES-256-GCM (encrypted SD images): the AES engine
        when the part has one (``accelerated=False`` forces software, ``True`` requires the engine)."""
        if accelerated and not self.has_aes_accelerator:
            raise ConfigError(f"{self.name} has no AES engine")
        if self.has_aes_accelerator and accelerated is not False:
            return self.aes_accel_cycles_per_byte * nbytes
        return self.aes_gcm_cycles_per_byte * nbytes

    def energy_joules(self, total_s: float, compute_s: float | None = None, sd_read_s: float = 0.0,
                      sd_write_s: float = 0.0) -> float:
        """Energy of a run lasting ``total_s`` seconds: the CPU is active for ``compute_s`` (default: all of it) and
        idle the rest; the SD card adds its read/write power while it transfers (transfers may overlap compute)."""
        compute_s = total_s if compute_s is None else compute_s
        if min(total_s, compute_s, sd_read_s, sd_write_s) < 0 or compute_s > total_s * (1 + 1e-12):
            raise ConfigError(f"times must be >= 0 with compute_s <= total_s, got total {total_s}, compute "
                              f"{compute_s}, read {sd_read_s}, write {sd_write_s}")
        mw = (self.power_active_mw * compute_s + self.power_idle_mw * max(0.0, total_s - compute_s)
              + self.power_sd_read_mw * sd_read_s + self.power_sd_write_mw * sd_write_s)
        return mw * 1e-3

    def seconds(self, cycles: float) -> float:
        return cycles / self.clock_hz

    def replace(self, **changes: object) -> McuProfile:
        """A copy with some fields changed (for calibration or what-if studies); values are validated."""
        try:
            return dataclasses.replace(self, **changes)
        except TypeError as e:
            raise ConfigError(f"MCU profile {self.name!r}: {e}") from None


def _hash_costs(crc32: float, blake2b: float, xxh3: float) -> Mapping[str, float]:
    return MappingProxyType({"crc32": crc32, "blake2b": blake2b, "blake2b-64": blake2b, "xxh3": xxh3})


#: What a profile takes from its CPU core family (M33 parts: the M4F figures, by analogy): software checksums and
#: AES-GCM.
_M4_CORE = {"hash_cycles_per_byte": _hash_costs(6, 40, 4), "aes_gcm_cycles_per_byte": 90.0}
_M7_CORE = {"hash_cycles_per_byte": _hash_costs(4, 30, 3), "aes_gcm_cycles_per_byte": 70.0}
#: TFLM's own instructions per op around the kernels (MicroInterpreter::Invoke's loop, the node's dispatch): the
#: device oracle's invoke minus its nodes, over its nodes -- 113 on the 84-op mobilenet_v2 on every core (121 median
#: over the 22 models; the few-op models add the invoke's fixed cost).
INTERPRETER_INSTRUCTIONS_PER_OP = 113
#: A CRC-32 engine at 1 cycle/byte (the STM32 CRC unit, the Apollo3's security block), and no AES engine.
_CRC32_ENGINE = {"hash_accel_cycles_per_byte": 1.0, "has_hash_accelerator": True, "hash_accel_algorithms": ("crc32",)}
_NO_AES_ENGINE = {"aes_accel_cycles_per_byte": 0.0, "has_aes_accelerator": False}

#: Everything but the compute coefficients, per profile (sources and estimates: docs/cost-model.md).
_PROFILE_DATA = {
    "stm32f746": {"core": "Cortex-M7", "core_key": "cortex-m7", "memory_factor": 1.05,
                  "clock_hz": 216e6, "sram_bytes": 340 * 1024, "flash_bytes": 1024 * 1024,
                  "sd_read_bytes_per_s": 20e6, "sd_write_bytes_per_s": 10e6, "sd_command_latency_s": 100e-6,
                  "flash_read_cycles_per_byte": 0.25, **_M7_CORE, **_CRC32_ENGINE,
                  "aes_accel_cycles_per_byte": 2.0, "has_aes_accelerator": False,   # the F756's CRYP unit, if set
                  "power_active_mw": 330.0, "power_idle_mw": 110.0, "power_sd_read_mw": 120.0,
                  "power_sd_write_mw": 180.0},
    "apollo3": {"core": "Cortex-M4F", "core_key": "cortex-m4", "memory_factor": 1.1,
                "clock_hz": 96e6, "sram_bytes": 384 * 1024, "flash_bytes": 1024 * 1024,
                "sd_read_bytes_per_s": 4e6, "sd_write_bytes_per_s": 2e6, "sd_command_latency_s": 200e-6,
                "flash_read_cycles_per_byte": 0.5, **_M4_CORE, **_CRC32_ENGINE, **_NO_AES_ENGINE,
                "power_active_mw": 5.0, "power_idle_mw": 0.5, "power_sd_read_mw": 70.0, "power_sd_write_mw": 100.0},

    # datasheet figures (clock, SRAM, flash, SD interface, crypto unit); SD, flash and power figures are estimates
    # by analogy with the two calibrated parts (docs/cost-model.md)
    "stm32l4r5": {"core": "Cortex-M4F", "core_key": "cortex-m4", "memory_factor": 1.1,
                  "clock_hz": 120e6, "sram_bytes": 640 * 1024, "flash_bytes": 2048 * 1024,
                  "sd_read_bytes_per_s": 12e6, "sd_write_bytes_per_s": 6e6, "sd_command_latency_s": 100e-6,
                  "flash_read_cycles_per_byte": 0.3, **_M4_CORE, **_CRC32_ENGINE, **_NO_AES_ENGINE,
                  "power_active_mw": 40.0, "power_idle_mw": 10.0, "power_sd_read_mw": 100.0,
                  "power_sd_write_mw": 150.0},
    "stm32h7a3": {"core": "Cortex-M7", "core_key": "cortex-m7", "memory_factor": 1.05,
                  "clock_hz": 280e6, "sram_bytes": 1376 * 1024, "flash_bytes": 2048 * 1024,
                  "sd_read_bytes_per_s": 25e6, "sd_write_bytes_per_s": 12e6, "sd_command_latency_s": 100e-6,
                  "flash_read_cycles_per_byte": 0.25, **_M7_CORE, **_CRC32_ENGINE, **_NO_AES_ENGINE,
                  "power_active_mw": 180.0, "power_idle_mw": 60.0, "power_sd_read_mw": 120.0,
                  "power_sd_write_mw": 180.0},
    "stm32u575": {"core": "Cortex-M33", "core_key": "cortex-m33", "memory_factor": 1.1,
                  "clock_hz": 160e6, "sram_bytes": 786 * 1024, "flash_bytes": 2048 * 1024,
                  "sd_read_bytes_per_s": 20e6, "sd_write_bytes_per_s": 10e6, "sd_command_latency_s": 100e-6,
                  "flash_read_cycles_per_byte": 0.3, **_M4_CORE, **_CRC32_ENGINE, **_NO_AES_ENGINE,
                  "power_active_mw": 30.0, "power_idle_mw": 8.0, "power_sd_read_mw": 100.0,
                  "power_sd_write_mw": 150.0},
    "nrf5340": {"core": "Cortex-M33", "core_key": "cortex-m33", "memory_factor": 1.1,
                "clock_hz": 128e6, "sram_bytes": 512 * 1024, "flash_bytes": 1024 * 1024,
                "sd_read_bytes_per_s": 3e6, "sd_write_bytes_per_s": 1.5e6, "sd_command_latency_s": 200e-6,
                "flash_read_cycles_per_byte": 0.4, **_M4_CORE,
                "hash_accel_cycles_per_byte": 0.0, "has_hash_accelerator": False, "hash_accel_algorithms": (),
                "aes_accel_cycles_per_byte": 2.0, "has_aes_accelerator": True,     # CryptoCell-312
                "power_active_mw": 15.0, "power_idle_mw": 3.0, "power_sd_read_mw": 70.0, "power_sd_write_mw": 100.0},
}

#: The published builds the boards with published TFLM figures were measured with, and their factor per cycle of
#: today's build (fitted by ``microinterp.published.fit_calibration``: the geometric mean of published / today's
#: prediction over the board's figures; docs/cost-model.md tabulates every figure before and after).
CALIBRATIONS: Mapping[str, Mapping[str, Calibration]] = MappingProxyType({
    "apollo3": MappingProxyType({
        "optimized": Calibration(0.1558, _PAPER + ", CMSIS-NN kernels", "TFLM paper: person_detect"),
        "reference": Calibration(0.02637, _PAPER + ", reference kernels", "TFLM paper: person_detect")}),
    "stm32l4r5": MappingProxyType({
        "optimized": Calibration(2.11, _V231, "MLPerf Tiny v0.5 reference submission: kws, vww, ic, ad",
                                 MappingProxyType({"fc": 1.494}))}),
    "stm32f746": MappingProxyType({
        "optimized": Calibration(0.9006, _V25, "Plumerai blog 2021: MobileNetV2 0.3 at 80x80")}),
})

MCU_PROFILES: Mapping[str, McuProfile] = MappingProxyType({
    name: McuProfile(name=name, calibration=CALIBRATIONS.get(name, MappingProxyType({})),
                     interpreter_cycles_per_op=round(INTERPRETER_INSTRUCTIONS_PER_OP * CORE_CPI[data["core_key"]]
                                                     * data["memory_factor"], 1), **data)
    for name, data in _PROFILE_DATA.items()
})

#: Other names accepted by get_profile (lower case).
ALIASES: Mapping[str, str] = MappingProxyType({
    "stm32f746ng": "stm32f746", "stm32f7": "stm32f746", "f746": "stm32f746", "stm32f746-disco": "stm32f746",
    "apollo3-blue": "apollo3", "sparkfun-edge": "apollo3",
    "nucleo-l4r5zi": "stm32l4r5", "stm32l4r5zi": "stm32l4r5", "stm32h7a3zi": "stm32h7a3", "nucleo-h7a3zi-q": "stm32h7a3",
    "stm32u575zi": "stm32u575", "nucleo-u575zi-q": "stm32u575", "nrf5340-dk": "nrf5340",
})


#: What a generic board (``cortex-m33@200MHz``, :mod:`.boards`) takes from the named boards of its core family:
#: SD, flash-stream, checksum, AES and power figures; no hash or AES engine (a generic board is not known to have one).
_FAMILY_OF_CORE = {"cortex-m3": "stm32u575", "cortex-m4": "stm32l4r5", "cortex-m7": "stm32f746",
                   "cortex-m33": "stm32u575", "cortex-m55": "stm32f746", "cortex-m85": "stm32f746"}
_FAMILY_FIELDS = ("sd_read_bytes_per_s", "sd_write_bytes_per_s", "sd_command_latency_s", "flash_read_cycles_per_byte",
                  "hash_cycles_per_byte", "aes_gcm_cycles_per_byte", "power_active_mw", "power_idle_mw",
                  "power_sd_read_mw", "power_sd_write_mw")
_FAMILIES = {core: {**{f: _PROFILE_DATA[board][f] for f in _FAMILY_FIELDS}, **_NO_AES_ENGINE,
                    "hash_accel_cycles_per_byte": 0.0, "has_hash_accelerator": False, "hash_accel_algorithms": ()}
             for core, board in _FAMILY_OF_CORE.items()}


def generic_profile(spec: str) -> McuProfile:
    """The profile of a generic board spec such as ``"cortex-m33@200MHz"`` (:mod:`microinterp.cost.boards`)."""
    from .boards import board_data

    data = board_data(spec, _FAMILIES)
    return McuProfile(interpreter_cycles_per_op=round(INTERPRETER_INSTRUCTIONS_PER_OP * CORE_CPI[data["core_key"]]
                                                      * data["memory_factor"], 1), **data)


def get_profile(name: str) -> McuProfile:
    """The profile called ``name`` (case-insensitive, aliases accepted), or a generic board ``CORE@CLOCK[,fact=v]``
    (:mod:`microinterp.cost.boards`); a ConfigError lists the known names."""
    from .boards import is_spec

    if is_spec(name):
        return generic_profile(name)
    key = str(name).strip().lower()
    key = ALIASES.get(key, key)
    if key not in MCU_PROFILES:
        known = ", ".join(sorted(MCU_PROFILES)) + " (aliases: " + ", ".join(sorted(ALIASES)) + ")"
        raise ConfigError(f"unknown MCU profile {name!r}; known: {known}, or a generic board CORE@CLOCK such as "
                          "cortex-m33@200MHz")
    return MCU_PROFILES[key]


def op_class(op_name: str) -> str:
    """Op class of an op (e.g. ``CONV_2D`` -> ``conv``): what its shipped kernel declares (``Kernel.op_class``);
    ops without one -> ``other``."""
    return declaration_of(op_name).op_class
