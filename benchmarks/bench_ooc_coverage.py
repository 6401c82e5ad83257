"""Which real models run out of core at 512 000 bytes: every model of ../shared/models and ../shared/population
whose in-memory plan is larger, run at 512 000 B with an SD image (or, when that does not page, the smallest arena
that does), its outputs compared with the TFLM wheel's on the oracle's seeded input.

    python benchmarks/bench_ooc_coverage.py [--shared ../shared] [--dir MORE_MODELS ...] [--markdown]

``--dir`` surveys the ``.tflite`` files of other folders instead (models from elsewhere).

No timing: the table is deterministic. docs/pager-benchmarks.md holds the latest one.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from microinterp import Interpreter
from microinterp.errors import ArenaOverflowError, MicroInterpError
from microinterp.testing.device import seeded_inputs

ARENA = 512_000


def _wheel(path: Path, inputs: list[np.ndarray], outputs: int) -> list[np.ndarray] | None:
    try:
        import tflite_micro
    except ImportError:
        return None
    w = tflite_micro.runtime.Interpreter.from_bytes(path.read_bytes(), arena_size=64 << 20)
    for i, x in enumerate(inputs):
        w.set_input(x, i)
    w.invoke()
    return [w.get_output(i) for i in range(outputs)]


def survey(folders: list[Path]) -> list[dict]:
    rows = []
    for path in sorted(p for folder in folders for p in folder.glob("*.tflite")):
        try:
            plan = Interpreter(path).arena_used_bytes
        except MicroInterpError:
            continue
        if plan <= ARENA:
            continue
        row = {"model": path.stem, "plan": plan}
        with tempfile.TemporaryDirectory() as tmp:
            img = Path(tmp) / "sd.img"
            arena = ARENA
            try:
                Interpreter(path, arena=ARENA, backing=img).close()
            except ArenaOverflowError as e:
                arena = e.needed_arena
            except MicroInterpError as e:
                rows.append({**row, "arena": None, "result": f"{type(e).__name__}: {e}"[:120]})
                continue
            row["arena"] = arena
            if arena >= plan:
                rows.append({**row, "result": "does not page below its in-memory plan"})
                continue
            with Interpreter(path, arena=arena, backing=img) as it:
                inputs = seeded_inputs(it, 0)
                for i, x in enumerate(inputs):
                    it.set_input(x, i)
                it.invoke()
                got = [it.get_output(i) for i in range(it.num_outputs)]
                modes = sorted({r.mode for r in it.profile})
            want = _wheel(path, inputs, len(got))
            equal = None if want is None else all(np.array_equal(a, b, equal_nan=True) for a, b in zip(got, want))
            rows.append({**row, "modes": ", ".join(modes),
                         "result": "equal to the wheel" if equal else ("no wheel" if equal is None else "DIFFERS")})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=HERE.parent.parent / "shared")
    ap.add_argument("--dir", type=Path, action="append", default=None,
                    help="survey the .tflite files of this folder instead of ../shared (repeatable)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    rows = survey(args.dir or [args.shared / "models", args.shared / "population"])
    if args.markdown:
        print("| model | in-memory plan B | out-of-core arena B | op modes | result |")
        print("|---|---|---|---|---|")
    for r in rows:
        arena = "-" if r.get("arena") is None else f"{r['arena']:,}"
        if args.markdown:
            print(f"| {r['model']} | {r['plan']:,} | {arena} | {r.get('modes', '')} | {r['result']} |")
        else:
            print(f"{r['model']:48s} plan {r['plan']:>10,}  arena {arena:>11}  {r.get('modes', ''):32s} {r['result']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
