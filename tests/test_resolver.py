"""The op resolver: layer precedence, replace= rules, the register_kernel decorator (scoped: a resolver held or a with
block), custom ops keyed by their custom code, describe(), and entry-point plugins (fake entry points)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import EntryPoint
from typing import Any

import numpy as np
import pytest

import microinterp.kernels.optimized as optimized_pkg
import microinterp.resolver as resolver_mod
from microinterp import Interpreter, OpResolver, RegistrationError, UnsupportedOpError, register_kernel
from microinterp.kernels import REFERENCE_KERNELS
from microinterp.kernels.contract import Kernel
from microinterp.testing.builder import ModelBuilder


class FakeKernel(Kernel):
    def __init__(self, tag: str = ""):
        self.tag = tag

    def prepare(self, ctx, op):
        return None

    def invoke(self, ctx, op, data):
        pass


class OtherKernel(FakeKernel):
    pass


@pytest.fixture
def with_optimized(monkeypatch):
    kernel = FakeKernel("optimized")
    monkeypatch.setattr(resolver_mod, "optimized_kernels", lambda: {**optimized_pkg.OPTIMIZED_KERNELS, "RESHAPE": kernel})
    return kernel


# -- precedence ------------------------------------------------------------------------------------------------------


def test_reference_layer_is_the_registry():
    r = OpResolver()
    assert r.find("RESHAPE") is REFERENCE_KERNELS["RESHAPE"] and r.layer_of("RESHAPE") == "reference"
    assert r.find("NO_SUCH_OP") is None and r.layer_of("NO_SUCH_OP") is None
    assert set(REFERENCE_KERNELS) <= set(r.ops()) and r.ops() == sorted(r.ops())


def test_precedence_reference_optimized_plugin_explicit(with_optimized):
    r = OpResolver()
    assert r.find("RESHAPE") is with_optimized and r.layer_of("RESHAPE") == "optimized"
    assert OpResolver(optimized=False).find("RESHAPE") is REFERENCE_KERNELS["RESHAPE"]
    plugin, explicit = FakeKernel("plugin"), FakeKernel("explicit")
    r.register_plugin("RESHAPE", plugin)
    assert r.find("RESHAPE") is plugin and r.layer_of("RESHAPE") == "plugin"
    r.register("RESHAPE", explicit)
    assert r.find("RESHAPE") is explicit and r.layer_of("RESHAPE") == "explicit"
    r.unregister("RESHAPE")
    assert r.find("RESHAPE") is plugin
    r.unregister("RESHAPE")  # nothing explicit left: a no-op
    assert r.find("RESHAPE") is plugin


def test_optimized_off_skips_only_the_optimized_layer(with_optimized):
    r = OpResolver(optimized=False)
    plugin = FakeKernel("plugin")
    r.register_plugin("RESHAPE", plugin)
    assert r.find("RESHAPE") is plugin
    r2 = OpResolver(optimized=False)
    assert r2.layer_of("RESHAPE") == "reference"


# -- replace= --------------------------------------------------------------------------------------------------------


def test_rebinding_in_the_same_layer_needs_replace():
    r = OpResolver()
    first, second = FakeKernel("1"), OtherKernel("2")
    r.register("RESHAPE", first)  # other layers already have RESHAPE: no replace needed
    with pytest.raises(RegistrationError, match=r"RESHAPE is already bound to tests\.test_resolver\.FakeKernel in "
                                                r"the explicit layer; pass replace=True"):
        r.register("RESHAPE", second)
    assert r.find("RESHAPE") is first
    r.register("RESHAPE", second, replace=True)
    assert r.find("RESHAPE") is second
    r.register_plugin("MY_OP", first)
    with pytest.raises(RegistrationError, match="in the plugin layer"):
        r.register_plugin("MY_OP", second)
    r.register_plugin("MY_OP", second, replace=True)
    assert r.find("MY_OP") is second
    r.register("MY_OP", first)  # explicit over plugin: a different layer
    assert r.find("MY_OP") is first


@pytest.mark.parametrize("name,kernel,match", [
    ("", FakeKernel(), "non-empty string"),
    (None, FakeKernel(), "non-empty string"),
    ("OP", object(), "is not a kernel"),
    ("OP", type("NoInvoke", (), {"prepare": lambda s, c, o: 0})(), "is not a kernel"),
    ("OP", type("NoInvoke", (Kernel,), {"prepare": lambda s, c, o: 0})(), "needs prepare"),
    ("OP", FakeKernel, "is a class; register an instance"),
])
def test_invalid_registrations(name, kernel, match):
    with pytest.raises(RegistrationError, match=match):
        OpResolver().register(name, kernel)


def test_registration_error_is_a_microinterp_error():
    from microinterp import MicroInterpError

    assert issubclass(RegistrationError, MicroInterpError) and issubclass(RegistrationError, ValueError)


# -- the decorator ---------------------------------------------------------------------------------------------------


def test_register_kernel_decorator_on_a_class():
    r = OpResolver()

    @register_kernel("MY_DECORATED_OP", resolver=r)
    class Decorated(FakeKernel):
        pass

    assert isinstance(Decorated, type)  # the class itself is returned unchanged
    bound = r.find("MY_DECORATED_OP")
    assert isinstance(bound, Decorated) and r.layer_of("MY_DECORATED_OP") == "explicit"
    with pytest.raises(RegistrationError):
        r.register_kernel("MY_DECORATED_OP")(Decorated)
    r.register_kernel("MY_DECORATED_OP", replace=True)(OtherKernel)
    assert isinstance(r.find("MY_DECORATED_OP"), OtherKernel)
    assert resolver_mod.default_resolver().find("MY_DECORATED_OP") is None


def test_register_kernel_never_binds_into_every_later_interpreter():
    """Issue 26: outside a resolver the user holds or a with block, register_kernel refuses (and says how)."""
    with pytest.raises(RegistrationError, match="needs a resolver.*with microinterp.OpResolver"):
        register_kernel("RESHAPE")(FakeKernel("x"))
    assert not isinstance(resolver_mod.default_resolver().find("RESHAPE"), FakeKernel)


def test_a_with_block_scopes_registration_and_the_interpreters_built_in_it():
    obj = FakeKernel("instance")
    with OpResolver() as r:
        assert register_kernel("RESHAPE")(obj) is obj
        assert r.find("RESHAPE") is obj and resolver_mod.default_resolver() is r
        with OpResolver() as inner:
            assert resolver_mod.default_resolver() is inner and inner.find("RESHAPE") is not obj
        assert resolver_mod.default_resolver() is r
    assert resolver_mod.default_resolver() is not r
    assert resolver_mod.default_resolver().find("RESHAPE") is not obj


def test_fixture_leaves_the_real_default_untouched():
    assert resolver_mod.default_resolver().find("MY_DECORATED_OP") is None
    assert resolver_mod.default_resolver().layer_of("RESHAPE") in ("reference", "optimized")


# -- custom ops and describe() ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scale:
    factor: int


class TimesTwo(Kernel):
    """A custom op: y = 2 * x (int8, saturating), to show that custom ops run like builtins."""

    def prepare(self, ctx, op):
        x, y = ctx.require_input(op, 0), ctx.output(op, 0)
        if x.shape != y.shape:
            raise ctx.fail(op, "shapes differ")
        return Scale(int(op.custom_options[0]) if op.custom_options else 2)

    def invoke(self, ctx, op, data):
        x = ctx.input(op, 0).astype(np.int32)
        ctx.output(op, 0)[...] = np.clip(x * data.factor, -128, 127)


def custom_model(code: str = "TimesTwo", options: bytes | None = b"\x03") -> bytes:
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 4), "INT8", scale=0.1, zero_point=0)
    y = b.add_tensor("y", (1, 4), "INT8", scale=0.1, zero_point=0)
    z = b.add_tensor("z", (4,), "INT8", scale=0.1, zero_point=0)
    b.add_op("CUSTOM", [x], [y], custom_code=code, custom_options=options)
    b.add_op("RESHAPE", [y], [z], new_shape=[4])
    b.inputs, b.outputs = [x], [z]
    return b.build()


def test_custom_ops_are_keyed_by_custom_code():
    r = OpResolver()
    r.register("TimesTwo", TimesTwo())
    it = Interpreter(custom_model(), resolver=r)
    it.set_input(np.array([[1, -2, 50, -100]], np.int8))
    it.invoke()
    assert it.get_output().tolist() == [3, -6, 127, -128]
    assert it.describe() == {"RESHAPE": f"{r.layer_of('RESHAPE')}: {type(r.find('RESHAPE')).__module__}."
                                        f"{type(r.find('RESHAPE')).__qualname__}",
                             "TimesTwo": "explicit: tests.test_resolver.TimesTwo"}
    with pytest.raises(UnsupportedOpError) as info:
        Interpreter(custom_model("SomethingElse"), resolver=r)
    assert info.value.missing == [(0, "SomethingElse")] and "SomethingElse" in str(info.value)


def test_describe():
    r = OpResolver(optimized=False)
    r.register("TimesTwo", TimesTwo())
    d = r.describe()
    assert list(d) == r.ops()
    assert d["TimesTwo"] == "explicit: tests.test_resolver.TimesTwo"
    assert d["RESHAPE"] == "reference: microinterp.kernels.reshape.Reshape"
    assert r.describe(["TimesTwo", "NOPE"]) == {"TimesTwo": "explicit: tests.test_resolver.TimesTwo",
                                                 "NOPE": "UNSUPPORTED"}


# -- plugins ---------------------------------------------------------------------------------------------------------


@dataclass
class FakeEntryPoint:
    name: str
    target: Any
    loads: int = 0

    def load(self):
        self.loads += 1
        return self.target


def test_load_plugins_from_callables_and_mappings():
    a, b = FakeKernel("a"), FakeKernel("b")

    def install(resolver):
        resolver.register_plugin("PLUGGED_OP", a)

    eps = [FakeEntryPoint("zeta", {"OTHER_OP": b, "RESHAPE": b}), FakeEntryPoint("alpha", install)]
    r = OpResolver()
    assert r.load_plugins(eps) == ["alpha", "zeta"]  # sorted by name: deterministic
    assert r.plugins_loaded == ["alpha", "zeta"]
    assert r.find("PLUGGED_OP") is a and r.find("OTHER_OP") is b
    assert r.find("RESHAPE") is b and r.layer_of("RESHAPE") == "plugin"
    assert r.load_plugins(eps) == [] and [ep.loads for ep in eps] == [1, 1]  # loaded once
    r.register("RESHAPE", a)
    assert r.find("RESHAPE") is a  # explicit beats plugin


def test_plugins_binding_the_same_op_conflict():
    first = FakeKernel("one")
    eps = [FakeEntryPoint("one", {"X_OP": first}), FakeEntryPoint("two", {"Y_OP": FakeKernel(), "X_OP": FakeKernel()})]
    r = OpResolver()
    with pytest.raises(RegistrationError, match="plugin 'two': .*X_OP is already bound .* in the plugin layer"):
        r.load_plugins(eps)
    assert r.plugins_loaded == ["one"]
    # all or nothing: the failed plugin's first binding (Y_OP) was rolled back, the earlier plugin's stays
    assert r.find("Y_OP") is None and r.find("X_OP") is first


def test_a_failing_plugin_callable_is_rolled_back_and_named():
    def half_done(resolver):
        resolver.register_plugin("HALF_OP", FakeKernel())
        raise RuntimeError("boom")

    r = OpResolver()
    with pytest.raises(RegistrationError, match="plugin 'half': RuntimeError: boom") as info:
        r.load_plugins([FakeEntryPoint("half", half_done)])
    assert isinstance(info.value.__cause__, RuntimeError)
    assert r.find("HALF_OP") is None and r.plugins_loaded == []


def test_a_plugin_that_does_not_import_is_named():
    ep = EntryPoint(name="ghost", value="no_such_module_xyz:register", group="microinterp.kernels")
    with pytest.raises(RegistrationError, match=r"plugin 'ghost' \(no_such_module_xyz:register\): "
                                                r"ModuleNotFoundError"):
        OpResolver().load_plugins([ep])


@dataclass
class NamedEntryPoint(FakeEntryPoint):
    value: str = ""


def test_same_name_different_targets_are_distinct_plugins():
    a, b = FakeKernel("a"), FakeKernel("b")
    eps = [NamedEntryPoint("kernels", {"B_OP": b}, value="pkg_b:KERNELS"),
           NamedEntryPoint("kernels", {"A_OP": a}, value="pkg_a:KERNELS"),
           NamedEntryPoint("kernels", {"A_OP": a}, value="pkg_a:KERNELS")]  # the same one seen twice
    r = OpResolver()
    assert r.load_plugins(eps) == ["kernels", "kernels"]
    assert r.find("A_OP") is a and r.find("B_OP") is b
    assert [ep.loads for ep in eps] == [1, 1, 0] and r.load_plugins(eps) == []


@pytest.mark.parametrize("target,match", [(42, "must load to a callable or a mapping"),
                                          ({"BAD": object()}, "is not a kernel")])
def test_bad_plugins(target, match):
    with pytest.raises(RegistrationError, match=match):
        OpResolver().load_plugins([FakeEntryPoint("bad", target)])


def test_plugins_are_only_loaded_when_asked(monkeypatch):
    calls = []
    monkeypatch.setattr(resolver_mod.importlib_metadata, "entry_points",
                        lambda group: calls.append(group) or [FakeEntryPoint("real", {"EP_OP": FakeKernel()})])
    assert OpResolver().find("EP_OP") is None and calls == []
    r = OpResolver(plugins=True)
    assert calls == ["microinterp.kernels"] and r.find("EP_OP") is not None and r.plugins_loaded == ["real"]


def test_interpreters_built_in_a_with_block_use_its_kernels():
    with OpResolver() as r:
        r.register_kernel("TimesTwo")(TimesTwo)
        it = Interpreter(custom_model())
    it.set_input(np.array([[1, -2, 50, -100]], np.int8))
    it.invoke()
    assert it.get_output().tolist() == [3, -6, 127, -128]
    with pytest.raises(UnsupportedOpError):
        Interpreter(custom_model())          # outside the block: the default resolver has no TimesTwo
