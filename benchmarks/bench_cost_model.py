"""The cost model against the device oracle's instruction counts and every published TFLM latency.

    python benchmarks/bench_cost_model.py [--models ../shared/models] [--markdown]

Two tables, both deterministic (no timing):

1. Layer 1, per firmware build: the instruction model (``microinterp.cost.instructions``, fitted on the shape
   sweeps only) against the oracle's count of every node of every zoo and int8 population model it ran
   (``microinterp.testing.fit.compare``): nodes, nodes within 10 %, the worst node, models within 5 %, the worst model.
2. Layer 2, per published figure (``microinterp.testing.published.compare``): the published time, today's build on the board
   (instructions x CPI x memory factor), and the board's calibrated figure (x its published build's factor).

docs/cost-model.md holds the latest tables.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from microinterp.cost import instructions
from microinterp.testing import fit
from microinterp.testing.published import compare


def layer1() -> list[dict]:
    out = []
    for build in sorted(instructions.coefficients()):
        rows = fit.compare(build)
        errs = [r["predicted"] / r["oracle"] - 1 for r in rows]
        totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for r in rows:
            totals[r["model"]][0] += r["oracle"]
            totals[r["model"]][1] += r["predicted"]
        merr = [p / o - 1 for o, p in totals.values()]
        worst = max(range(len(rows)), key=lambda i: abs(errs[i]))
        out.append({"build": build, "nodes": len(rows), "within_10": sum(abs(e) <= 0.10 for e in errs),
                    "worst_node": errs[worst], "worst_node_at": f"{rows[worst]['model']} {rows[worst]['path']}",
                    "models": len(totals), "within_5": sum(abs(e) <= 0.05 for e in merr),
                    "worst_model": max(merr, key=abs)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=HERE.parent.parent / "shared" / "models")
    ap.add_argument("--markdown", action="store_true", help="print markdown tables (docs/cost-model.md)")
    args = ap.parse_args(argv)
    one, two = layer1(), compare(args.models)
    if args.markdown:
        print("| build | nodes | within 10 % | worst node | models within 5 % | worst model |")
        print("|---|---|---|---|---|---|")
        for r in one:
            print(f"| {r['build']} | {r['nodes']} | {r['within_10']} | {r['worst_node']:+.1%} ({r['worst_node_at']}) "
                  f"| {r['within_5']} / {r['models']} | {r['worst_model']:+.1%} |")
        print()
        print("| board | model | kernels | published ms | today's build ms | calibrated ms | error |")
        print("|---|---|---|---|---|---|---|")
        for r in two:
            print(f"| {r['board']} | {r['model']} | {r['kernels']} | {r['published_ms']:.2f} | {r['today_ms']:.2f} | "
                  f"{r['predicted_ms']:.2f} | {r['error']:+.1%} |")
    else:
        for r in one:
            print(f"{r['build']:22s} nodes {r['nodes']:4d}, {r['within_10']:4d} within 10 % (worst "
                  f"{r['worst_node']:+.1%}: {r['worst_node_at']}); models {r['within_5']}/{r['models']} within 5 % "
                  f"(worst {r['worst_model']:+.1%})")
        for r in two:
            print(f"{r['board']:10s} {r['model']:42s} {r['kernels']:9s} published {r['published_ms']:9.2f} ms  "
                  f"today {r['today_ms']:9.2f} ms  calibrated {r['predicted_ms']:9.2f} ms  error {r['error']:+6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
