"""The Interpreter's settings in groups: each group given whole equals its fields given by name."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import microinterp as mi
from microinterp.errors import ConfigError
from microinterp.settings import Cost, OutOfCore, Planning, split
from microinterp.testing.models import demo_cnn


def test_the_constructor_takes_eight_named_parameters():
    named = [p for p in inspect.signature(mi.Interpreter.__init__).parameters.values()
             if p.name != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD]
    assert len(named) <= 8


def test_fields_by_name_go_to_their_groups():
    kwargs = {"tile": 4096, "flash": 0, "mcu": "stm32h7a3", "cost_kernels": "reference", "max_arena": 1 << 20,
              "kernels": "reference", "model_path": "x"}
    s = split("sd.img", "optimal", None, kwargs)
    assert s.out_of_core == OutOfCore("sd.img", tile=4096, flash=0)
    assert s.planning == Planning("optimal", max_arena=1 << 20) and s.cost == Cost("stm32h7a3", "reference")
    assert s.kernels == "reference" and kwargs == {"model_path": "x"}          # LiteRT's arguments stay


def test_a_group_given_whole_and_by_field_is_an_error():
    with pytest.raises(TypeError, match="tile"):
        split(OutOfCore("sd.img"), "tflm", None, {"tile": 4096})
    with pytest.raises(ConfigError, match="unknown planner"):
        Planning("fastest")
    with pytest.raises(ConfigError, match="phased"):
        Planning("phased", preserve_all_tensors=True)
    with pytest.raises(ConfigError):
        split(None, "tflm", Cost(kernels="turbo"), {})


def test_groups_whole_run_as_fields_by_name(tmp_path):
    model = demo_cnn()
    x = np.random.default_rng(0).integers(-128, 128, size=(1, 64, 64, 3)).astype(np.int8)
    runs = [mi.Interpreter(model, 30_000, tmp_path / "a.img", flash=0, tile=8192, mcu="stm32h7a3"),
            mi.Interpreter(model, 30_000, OutOfCore(tmp_path / "b.img", flash=0, tile=8192), cost="stm32h7a3")]
    outs = []
    for it in runs:
        assert it.out_of_core and it.mcu.name == "stm32h7a3"
        it.set_input(x)
        it.invoke()
        outs.append(it.get_output())
        it.close()
    assert np.array_equal(*outs)
    assert mi.Interpreter(model, planner=Planning(preserve_all_tensors=True)).preserve_all_tensors


def test_an_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="colour"):
        mi.Interpreter(demo_cnn(), colour="red")
