"""The cost model against every published TFLM latency it is calibrated or checked on.

    python benchmarks/bench_cost_model.py [--models ../shared/models] [--markdown]

For each figure of ``microinterp.published.TFLM_LATENCIES`` (and the TFLM paper's person_detect cycles on the
Apollo3), ``microinterp.published.compare`` gives the board, model, kernel set, published time, the in-memory prediction of
``microinterp.analysis.predict_cycles`` at the figure's clock, and the error. Zoo models are read from ``--models``;
``mobilenet_v2(...)`` figures are built in-process (latency does not depend on the weights' values). No timing is
involved: the output is deterministic. docs/cost-model.md holds the latest table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from microinterp.published import compare


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=HERE.parent.parent / "shared" / "models")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table (docs/cost-model.md)")
    args = ap.parse_args(argv)
    table = compare(args.models)
    if args.markdown:
        print("| board | model | kernels | published ms | predicted ms | error |")
        print("|---|---|---|---|---|---|")
        for r in table:
            print(f"| {r['board']} | {r['model']} | {r['kernels']} | {r['published_ms']:.2f} | "
                  f"{r['predicted_ms']:.2f} | {r['error']:+.1%} |")
    else:
        for r in table:
            print(f"{r['board']:10s} {r['model']:42s} {r['kernels']:9s} published {r['published_ms']:9.2f} ms  "
                  f"predicted {r['predicted_ms']:9.2f} ms  error {r['error']:+6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
