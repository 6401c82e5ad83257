"""Example microinterp kernel plugin.

Installing this distribution declares the entry point ``example`` in the group ``microinterp.kernels`` (see
pyproject.toml). ``microinterp.OpResolver(plugins=True)`` loads it and calls :func:`register` with the resolver, which
binds two kernels in the resolver's *plugin* layer (above the reference and optimized kernels, below explicit
``register()`` calls):

* ``RELU`` → :class:`~microinterp_plugin_example.relu.DirectRelu`: the same result as the reference kernel, computed
  another way (TFLM's formula on the tensor at invoke time instead of a table prepared once).
* ``ADD`` → :class:`~microinterp_plugin_example.counting.CountingKernel`: counts prepare and invoke calls and
  delegates both to the reference ADD kernel.
"""

from __future__ import annotations

from .counting import CountingKernel
from .relu import DirectRelu

__all__ = ["CountingKernel", "DirectRelu", "kernels", "register"]


def kernels() -> dict[str, object]:
    """Fresh kernel objects, keyed by op name (fresh, so every resolver gets its own call counters)."""
    return {"RELU": DirectRelu(), "ADD": CountingKernel("ADD")}


def register(resolver) -> None:
    """The entry point: bind this package's kernels in ``resolver``'s plugin layer."""
    for op_name, kernel in kernels().items():
        resolver.register_plugin(op_name, kernel)
