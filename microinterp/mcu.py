"""Microcontroller profiles: the cycle coefficients the cost model and the out-of-core pager charge.

A :class:`McuProfile` is frozen data plus pure helpers::

    compute_cycles(op_class, macs, elements) = fixed + cycles_per_mac * macs + cycles_per_element * elements
    sd_io_cycles(nbytes, commands, write)    = clock_hz * (commands * sd_command_latency_s + nbytes / bandwidth)
    flash_cycles(nbytes)                      = flash_read_cycles_per_byte * nbytes
    hash_cycles(nbytes, algorithm)            = per-byte cost of the algorithm, in hardware when the MCU has an
                                                engine for it (crc32), else in software
    energy_joules(total_s, compute_s, ...)    = active/idle CPU power over the run + SD read/write power while
                                                transferring

``macs`` are multiply-accumulates for conv / depthwise / fc and window operations (compares or adds) for pooling;
``elements`` are output elements (requantization, activation, copy). Op classes: conv, depthwise, fc, pool,
elementwise, softmax, other (:func:`op_class` maps TFLite operator names). Each op class has two kernel sets:
``optimized`` (alias ``cmsis-nn``: TFLM's CMSIS-NN kernels for Cortex-M) and ``reference`` (TFLM's portable C
kernels). A whole inference also pays ``interpreter_cycles_per_op`` per op (TFLM's own overhead).

Every coefficient lives in :data:`OP_CYCLES` and :data:`_PROFILE_DATA` below, nowhere else. The compute coefficients
are calibrated on published TFLM latencies (:mod:`microinterp.published`): the Apollo3 on the TFLM paper's
person_detect cycles, the STM32L4R5 on MLPerf Tiny's TFLM reference submission, the STM32F746 on a published TFLM 2.5
figure; boards without a TFLM figure take the L4R5's by published same-stack cycle ratios. What each number is and
where it comes from (datasheets, those figures, the SwapNN study, or an estimate marked E) is in
``docs/cost-model.md``. Bad names and values raise
:class:`~microinterp.errors.ConfigError`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .errors import ConfigError
from .published import TFLM_PAPER_PERSON_DETECT, cycle_ratio  # noqa: F401 (re-exported: the Apollo3's fit)

OP_CLASS_NAMES = ("conv", "depthwise", "fc", "pool", "elementwise", "softmax", "other")
KERNEL_SETS = ("optimized", "reference")
#: Other names for the kernel sets (lower case).
KERNEL_ALIASES: Mapping[str, str] = MappingProxyType({
    "cmsis-nn": "optimized", "cmsis_nn": "optimized", "cmsisnn": "optimized", "cmsis": "optimized",
    "ref": "reference",
})

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


# Cortex-M4 (Apollo3) per op class: (cycles/MAC, cycles/output element, fixed cycles per op). The conv and
# depthwise cycles/MAC are calibrated on the TFLM paper's person_detect totals; the rest are estimates
# (docs/cost-model.md gives the reasoning for each).
_M4_CMSIS_NN = {"conv": (0.53, 4, 500), "depthwise": (0.66, 4, 500), "fc": (0.6, 4, 500), "pool": (1.0, 3, 500),
                "elementwise": (0, 6, 300), "softmax": (0, 60, 800), "other": (0, 0.5, 200)}
_M4_REFERENCE = {"conv": (1.73, 24, 500), "depthwise": (2.77, 24, 500), "fc": (1.73, 24, 500),
                 "pool": (3.0, 20, 500), "elementwise": (0, 40, 500), "softmax": (0, 150, 1000),
                 "other": (0, 1, 300)}
#: The STM32L4R5 (Nucleo-L4R5ZI) per op class: its published TFLM latencies (MLPerf Tiny v0.5's reference
#: submission, :data:`microinterp.published.TFLM_LATENCIES`) divided by the Apollo3 coefficients' prediction, fitted
#: to the smallest largest error over kws / vww / ResNet-8 / the FC autoencoder. conv, depthwise and fc are fitted;
#: the other classes take the conv factor (E). The reference kernel set takes the same factors (E: no published
#: reference-kernel figure for the board). docs/cost-model.md explains the size of the factors (flash wait states,
#: TFLM 2.3.1's kernels and build).
L4R5_FACTORS = MappingProxyType({"conv": 12.6, "depthwise": 16.8, "fc": 6.5})


def _costs(table: dict[str, tuple[float, float, float]], factors: Mapping[str, float] | None = None,
           ratio: float = 1.0) -> Mapping[str, OpCycles]:
    """``table`` as :class:`OpCycles`; with ``factors``, every coefficient of a class multiplied by its factor (the
    classes not in ``factors``: the conv factor) x ``ratio``, rounded to 4 decimals."""
    assert set(table) == set(OP_CLASS_NAMES), sorted(table)
    if factors is None:
        return MappingProxyType({k: OpCycles(*v) for k, v in table.items()})
    return MappingProxyType({k: OpCycles(*(round(x * factors.get(k, factors["conv"]) * ratio, 4) for x in v))
                             for k, v in table.items()})


def _board(ratio: float = 1.0) -> Mapping[str, Mapping[str, OpCycles]]:
    """The L4R5's fitted tables carried to another board by its published same-stack cycle ratio."""
    return MappingProxyType({"optimized": _costs(_M4_CMSIS_NN, L4R5_FACTORS, ratio),
                             "reference": _costs(_M4_REFERENCE, L4R5_FACTORS, ratio)})


#: Cycles a board needs per L4R5 cycle for the same inference with the software held fixed: the geometric mean over
#: the four MLPerf Tiny v1.0 benchmarks of one stack run on both boards (microinterp.published.cycle_ratio; rounded).
BOARD_CYCLE_RATIOS = MappingProxyType({b: round(cycle_ratio(b)[0], 3)
                                       for b in ("stm32f746", "stm32h7a3", "stm32u575", "nrf5340")})

#: TFLM 2.5's CMSIS-NN build per cycle of the L4R5's TFLM 2.3.1 build on the same board: Plumerai's TFLM 2.5 figure on
#: the STM32F746 (MobileNetV2 0.3 at 80x80, 129 ms) divided by the L4R5 fit carried to the F746 by its cycle ratio
#: (228.8 ms). Fitted, one figure for one number, as the Apollo3's flavours are.
TFLM_2_5_FACTOR = 0.564

#: THE table of compute coefficients: profile -> kernel set -> op class -> (cycles/MAC, cycles/element, fixed).
OP_CYCLES: Mapping[str, Mapping[str, Mapping[str, OpCycles]]] = MappingProxyType({
    # the TFLM paper's person_detect figures on the SparkFun Edge
    "apollo3": MappingProxyType({"optimized": _costs(_M4_CMSIS_NN), "reference": _costs(_M4_REFERENCE)}),
    # MLPerf Tiny v0.5's TFLM 2.3.1 reference submission on the Nucleo-L4R5ZI
    "stm32l4r5": _board(),
    # Plumerai's TFLM 2.5 figure on the F746; the boards without a published TFLM figure are carried from the L4R5
    # by their same-stack cycle ratio at the newest TFLM build measured (2.5)
    **{b: _board(r * TFLM_2_5_FACTOR) for b, r in BOARD_CYCLE_RATIOS.items()},
})


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
    op_cycles: Mapping[str, Mapping[str, OpCycles]]     # kernel set -> op class -> coefficients
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
        if set(self.op_cycles) != set(KERNEL_SETS):
            raise ConfigError(f"MCU profile {self.name!r}: op_cycles needs the kernel sets {', '.join(KERNEL_SETS)}, "
                              f"got {', '.join(self.op_cycles)}")
        for ks, table in self.op_cycles.items():
            if set(table) != set(OP_CLASS_NAMES):
                raise ConfigError(f"MCU profile {self.name!r}: op_cycles[{ks!r}] needs the op classes "
                                  f"{', '.join(OP_CLASS_NAMES)}")
            for cls, c in table.items():
                if not all(math.isfinite(x) and x >= 0 for x in dataclasses.astuple(c)):
                    raise ConfigError(f"MCU profile {self.name!r}: op_cycles[{ks!r}][{cls!r}] must be finite and "
                                      f">= 0, got {c}")
        for alg, v in self.hash_cycles_per_byte.items():
            if not math.isfinite(v) or v < 0:
                raise ConfigError(f"MCU profile {self.name!r}: hash_cycles_per_byte[{alg!r}] must be >= 0, got {v}")

    def compute_cycles(self, op_class: str, macs: int = 0, elements: int = 0, *,
                       kernels: str = "optimized") -> float:
        """Cycles of one op (or one tile of it): fixed + per-MAC + per-output-element terms."""
        costs = self.op_cycles[kernel_set(kernels)]
        if op_class not in costs:
            raise ConfigError(f"unknown op class {op_class!r}; known: {', '.join(costs)}")
        c = costs[op_class]
        return c.fixed_cycles + c.cycles_per_mac * macs + c.cycles_per_element * elements

    def ops_per_second(self, kernels: str = "optimized", op_class: str = "conv") -> float:
        """Effective compute speed S_cpu (MACs per second) of an op class: ``clock_hz / cycles_per_mac``."""
        c = self.op_cycles[kernel_set(kernels)][op_class].cycles_per_mac
        if c <= 0:
            raise ConfigError(f"op class {op_class!r} has no per-MAC cost; S_cpu is defined for MAC op classes")
        return self.clock_hz / c

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
#: AES-GCM, and TFLM's own work per op.
_M4_CORE = {"hash_cycles_per_byte": _hash_costs(6, 40, 4), "aes_gcm_cycles_per_byte": 90.0,
            "interpreter_cycles_per_op": 140.0}
_M7_CORE = {"hash_cycles_per_byte": _hash_costs(4, 30, 3), "aes_gcm_cycles_per_byte": 70.0,
            "interpreter_cycles_per_op": 119.0}
#: A CRC-32 engine at 1 cycle/byte (the STM32 CRC unit, the Apollo3's security block), and no AES engine.
_CRC32_ENGINE = {"hash_accel_cycles_per_byte": 1.0, "has_hash_accelerator": True, "hash_accel_algorithms": ("crc32",)}
_NO_AES_ENGINE = {"aes_accel_cycles_per_byte": 0.0, "has_aes_accelerator": False}

#: Everything but the compute coefficients, per profile (sources and estimates: docs/cost-model.md).
_PROFILE_DATA = {
    "stm32f746": {"core": "Cortex-M7", "clock_hz": 216e6, "sram_bytes": 340 * 1024, "flash_bytes": 1024 * 1024,
                  "sd_read_bytes_per_s": 20e6, "sd_write_bytes_per_s": 10e6, "sd_command_latency_s": 100e-6,
                  "flash_read_cycles_per_byte": 0.25, **_M7_CORE, **_CRC32_ENGINE,
                  "aes_accel_cycles_per_byte": 2.0, "has_aes_accelerator": False,   # the F756's CRYP unit, if set
                  "power_active_mw": 330.0, "power_idle_mw": 110.0, "power_sd_read_mw": 120.0,
                  "power_sd_write_mw": 180.0},
    "apollo3": {"core": "Cortex-M4F", "clock_hz": 96e6, "sram_bytes": 384 * 1024, "flash_bytes": 1024 * 1024,
                "sd_read_bytes_per_s": 4e6, "sd_write_bytes_per_s": 2e6, "sd_command_latency_s": 200e-6,
                "flash_read_cycles_per_byte": 0.5, **_M4_CORE, **_CRC32_ENGINE, **_NO_AES_ENGINE,
                "power_active_mw": 5.0, "power_idle_mw": 0.5, "power_sd_read_mw": 70.0, "power_sd_write_mw": 100.0},

    # datasheet figures (clock, SRAM, flash, SD interface, crypto unit); SD, flash and power figures are estimates
    # by analogy with the two calibrated parts (docs/cost-model.md)
    "stm32l4r5": {"core": "Cortex-M4F", "clock_hz": 120e6, "sram_bytes": 640 * 1024, "flash_bytes": 2048 * 1024,
                  "sd_read_bytes_per_s": 12e6, "sd_write_bytes_per_s": 6e6, "sd_command_latency_s": 100e-6,
                  "flash_read_cycles_per_byte": 0.3, **_M4_CORE, **_CRC32_ENGINE, **_NO_AES_ENGINE,
                  "power_active_mw": 40.0, "power_idle_mw": 10.0, "power_sd_read_mw": 100.0,
                  "power_sd_write_mw": 150.0},
    "stm32h7a3": {"core": "Cortex-M7", "clock_hz": 280e6, "sram_bytes": 1376 * 1024, "flash_bytes": 2048 * 1024,
                  "sd_read_bytes_per_s": 25e6, "sd_write_bytes_per_s": 12e6, "sd_command_latency_s": 100e-6,
                  "flash_read_cycles_per_byte": 0.25, **_M7_CORE, **_CRC32_ENGINE, **_NO_AES_ENGINE,
                  "power_active_mw": 180.0, "power_idle_mw": 60.0, "power_sd_read_mw": 120.0,
                  "power_sd_write_mw": 180.0},
    "stm32u575": {"core": "Cortex-M33", "clock_hz": 160e6, "sram_bytes": 786 * 1024, "flash_bytes": 2048 * 1024,
                  "sd_read_bytes_per_s": 20e6, "sd_write_bytes_per_s": 10e6, "sd_command_latency_s": 100e-6,
                  "flash_read_cycles_per_byte": 0.3, **_M4_CORE, **_CRC32_ENGINE, **_NO_AES_ENGINE,
                  "power_active_mw": 30.0, "power_idle_mw": 8.0, "power_sd_read_mw": 100.0,
                  "power_sd_write_mw": 150.0},
    "nrf5340": {"core": "Cortex-M33", "clock_hz": 128e6, "sram_bytes": 512 * 1024, "flash_bytes": 1024 * 1024,
                "sd_read_bytes_per_s": 3e6, "sd_write_bytes_per_s": 1.5e6, "sd_command_latency_s": 200e-6,
                "flash_read_cycles_per_byte": 0.4, **_M4_CORE,
                "hash_accel_cycles_per_byte": 0.0, "has_hash_accelerator": False, "hash_accel_algorithms": (),
                "aes_accel_cycles_per_byte": 2.0, "has_aes_accelerator": True,     # CryptoCell-312
                "power_active_mw": 15.0, "power_idle_mw": 3.0, "power_sd_read_mw": 70.0, "power_sd_write_mw": 100.0},
}

MCU_PROFILES: Mapping[str, McuProfile] = MappingProxyType({
    name: McuProfile(name=name, op_cycles=OP_CYCLES[name], **data) for name, data in _PROFILE_DATA.items()
})

#: Other names accepted by get_profile (lower case).
ALIASES: Mapping[str, str] = MappingProxyType({
    "stm32f746ng": "stm32f746", "stm32f7": "stm32f746", "f746": "stm32f746", "stm32f746-disco": "stm32f746",
    "apollo3-blue": "apollo3", "sparkfun-edge": "apollo3",
    "nucleo-l4r5zi": "stm32l4r5", "stm32l4r5zi": "stm32l4r5", "stm32h7a3zi": "stm32h7a3", "nucleo-h7a3zi-q": "stm32h7a3",
    "stm32u575zi": "stm32u575", "nucleo-u575zi-q": "stm32u575", "nrf5340-dk": "nrf5340",
})


def get_profile(name: str) -> McuProfile:
    """The profile called ``name`` (case-insensitive, aliases accepted); a ConfigError lists the known names."""
    key = str(name).strip().lower()
    key = ALIASES.get(key, key)
    if key not in MCU_PROFILES:
        known = ", ".join(sorted(MCU_PROFILES)) + " (aliases: " + ", ".join(sorted(ALIASES)) + ")"
        raise ConfigError(f"unknown MCU profile {name!r}; known: {known}")
    return MCU_PROFILES[key]


def op_class(op_name: str) -> str:
    """Op class of a TFLite builtin operator name (e.g. ``CONV_2D`` -> ``conv``); unknown names -> ``other``."""
    return OP_CLASS_OF.get(op_name, "other")
