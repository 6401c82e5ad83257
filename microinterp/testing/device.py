"""The device oracle's goldens: TFLM's own Cortex-M build run in ``qemu-system-arm``, and how to compare with them.

A golden file (``tests/goldens/device/<core>.<kernels>.json``) holds, for one firmware build, every model it ran:
the ``arena_used_bytes()`` of a plain ``MicroInterpreter`` with its head and tail, each node's persistent bytes
(from ``Init`` and from ``Prepare``, alignment padding included) and scratch requests, the instructions each node
took on the first input (``qemu -icount shift=5``: SysTick ticks over the calibrated ticks per instruction), and
the output bytes (:func:`output_digest`) for :data:`SEEDS` seeded inputs made by :func:`seeded_input` (the
firmware's harness runs the same xorshift32 generator).

:func:`parse_log` turns the harness's log (``ORACLE ...`` lines) into a golden entry; the generator that builds the
firmware is not part of this repository (it compiles fetched third-party sources; see docs/device-oracle.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

#: Seeds of the oracle's inputs; the last one fills float inputs with raw bytes too (NaN, infinities, 1e38 ...).
SEEDS = (0, 1, 2, 3)
RAW_SEED = 3
#: Where the goldens live, one file per core and kernel set.
GOLDEN_DIR = Path(__file__).resolve().parents[2] / "tests" / "goldens" / "device"


def _xorshift32(state: int, n: int) -> np.ndarray:
    """``n`` successive outputs of Marsaglia's xorshift32 (13, 17, 5) from ``state``, as uint32."""
    out = np.empty(n, np.uint32)
    x = state
    for i in range(n):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        out[i] = x
    return out


def seeded_input(dtype: np.dtype, shape: tuple[int, ...], seed: int, index: int) -> np.ndarray:
    """The oracle harness's input ``index`` for ``seed``: xorshift32 seeded with
    ``0x9E3779B9 ^ seed*0x85EBCA6B ^ index*0xC2B2AE35``; float32 elements are ``(x >> 8) / 2**23 - 1`` (in [-1, 1),
    computed in float32 as the firmware does) except for :data:`RAW_SEED`, bool elements ``x & 1``, every other
    type one byte ``x >> 24`` per byte of the tensor."""
    dtype = np.dtype(dtype)
    state = (0x9E3779B9 ^ ((seed * 0x85EBCA6B) & 0xFFFFFFFF) ^ ((index * 0xC2B2AE35) & 0xFFFFFFFF)) or 1
    count = int(np.prod(shape, dtype=np.int64))
    if dtype == np.float32 and seed != RAW_SEED:
        x = _xorshift32(state, count)
        return ((x >> np.uint32(8)).astype(np.float32) * np.float32(1.0 / 8388608.0)
                - np.float32(1.0)).reshape(shape)
    if dtype == np.bool_:
        return (_xorshift32(state, count) & 1).astype(np.bool_).reshape(shape)
    raw = (_xorshift32(state, count * dtype.itemsize) >> np.uint32(24)).astype(np.uint8)
    return raw.view(dtype).reshape(shape)


_NODE = re.compile(r"ORACLE node (\d+) (\S+) persist_init (\d+) persist_prepare (\d+) scratch \[(.*)\]")
_ARENA = re.compile(r"ORACLE arena_used_bytes (\d+) head (\d+) tail (\d+)")
_OUT = re.compile(r"ORACLE seed (\d+) outhex (\d+) (\w*)")
_TICKS = re.compile(r"ORACLE op_ticks (\d+) (\d+)")
_CALIB = re.compile(r"ORACLE calib_ticks_per_2M_instructions (\d+)")


def parse_log(text: str, model_bytes: bytes) -> dict[str, Any]:
    """One golden entry from a harness log; ``{"error": line}`` when the firmware did not finish."""
    entry: dict[str, Any] = {"model_sha256": hashlib.sha256(model_bytes).hexdigest()}
    if "ORACLE DONE" not in text:
        failed = [ln for ln in text.splitlines() if "FAILED" in ln or "FAULT" in ln]
        entry["error"] = (failed[-1] if failed else text.strip().splitlines()[-1:] or ["no output"])[0]
        return entry
    nodes, outputs, ticks = [], {}, {}
    calib = 0
    for line in text.splitlines():
        if m := _ARENA.search(line):
            entry.update(arena_used_bytes=int(m[1]), head_bytes=int(m[2]), tail_bytes=int(m[3]))
        elif m := _NODE.search(line):
            nodes.append({"op": m[2], "persist_init": int(m[3]), "persist_prepare": int(m[4]),
                          "scratch": [int(x) for x in m[5].split(",") if x]})
        elif m := _OUT.search(line):
            outputs.setdefault(int(m[1]), {}).setdefault(int(m[2]), []).append(m[3])
        elif m := _TICKS.search(line):
            ticks[int(m[1])] = int(m[2])
        elif m := _CALIB.search(line):
            calib = int(m[1])
    entry["nodes"] = nodes
    entry["outputs"] = [[output_digest(bytes.fromhex("".join(outputs[s][o]))) for o in sorted(outputs[s])]
                        for s in sorted(outputs)]
    if calib:
        entry["instructions"] = [round(ticks[i] * 2_000_000 / calib) for i in sorted(ticks)]
    return entry


def seeded_inputs(interpreter: Any, seed: int) -> list[np.ndarray]:
    """:func:`seeded_input` for every input of ``interpreter`` (anything with LiteRT's ``get_input_details()``), in
    input order: what the oracle's harness fed the firmware for ``seed``."""
    return [seeded_input(d["dtype"], tuple(d["shape"]), seed, i)
            for i, d in enumerate(interpreter.get_input_details())]


#: Outputs up to this many bytes are kept whole (hex) in a golden, larger ones as their SHA-256.
WHOLE_OUTPUT_BYTES = 4096


def output_digest(data: bytes) -> str:
    """How a golden keeps one output: its bytes in hex, or ``sha256:<digest>`` above :data:`WHOLE_OUTPUT_BYTES`."""
    if len(data) <= WHOLE_OUTPUT_BYTES:
        return data.hex()
    return "sha256:" + hashlib.sha256(data).hexdigest()


def golden_path(core: str, kernels: str) -> Path:
    return GOLDEN_DIR / f"{core}.{kernels}.json"


def load_goldens(core: str, kernels: str) -> dict[str, Any]:
    """The golden file of one build (``{"build": ..., "models": {name: entry}}``)."""
    with open(golden_path(core, kernels)) as f:
        return json.load(f)


def golden_files() -> Iterator[tuple[str, str]]:
    """(core, kernels) of every golden file present."""
    for p in sorted(GOLDEN_DIR.glob("*.json")):
        core, _, kernels = p.stem.partition(".")
        yield core, kernels


def model_file(name: str) -> str | None:
    """The path of a golden model in ``../shared`` (zoo first, then population), or None when absent."""
    shared = Path(os.environ.get("MICROINTERP_SHARED", Path(__file__).resolve().parents[3] / "shared"))
    for sub in ("models", "population"):
        p = shared / sub / f"{name}.tflite"
        if p.exists():
            return str(p)
    return None


def build_info(core: str, kernels: str) -> dict[str, Any]:
    """What a golden file says of the build it was measured on."""
    from ..targets import BUILD, get_target

    t = get_target(core, kernels)
    return {"core": core, "kernels": kernels, "features": t.features, "float_abi": t.core.float_abi,
            "board": t.core.board, **BUILD,
            "emulator": "qemu-system-arm 7.2 (Debian), semihosting, -icount shift=5",
            "harness": "a plain MicroInterpreter (arena_used_bytes, head, tail); each registration's init/prepare/"
                       "invoke wrapped to record persistent bytes, scratch requests and SysTick ticks",
            "seeds": list(SEEDS), "raw_seed": RAW_SEED}


def write_goldens(log_dir: str, core: str, kernels: str, models: list[str] | None = None) -> Path:
    """Parse every ``<model>.log`` of ``log_dir`` (the harness's output for one build) into the golden file of
    ``core``/``kernels``; models whose file is not in ``../shared`` are skipped."""
    entries = {}
    for log in sorted(Path(log_dir).glob("*.log")):
        name = log.stem
        path = model_file(name)
        if path is None or (models is not None and name not in models):
            continue
        entries[name] = parse_log(log.read_text(errors="replace"), Path(path).read_bytes())
    return _write(golden_path(core, kernels), core, kernels, entries)


def _write(out: Path, core: str, kernels: str, entries: dict[str, Any]) -> Path:
    """One golden file: the build it was measured on and its models' entries."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"build": build_info(core, kernels), "models": entries}, indent=1) + "\n")
    return out


#: Where the shape sweeps' goldens live (the instruction model's fitting data), one file per build.
SWEEP_DIR = GOLDEN_DIR / "sweep"


def sweep_digest(digest: str) -> str:
    """A sweep golden's form of an output already in :func:`output_digest` form: the first 16 hex digits of the
    SHA-256 of its bytes."""
    if digest.startswith("sha256:"):
        return digest[7:23]
    return hashlib.sha256(bytes.fromhex(digest)).hexdigest()[:16]


def write_sweep_goldens(log_dir: str, core: str, kernels: str) -> Path:
    """Parse the logs of the shape sweeps (:mod:`microinterp.testing.sweep`, built in-process) of one build into
    ``tests/goldens/device/sweep/<core>.<kernels>.json``."""
    from .sweep import SWEEPS, build

    entries = {}
    for name in SWEEPS:
        log = Path(log_dir) / f"{name}.log"
        if log.exists():
            entry = parse_log(log.read_text(errors="replace"), build(name))
            # many small outputs: each kept as its SHA-256 (:func:`sweep_digest`), to keep the file small
            entry["outputs"] = [[sweep_digest(o) for o in seed] for seed in entry.get("outputs", [])]
            entries[name] = entry
    return _write(SWEEP_DIR / f"{core}.{kernels}.json", core, kernels, entries)


if __name__ == "__main__":        # python -m microinterp.testing.device [--sweep] LOG_DIR CORE KERNELS
    import sys

    args = sys.argv[1:]
    if args[0] == "--sweep":
        print(write_sweep_goldens(*args[1:4]))
    else:
        print(write_goldens(*args[:3]))
