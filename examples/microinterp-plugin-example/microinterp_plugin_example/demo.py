"""``python -m microinterp_plugin_example``: load the plugin through its entry point and show that it is used and exact.

Builds a two-op int8 model in-process (ADD with broadcasting, then RELU), runs it with a resolver that loaded the
installed plugins, and compares the outputs with microinterp's reference kernels and, when it is installed, with the
TFLM wheel.
"""

from __future__ import annotations

import sys

import numpy as np

from microinterp import Interpreter, OpResolver
from microinterp.errors import TfliteMicroUnavailable
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.single_op import random_tensor


def demo_model() -> bytes:
    """x (1x6x6x8) + y (1x1x1x8, broadcast) → ADD → RELU, all int8 with different scales and zero points."""
    b = ModelBuilder(description="microinterp plugin example")
    x = b.add_tensor("x", (1, 6, 6, 8), "INT8", scale=0.05, zero_point=-3)
    y = b.add_tensor("y", (1, 1, 1, 8), "INT8", scale=0.03, zero_point=7)
    s = b.add_tensor("sum", (1, 6, 6, 8), "INT8", scale=0.08, zero_point=5)
    r = b.add_tensor("relu", (1, 6, 6, 8), "INT8", scale=0.04, zero_point=-128)
    b.add_op("ADD", [x, y], [s])
    b.add_op("RELU", [s], [r])
    b.inputs, b.outputs = [x, y], [r]
    return b.build()


def main() -> int:
    resolver = OpResolver(plugins=True)
    if "example" not in resolver.plugins_loaded:
        print("the entry point 'example' (group microinterp.kernels) is not installed; run:\n"
              "    pip install ./examples/microinterp-plugin-example")
        return 1
    print("plugins loaded:", ", ".join(resolver.plugins_loaded))
    model = demo_model()
    plugged = Interpreter(model, resolver=resolver)
    reference = Interpreter(model, optimized=False)
    for op, kernel in plugged.describe().items():
        print(f"  {op:<5} -> {kernel}")
    try:
        from microinterp.testing.tflm import TflmRunner

        wheel = TflmRunner(model, preserve_all=False)
    except TfliteMicroUnavailable:
        wheel = None
    rng = np.random.default_rng(0)
    same_ref = same_wheel = True
    for _ in range(3):
        inputs = [random_tensor(rng, (1, 6, 6, 8)), random_tensor(rng, (1, 1, 1, 8))]
        for it in (plugged, reference):
            for i, value in enumerate(inputs):
                it.set_input(value, i)
            it.invoke()
        got = plugged.get_output(0)
        same_ref &= np.array_equal(got, reference.get_output(0))
        if wheel is not None:
            wheel.run(inputs)
            same_wheel &= np.array_equal(got, wheel.output(0))
    add = resolver.find("ADD")
    print(f"ADD counted {add.prepares} prepare and {add.invokes} invoke calls")
    print("bit-exact with the reference kernels:", "yes" if same_ref else "NO")
    print("bit-exact with the TFLM wheel:", "not installed" if wheel is None else ("yes" if same_wheel else "NO"))
    return 0 if same_ref and same_wheel else 1


if __name__ == "__main__":
    sys.exit(main())
