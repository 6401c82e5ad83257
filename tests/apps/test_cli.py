"""The command line: info, plan (text and JSON), run, demo, and error exits."""

from __future__ import annotations

import json

import numpy as np
import pytest

import microinterp as mi
from microinterp.apps.cli import main

from ..test_interpreter import reshape_model


def test_info(tmp_path, capsys):
    path = tmp_path / "m.tflite"
    path.write_bytes(reshape_model())
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "RESHAPE" in out and "reference: microinterp.kernels.reshape.Reshape" in out
    assert "input 0: tensor 0 'x' INT8[1, 2, 3]" in out
    assert "RESHAPE" in out and " -> INT8[" in out                        # every op with its tensors' shapes
    assert main(["info", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    m = mi.load_model(str(path))
    assert [o["op"] for o in doc["operators"]] == [op.key for op in m.main.operators]
    assert doc["operators"][0]["output_shapes"] == [list(m.main.tensors[m.main.operators[0].outputs[0]].shape)]
    assert doc["inputs"][0]["shape"] == [1, 2, 3]


def test_plan_json_and_text(tmp_path, capsys):
    path = tmp_path / "m.tflite"
    path.write_bytes(reshape_model())
    assert main(["plan", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["head_bytes"] == 32
    assert doc["arena_used_bytes"] == doc["head_bytes"] + doc["tail_bytes"]
    assert [b["offset"] for b in doc["buffers"]] == [16, 0] or [b["offset"] for b in doc["buffers"]] == [0, 16]
    assert {"offset", "size", "first", "last", "name"} <= set(doc["buffers"][0])
    assert main(["plan", str(path)]) == 0
    text = capsys.readouterr().out
    assert "head 32" in text and "time" in text


def test_run_writes_outputs(tmp_path, capsys):
    path = tmp_path / "m.tflite"
    path.write_bytes(reshape_model())
    x = np.arange(6, dtype=np.int8).reshape(1, 2, 3)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(path), "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npy")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), x.reshape(3, 2))


def test_errors_exit_1_with_message(tmp_path, capsys):
    path = tmp_path / "bad.tflite"
    path.write_bytes(b"garbage" * 10)
    assert main(["info", str(path)]) == 1
    assert "ModelError" in capsys.readouterr().err
    good = tmp_path / "m.tflite"
    good.write_bytes(reshape_model())
    assert main(["plan", str(good), "--arena", "8"]) == 1
    assert "smallest arena that works is" in capsys.readouterr().err
    np.save(tmp_path / "x.npy", np.zeros((3,), np.int8))
    assert main(["run", str(good), "--input", str(tmp_path / "x.npy")]) == 1
    assert "expected shape" in capsys.readouterr().err


def test_analyze_table_json_and_errors(tmp_path, capsys):
    from microinterp.testing.models import demo_cnn

    path = tmp_path / "cnn.tflite"
    path.write_bytes(demo_cnn())
    assert main(["analyze", str(path), "--mcu", "apollo3", "--memory"]) == 0
    text = capsys.readouterr().out
    assert "CONV_2D" in text and "N range" in text and "totals:" in text and "arena on a 32-bit MCU" in text
    assert main(["analyze", str(path), "--json", "--kernels", "reference"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["mcu"] == "stm32f746" and doc["kernels"] == "reference"
    assert {"index", "op", "mops", "io_mb", "n", "n_min", "n_max", "class"} <= set(doc["layers"][0])
    assert sum(doc["totals"]["counts"].values()) == len(doc["layers"])
    assert main(["analyze", str(path), "--mcu", "esp32"]) == 1
    assert "ConfigError" in capsys.readouterr().err


def test_profile_out_of_core_table_and_json(tmp_path, capsys):
    from microinterp.testing.models import demo_cnn

    model = tmp_path / "demo.tflite"
    model.write_bytes(demo_cnn())
    img = tmp_path / "sd.img"
    assert main(["profile", str(model), "--arena", "45000", "--backing", str(img), "--mcu", "apollo3"]) == 0
    out = capsys.readouterr().out
    assert "out of core" in out and "CONV_2D" in out and "chain" in out and "MCU estimate" in out
    key = tmp_path / "key.hex"
    key.write_text("ab" * 32 + "\n")
    assert main(["profile", str(model), "--arena", "45000", "--backing", str(tmp_path / "enc.img"), "--key-file",
                 str(key)]) == 0
    assert "out of core" in capsys.readouterr().out
    assert main(["profile", str(model), "--arena", "45000", "--backing", str(tmp_path / "enc.img")]) == 1
    assert "pass its key" in capsys.readouterr().err
    assert main(["profile", str(model), "--arena", "45000", "--backing", str(img), "--no-fuse"]) == 0
    unfused = capsys.readouterr().out
    assert "rows" in unfused and "chain" not in unfused
    assert main(["profile", str(model), "--arena", "45000", "--backing", str(img), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "microinterp.profile/1" and doc["out_of_core"] and doc["image_action"] == "reused"
    assert doc["totals"]["tiles"] == sum(len(op["tiles"]) for op in doc["ops"])
    assert main(["profile", str(model), "--arena", "45000", "--backing", str(img), "--json", "--dry-run"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["totals"]["sd_read_bytes"] == doc["totals"]["sd_read_bytes"]
    assert main(["profile", str(model), "--arena", "5000", "--backing", str(img)]) == 1
    assert "smallest arena that works" in capsys.readouterr().err
    assert main(["profile", str(model)]) == 0
    out = capsys.readouterr().out
    assert "in memory" in out and "interpreter overhead" in out
    assert main(["profile", str(model), "--json", "--host-rounds", "3"]) == 0
    host = json.loads(capsys.readouterr().out)["host"]
    assert host["rounds"] == 3 and 0 <= host["overhead"] < 1 and not host["out_of_core"]


def test_demo_runs_a_small_vgg_out_of_core(tmp_path, capsys):
    assert main(["demo", "--size", "32", "--arena", "60000", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "out of core" in out and "outputs identical" in out and "MCU estimate" in out


def test_small_demo(capsys):
    assert main(["demo", "--small"]) == 0
    assert "identical" in capsys.readouterr().out


def test_run_takes_npz_runs_out_of_core_and_as_a_firmware(tmp_path, capsys):
    from microinterp.testing.models import demo_cnn

    model = tmp_path / "m.tflite"
    model.write_bytes(demo_cnn())
    it = mi.Interpreter(str(model))
    name, shape = it.get_input_details()[0]["name"], tuple(it.get_input_details()[0]["shape"])
    x = np.random.default_rng(0).integers(-128, 128, shape).astype(np.int8)
    np.savez(tmp_path / "in.npz", **{name: x})
    it.set_input(x, 0)
    it.invoke()
    expected = it.get_output(0)
    assert main(["run", str(model), "--input", str(tmp_path / "in.npz"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert np.array_equal(np.array(doc["outputs"][0]["values"], np.int8), expected) and not doc["out_of_core"]
    assert main(["run", str(model), "--input", str(tmp_path / "in.npz"), "--arena", "24K",
                 "--backing", str(tmp_path / "sd.img"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["out_of_core"] and np.array_equal(np.array(doc["outputs"][0]["values"], np.int8), expected)
    assert main(["run", str(model), "--input", str(tmp_path / "in.npz"), "--target", "cortex-m4", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["target"]["core"] == "cortex-m4" and doc["arena_used_bytes"] == \
        mi.Interpreter(str(model), target="cortex-m4").arena_used_bytes
    np.savez(tmp_path / "bad.npz", other=x)
    with pytest.raises(SystemExit, match="name them after the inputs"):
        main(["run", str(model), "--input", str(tmp_path / "bad.npz")])



def test_run_and_profile_take_the_same_running_options(tmp_path, capsys):
    """One set of options for every command that runs a model (--arena, --backing, --pools, --key-file, --recover,
    --planner, --target, --mcu, --kernels, --json); the overflow hint names both ways to run in less, as options."""
    from microinterp.testing.models import demo_cnn

    model = tmp_path / "m.tflite"
    model.write_bytes(demo_cnn())
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((1, 64, 64, 3), np.int8))
    img = tmp_path / "sd.img"
    for cmd in ("run", "profile"):
        extra = ["--input", str(x)] if cmd == "run" else ["--host-rounds", "0"]
        assert main([cmd, str(model), "--arena", "45K", "--backing", str(img), "--pools", "2:1:1", "--mcu",
                     "apollo3", *extra]) == 0
        assert main([cmd, str(model), "--planner", "phased", *extra]) == 0
        assert main([cmd, str(model), "--target", "cortex-m55", *extra]) == 0
        capsys.readouterr()
        assert main([cmd, str(model), "--pools", "2:1:1", *extra]) == 1
        assert "pass --backing too" in capsys.readouterr().err
    assert main(["run", str(model), "--input", str(x), "--arena", "20K"]) == 1
    err = capsys.readouterr().err
    assert "--planner phased" in err and "--backing sd.img" in err and err.count("--backing sd.img") == 1
    assert "planner='" not in err and "backing='" not in err          # CLI-shaped, not Python keywords
    for cmd in ("run", "profile"):
        extra = ["--input", str(x)] if cmd == "run" else ["--host-rounds", "0"]
        assert main([cmd, str(model), "--recover", *extra]) == 1          # an out-of-core option alone
        assert "pass --backing too" in capsys.readouterr().err
        assert main([cmd, str(model), "--arena", "45K", "--backing", str(img), "--recover", "--kernels",
                     "reference", "--json", *extra]) == 0
        json.loads(capsys.readouterr().out)
