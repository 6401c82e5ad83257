"""The op resolver: an explicit registry from op name to kernel, in four layers.

Precedence, lowest to highest::

    reference  <  optimized (on by default)  <  plugins (entry-point group ``microinterp.kernels``, on request)
               <  explicit ``register(op_name, kernel)`` / ``@register_kernel(op_name)``

Registration is scoped: ``register_kernel`` binds into a resolver the caller holds (``resolver.register_kernel``,
``register_kernel(..., resolver=r)``) or into the resolver of the innermost ``with OpResolver() as r:`` block, which
is also what interpreters built inside that block use. It never changes the process-wide default, so one script's
kernel cannot silently change every later Interpreter.

Within one layer an op is bound at most once: binding it again without ``replace=True`` raises. Builtin ops are keyed
by their schema name (``"CONV_2D"``); custom ops (``CUSTOM`` + custom code) by their custom code string. A plugin
entry point loads to a callable that receives the resolver and calls :meth:`OpResolver.register_plugin` (or to a
mapping ``{op_name: kernel}``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping
from importlib import metadata as importlib_metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import Self

from .errors import MicroInterpError
from .kernels.contract import Declaration, Kernel, declaration, declares
from .kernels.registry import optimized as optimized_kernels
from .kernels.registry import reference as reference_kernels

PLUGIN_GROUP = "microinterp.kernels"
LAYERS = ("reference", "optimized", "plugin", "explicit")
# both shipped layers load with the package (an Interpreter's first build does not pay for importing them)
optimized_kernels()


class RegistrationError(MicroInterpError, ValueError):
    """An op is already bound in that layer (use replace=True), or the kernel object is not a kernel."""


def _check_kernel(op_name: str, kernel: Any) -> None:
    if isinstance(kernel, type):
        raise RegistrationError(f"{op_name}: {kernel.__qualname__} is a class; register an instance "
                                f"(@register_kernel instantiates classes for you)")
    if not isinstance(kernel, Kernel):
        raise RegistrationError(f"{op_name}: {kernel!r} is not a kernel: subclass microinterp.Kernel (prepare(ctx, op) "
                                "and invoke(ctx, op, data) required; docs/ops.md)")
    if not (declares(kernel, "prepare") and declares(kernel, "invoke")):
        raise RegistrationError(f"{op_name}: {kernel!r} needs prepare(ctx, op) and invoke(ctx, op, data)")


def describe_kernel(kernel: Any) -> str:
    cls = type(kernel)
    return f"{cls.__module__}.{cls.__qualname__}"


class OpResolver:
    """Resolves op names to kernels. ``optimized=False`` switches the optimized layer off."""

    def __init__(self, optimized: bool = True, plugins: bool = False):
        self._layers: dict[str, dict[str, Any]] = {layer: {} for layer in LAYERS}
        self._layers["reference"].update(reference_kernels())
        self._layers["optimized"].update(optimized_kernels())
        self._declarations: dict[tuple[str, bool], Declaration] = {}
        self._tokens: list[contextvars.Token[OpResolver | None]] = []
        self.optimized = optimized
        self._plugins_loaded: list[str] = []
        self._plugin_keys: set[tuple[str, str | None]] = set()
        if plugins:
            self.load_plugins()

    # -- registration ----------------------------------------------------------------------------------------------
    def register(self, op_name: str, kernel: Any, replace: bool = False) -> None:
        """Bind ``op_name`` to ``kernel`` in the explicit (highest) layer."""
        self._bind("explicit", op_name, kernel, replace)

    def register_plugin(self, op_name: str, kernel: Any, replace: bool = False) -> None:
        """Bind ``op_name`` in the plugin layer (what entry-point plugins call)."""
        self._bind("plugin", op_name, kernel, replace)

    def register_kernel(self, op_name: str, replace: bool = False) -> Callable[[Any], Any]:
        """Decorator binding a kernel class (instantiated) or object to ``op_name`` in this resolver's explicit
        layer; returns the decorated object unchanged."""
        return register_kernel(op_name, replace=replace, resolver=self)

    def __enter__(self) -> Self:
        """``with OpResolver() as r:``: ``register_kernel`` without ``resolver=`` binds into ``r``, and interpreters
        built inside the block without ``resolver=`` use it. Blocks nest; leaving one restores the outer scope."""
        self._tokens.append(_SCOPE.set(self))
        return self

    def __exit__(self, *exc: object) -> None:
        _SCOPE.reset(self._tokens.pop())

    def unregister(self, op_name: str) -> None:
        """Remove an explicit binding (the op falls back to the lower layers)."""
        self._layers["explicit"].pop(op_name, None)
        self._declarations.clear()

    def _bind(self, layer: str, op_name: str, kernel: Any, replace: bool) -> None:
        if not isinstance(op_name, str) or not op_name:
            raise RegistrationError(f"op name must be a non-empty string, got {op_name!r}")
        _check_kernel(op_name, kernel)
        table = self._layers[layer]
        if op_name in table and not replace:
            raise RegistrationError(
                f"{op_name} is already bound to {describe_kernel(table[op_name])} in the {layer} layer; "
                f"pass replace=True to rebind it")
        table[op_name] = kernel
        self._declarations.clear()

    def load_plugins(self, entry_points: list[Any] | None = None) -> list[str]:
        """Load kernel plugins from the ``microinterp.kernels`` entry-point group; returns the names loaded now.

        Deterministic: entry points are loaded sorted by (name, value). Each one is loaded once per resolver (entry
        points with the same name but different targets, from different distributions, are distinct plugins).
        Loading a plugin is all or nothing: when importing it, or any binding it makes, fails, the plugin layer is
        left as it was and a :class:`RegistrationError` naming the plugin is raised (chained to the cause).
        """
        eps = entry_points if entry_points is not None else list(
            importlib_metadata.entry_points(group=PLUGIN_GROUP))
        loaded = []
        for ep in sorted(eps, key=lambda e: (e.name, str(getattr(e, "value", "")))):
            key = (ep.name, getattr(ep, "value", None))
            if key in self._plugin_keys:
                continue
            table = self._layers["plugin"]
            before = dict(table)
            try:
                self._apply_plugin(ep.load())
            except Exception as e:
                table.clear()
                table.update(before)
                where = f" ({key[1]})" if key[1] else ""
                raise RegistrationError(f"plugin {ep.name!r}{where}: {type(e).__name__}: {e}") from e
            self._plugin_keys.add(key)
            self._plugins_loaded.append(ep.name)
            loaded.append(ep.name)
        return loaded

    def _apply_plugin(self, target: Any) -> None:
        if isinstance(target, Mapping):
            for op_name, kernel in target.items():
                self.register_plugin(op_name, kernel)
        elif callable(target):
            target(self)
        else:
            raise RegistrationError(f"must load to a callable or a mapping, got {target!r}")

    # -- lookup ------------------------------------------------------------------------------------------------------
    def _active_layers(self, optimized: bool = True) -> list[str]:
        """Layers from highest to lowest; the optimized one only if this resolver and the caller both want it."""
        use_optimized = self.optimized and optimized
        return [layer for layer in reversed(LAYERS) if layer != "optimized" or use_optimized]

    def find(self, op_name: str, optimized: bool = True) -> Any | None:
        """The kernel ``op_name`` resolves to, or None. ``optimized=False`` skips the optimized layer."""
        for layer in self._active_layers(optimized):
            kernel = self._layers[layer].get(op_name)
            if kernel is not None:
                return kernel
        return None

    def shipped(self, op_name: str) -> Any | None:
        """The reference kernel microinterp ships for ``op_name`` (what a plugin or explicit binding overrides, and
        whose capabilities it keeps unless it declares its own), or None."""
        return self._layers["reference"].get(op_name)

    def declaration(self, op_name: str, optimized: bool = True) -> Declaration:
        """What the kernel ``op_name`` resolves to declares (:func:`~.kernels.contract.declaration`), with what it
        does not declare inherited from the shipped kernel it replaces; the conservative defaults when nothing
        serves the op."""
        key = (op_name, optimized)
        found = self._declarations.get(key)
        if found is None:
            found = self._declarations[key] = self.declare(self.find(op_name, optimized), op_name)
        return found

    def declare(self, kernel: Any, op_name: str) -> Declaration:
        """``kernel``'s declaration as the kernel of ``op_name`` (it inherits from the shipped kernel it replaces)."""
        shipped = self.shipped(op_name)
        if kernel is None:
            return declaration(Kernel())
        return declaration(kernel, None if kernel is shipped else shipped)

    def layer_of(self, op_name: str, optimized: bool = True) -> str | None:
        for layer in self._active_layers(optimized):
            if op_name in self._layers[layer]:
                return layer
        return None

    def ops(self, optimized: bool = True) -> list[str]:
        return sorted({name for layer in self._active_layers(optimized) for name in self._layers[layer]})

    def describe(self, ops: list[str] | None = None, optimized: bool = True) -> dict[str, str]:
        """``{op_name: "layer: module.Class"}`` for every bound op (or the given ones; unbound ones say so)."""
        out = {}
        for name in ops if ops is not None else self.ops(optimized):
            kernel = self.find(name, optimized)
            out[name] = ("UNSUPPORTED" if kernel is None
                         else f"{self.layer_of(name, optimized)}: {describe_kernel(kernel)}")
        return out

    @property
    def plugins_loaded(self) -> list[str]:
        return list(self._plugins_loaded)


_DEFAULT: OpResolver | None = None
#: The resolver of the innermost ``with OpResolver() as r:`` block (per thread and task), or None.
_SCOPE: contextvars.ContextVar[OpResolver | None] = contextvars.ContextVar("microinterp_resolver", default=None)


def default_resolver() -> OpResolver:
    """The resolver interpreters use when given none: the innermost ``with OpResolver()`` block's, else the
    process-wide one (the shipped kernels and nothing registered by ``register_kernel``)."""
    global _DEFAULT
    scoped = _SCOPE.get()
    if scoped is not None:
        return scoped
    if _DEFAULT is None:
        _DEFAULT = OpResolver()
    return _DEFAULT


def register_kernel(op_name: str, replace: bool = False, *, resolver: OpResolver | None = None
                    ) -> Callable[[Any], Any]:
    """Decorator: ``@register_kernel("CONV_2D", resolver=r)`` on a kernel class (instantiated) or kernel object
    binds it in ``r``'s explicit layer. Without ``resolver=`` it binds into the innermost ``with OpResolver() as r:``
    block's resolver; outside any block it raises :class:`RegistrationError` (it never binds into the process-wide
    default, which every later Interpreter would use)."""
    target = resolver if resolver is not None else _SCOPE.get()
    if target is None:
        raise RegistrationError(
            f"register_kernel({op_name!r}) needs a resolver: pass resolver=OpResolver() and give it to the "
            "Interpreter (Interpreter(model, resolver=r)), or register inside `with microinterp.OpResolver() as r:`, "
            "where interpreters use r")

    def deco(obj: Any) -> Any:
        kernel = obj() if isinstance(obj, type) else obj
        target.register(op_name, kernel, replace=replace)
        return obj

    return deco


def declaration_of(op_name: str) -> Declaration:
    """What the kernel of ``op_name`` declares in the current scope: the innermost ``with OpResolver()`` block's
    resolver, else the process-wide one (reference layer and above; the optimized layer inherits the reference's
    facts anyway). What the cost model, the firmware arena, batch and reordering ask about an op by name, so a
    kernel registered in a scope is known to all of them there."""
    return default_resolver().declaration(op_name, optimized=False)

