"""Published latencies the cost model is calibrated and checked on: data only, each figure with its source.

Two kinds of figure:

* :data:`TFLM_LATENCIES` -- TFLM itself (reference or CMSIS-NN kernels) timed on a board: what a profile's cycle
  coefficients are fitted to (or checked against). One inference, in milliseconds, at the board's stated clock.
* :data:`SAME_STACK_THROUGHPUT` -- one non-TFLM software stack run on two or more boards in the same MLPerf Tiny
  round: the ratio of their cycle counts (``clock / throughput``) says how many cycles one board needs for the work
  another does, with the software held fixed. :mod:`microinterp.mcu` carries a calibrated board's coefficients over
  to boards that have no published TFLM figure with these ratios.

MLPerf Tiny figures are the ``Throughput`` lines of each submission's ``<benchmark>/performance/results.txt`` (the
"performance" mode of EEMBC's runner: N inferences on data already loaded, timed on the device). The four MLPerf Tiny
models are byte-identical to the zoo's ``kws_ref_model``, ``vww_96_int8``, ``pretrainedResnet_quant`` and
``ad01_int8`` (``git hash-object`` of the submission's copies). docs/cost-model.md tabulates every figure with the
model's prediction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

#: The TFLM paper's figures for person_detect.tflite on the SparkFun Edge (Apollo3, Cortex-M4 @ 96 MHz), in cycles:
#: the total of one inference and the part spent in kernels. shared/docs/out-of-core.md.
TFLM_PAPER_PERSON_DETECT: Mapping[str, Mapping[str, float]] = MappingProxyType({
    "reference": MappingProxyType({"total": 18_990.8e3, "kernels": 18_987.1e3}),
    "optimized": MappingProxyType({"total": 4_857.7e3, "kernels": 4_852.9e3}),
})
TFLM_PAPER = "TFLM paper (David et al., MLSys 2021), SparkFun Edge (Apollo3) at 96 MHz: person_detect cycles"

MLPERF_V05_REFERENCE = ("MLPerf Tiny v0.5 closed, reference submission (github.com/mlcommons/tiny_results_v0.5, "
                        "closed/reference/results/Nucleo-L4R5ZI/*/performance/results.txt): TFLM v2.3.1 with "
                        "TAGS=cmsis-nn, mbed-os bare metal, gcc-arm-none-eabi-6-2017-q2")


@dataclass(frozen=True)
class TflmLatency:
    """One published TFLM inference time."""

    board: str          # microinterp profile name
    clock_hz: float     # the clock the figure was measured at
    model: str          # zoo model name, or a builder call (``mobilenet_v2(alpha=0.3, input_size=80)``)
    kernels: str        # "optimized" (CMSIS-NN) or "reference"
    ms: float
    source: str


TFLM_LATENCIES: tuple[TflmLatency, ...] = (
    *(TflmLatency("apollo3", 96e6, "person_detect", ks, fig["total"] / 96e6 * 1e3, TFLM_PAPER)
      for ks, fig in TFLM_PAPER_PERSON_DETECT.items()),
    # 100 (ad: 1000) inferences per timed window; every window of the run gives the same runtime
    TflmLatency("stm32l4r5", 120e6, "kws_ref_model", "optimized", 18.192e3 / 100, MLPERF_V05_REFERENCE),
    TflmLatency("stm32l4r5", 120e6, "vww_96_int8", "optimized", 60.054e3 / 100, MLPERF_V05_REFERENCE),
    TflmLatency("stm32l4r5", 120e6, "pretrainedResnet_quant", "optimized", 70.425e3 / 100, MLPERF_V05_REFERENCE),
    TflmLatency("stm32l4r5", 120e6, "ad01_int8", "optimized", 10.052e3 / 1000, MLPERF_V05_REFERENCE),
    TflmLatency("stm32f746", 216e6, "mobilenet_v2(alpha=0.3, input_size=80)", "optimized", 129.0,
                "Plumerai blog, 2021-10-04, 'The world's fastest deep learning inference software for Arm "
                "Cortex-M' (blog.plumerai.com/2021/10/cortex-m-inference-software/): TFLM 2.5 with CMSIS-NN, "
                "MobileNetV2 alpha 0.30, 80x80, 1000 classes, STM32F746G-Discovery at 216 MHz"),
)

_V10 = "MLPerf Tiny v1.0 closed (github.com/mlcommons/tiny_results_v1.0), closed/{}/results/{}/*/performance"

#: stack -> (source, {board: (clock_hz, {benchmark: inferences per second})}).
SAME_STACK_THROUGHPUT: dict[str, tuple[str, dict[str, tuple[float, dict[str, float]]]]] = {
    "X-CUBE-AI 7.3.0": (_V10.format("STMicroelectronics", "<board>"), {
        "stm32l4r5": (120e6, {"ad": 131.950, "ic": 4.407, "kws": 13.323, "vww": 4.339}),
        "stm32h7a3": (280e6, {"ad": 547.707, "ic": 18.401, "kws": 59.667, "vww": 19.722}),
        "stm32u575": (160e6, {"ad": 206.211, "ic": 7.158, "kws": 22.608, "vww": 7.496}),
    }),
    "Plumerai inference engine": (_V10.format("plumerai", "<board>"), {
        "stm32l4r5": (120e6, {"ad": 179.450, "ic": 5.775, "kws": 13.955, "vww": 4.795}),
        "stm32f746": (216e6, {"ad": 435.777, "ic": 15.440, "kws": 52.288, "vww": 17.535}),
    }),
    "microTVM + CMSIS-NN": (_V10.format("OctoML", "microtvm_cmsis_nn/<board>"), {
        "stm32l4r5": (120e6, {"ad": 116.212, "ic": 2.567, "kws": 10.018, "vww": 3.320}),
        "nrf5340": (128e6, {"ad": 159.579, "ic": 3.163, "kws": 13.140, "vww": 4.310}),
    }),
}


MLPERF_V12_RA8D1 = ("MLPerf Tiny v1.2 closed, Renesas (github.com/mlcommons/tiny_results_v1.2, closed/Renesas/results/"
                    "EK-RA8D1/*/performance/results.txt): EK-RA8D1, Cortex-M85 at 480 MHz, TFLM with CMSIS, LLVM "
                    "Embedded Toolchain for Arm 17.0.1; median throughput of five windows")

MLPERF_V07_RA6M4 = ("MLPerf Tiny v0.7 closed, Renesas (github.com/mlcommons/tiny_results_v0.7 @64623f4, closed/renesas/"
                    "results/EK-RA6M4/*/performance/results.txt): EK-RA6M4, Cortex-M33 at 200 MHz, tflite-micro with "
                    "CMSIS, GCC-ARM 8.3.1; median throughput of five windows")

#: Published TFLM + CMSIS-NN figures kept out of every fit: the checks of a board priced from its core and clock
#: alone (a generic spec, today's build, no calibration). docs/cost-model.md, "Predicted blind".
BLIND_CHECKS: tuple[TflmLatency, ...] = tuple(
    TflmLatency(board, clock, model, "optimized", 1e3 / throughput, source)
    for board, clock, source, figures in (
        ("cortex-m85@480MHz", 480e6, MLPERF_V12_RA8D1,
         (("kws_ref_model", 288.611), ("vww_96_int8", 74.665), ("pretrainedResnet_quant", 117.948),
          ("ad01_int8", 1884.138))),
        ("cortex-m33@200MHz", 200e6, MLPERF_V07_RA6M4,
         (("kws_ref_model", 19.774), ("vww_96_int8", 6.159), ("pretrainedResnet_quant", 4.062),
          ("ad01_int8", 216.772))))
    for model, throughput in figures)


def blind_check(models_dir: Path) -> list[dict]:
    """One row per :data:`BLIND_CHECKS` figure whose model is available: today's build's prediction on the generic
    board (no calibration), the published ms and the error."""
    from ..cost.analysis import predict_cycles
    from ..cost.mcu import get_profile

    out = []
    for fig in BLIND_CHECKS:
        model = load_model_named(fig.model, models_dir)
        if model is None:
            continue
        p = get_profile(fig.board)
        ms = sum(predict_cycles(model, p, kernels=fig.kernels)) / p.clock_hz * 1e3
        out.append({"board": fig.board, "model": fig.model, "published_ms": fig.ms, "predicted_ms": ms,
                    "error": ms / fig.ms - 1, "source": fig.source})
    return out


def cycle_ratio(board: str, base: str = "stm32l4r5") -> tuple[float, str]:
    """Cycles ``board`` needs per cycle ``base`` needs for the same inference, from the first stack in
    :data:`SAME_STACK_THROUGHPUT` run on both: the geometric mean over the benchmarks of
    ``(clock_board / throughput_board) / (clock_base / throughput_base)``; returns (ratio, stack name)."""
    for stack, (_, boards) in SAME_STACK_THROUGHPUT.items():
        if board in boards and base in boards:
            (f_b, tp_b), (f_0, tp_0) = boards[board], boards[base]
            common = sorted(set(tp_b) & set(tp_0))
            log_sum = 0.0
            for bench in common:
                log_sum += math.log((f_b / tp_b[bench]) / (f_0 / tp_0[bench]))
            return math.exp(log_sum / len(common)), stack
    raise KeyError(f"no published stack ran on both {board} and {base}")


def load_model_named(name: str, models_dir: Path) -> Any:
    """A zoo model by file stem (None when absent), or a builder call such as
    ``mobilenet_v2(alpha=0.3, input_size=80)`` (built in-process: latency does not depend on the weights)."""
    from ..model import load_model
    from . import models as builders

    if "(" in name:
        func, args = name.split("(", 1)
        kwargs = dict(kv.split("=") for kv in args.rstrip(")").replace(" ", "").split(",") if kv)
        return load_model(getattr(builders, func)(**{k: float(v) if "." in v else int(v)
                                                     for k, v in kwargs.items()}))
    path = models_dir / f"{name}.tflite"
    return load_model(path) if path.exists() else None


def compare(models_dir: Path) -> list[dict]:
    """One row per published figure whose model is available: the in-memory prediction of
    :func:`microinterp.analysis.predict_cycles` at the figure's clock for today's build (``today_ms``) and for the
    board's published build (``predicted_ms``, calibrated), the published ms, and the calibrated error."""
    from ..cost.analysis import predict_cycles
    from ..cost.mcu import get_profile

    out = []
    models: dict[str, Any] = {}
    for fig in TFLM_LATENCIES:
        if fig.model not in models:
            models[fig.model] = load_model_named(fig.model, models_dir)
        model = models[fig.model]
        if model is None:
            continue
        p = get_profile(fig.board).replace(clock_hz=fig.clock_hz)
        today = sum(predict_cycles(model, p, fig.kernels)) / fig.clock_hz * 1e3
        pred = sum(predict_cycles(model, p, fig.kernels, calibrated=True)) / fig.clock_hz * 1e3
        out.append({"board": fig.board, "model": fig.model, "kernels": fig.kernels, "published_ms": fig.ms,
                    "predicted_ms": pred, "today_ms": today, "error": pred / fig.ms - 1,
                    "build": p.build_name(fig.kernels, calibrated=True), "source": fig.source})
    return out


#: Op classes whose published-build factor is fitted apart from the rest, per (board, kernel set): TFLM 2.3.1's
#: CMSIS-NN fully connected kernel is about as fast as today's while its convolutions take twice the cycles (the
#: FC-only MLPerf AD model against the three CNNs).
SPLIT_CLASSES: dict[tuple[str, str], tuple[str, ...]] = {("stm32l4r5", "optimized"): ("fc",)}


def fit_calibration(models_dir: Path) -> dict[tuple[str, str], dict[str, float]]:
    """The factors of each (board, kernel set) with published figures -- what :data:`microinterp.mcu.CALIBRATIONS`
    holds (rounded): ``{"*": factor, <class>: factor ...}``. Each figure's kernel cycles (published cycles less
    TFLM's per-op overhead) are today's kernel cycles per op class x the factors; a factor is the geometric mean
    over the figures where its classes do most of the work of (published - the other classes) / its classes'
    cycles, iterated to a fixed point (one factor: one pass)."""
    from ..cost.mcu import get_profile, op_class

    groups: dict[tuple[str, str], list[tuple[float, dict[str, float]]]] = {}
    for fig in TFLM_LATENCIES:
        model = load_model_named(fig.model, models_dir)
        if model is None:
            continue
        p = get_profile(fig.board)
        ops = model.main.operators
        per_class: dict[str, float] = {}
        for op in ops:
            c = op_class(op.key)
            per_class[c] = per_class.get(c, 0.0) + p.op_cycles(op, model.main.tensors, fig.kernels)
        published = fig.ms * 1e-3 * fig.clock_hz - len(ops) * p.interpreter_cycles_per_op
        groups.setdefault((fig.board, fig.kernels), []).append((published, per_class))
    out = {}
    for key, figs in groups.items():
        split = SPLIT_CLASSES.get(key, ())
        factors = {"*": 1.0, **{c: 1.0 for c in split}}
        for _ in range(50):
            for name in factors:
                mine = (lambda c, s=split: c not in s) if name == "*" else (lambda c, n=name: c == n)
                logs = []
                for published, per_class in figs:
                    own = sum(v for c, v in per_class.items() if mine(c))
                    rest = sum(v * factors.get(c, factors["*"]) for c, v in per_class.items() if not mine(c))
                    if own > 0.5 * sum(per_class.values()) and published > rest:
                        logs.append(math.log((published - rest) / own))
                if logs:
                    factors[name] = math.exp(sum(logs) / len(logs))
        out[key] = factors
    return out
