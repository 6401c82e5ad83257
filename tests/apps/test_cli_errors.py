"""Every command, given bad arguments, ends with a one-line message and a non-zero exit: no traceback, no internal
error. Files are checked before long work starts (an output folder that does not exist is a usage error)."""

from __future__ import annotations

import numpy as np
import pytest

from microinterp.apps.cli import main
from microinterp.testing.models import demo_cnn


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    (d / "m.tflite").write_bytes(demo_cnn())
    (d / "garbage.tflite").write_bytes(b"not a model at all" * 4)
    np.save(d / "x.npy", np.zeros((1, 64, 64, 3), np.int8))
    np.save(d / "xs.npy", np.zeros((4, 64, 64, 3), np.int8))
    np.save(d / "xf.npy", np.zeros((4, 64, 64, 3), np.float32))
    np.save(d / "wrong.npy", np.zeros((1, 3), np.int8))
    np.save(d / "labels3.npy", np.zeros(3, np.int64))
    np.save(d / "flabels.npy", np.zeros(4, np.float32))
    (d / "key.bin").write_bytes(b"short")
    (d / "a_file").write_text("x")
    return d


def _cases(d):
    m, g, missing, nodir = str(d / "m.tflite"), str(d / "garbage.tflite"), str(d / "nope.tflite"), \
        str(d / "no" / "such" / "folder" / "out")
    x, xs = str(d / "x.npy"), str(d / "xs.npy")
    cases = []
    for cmd in ("info", "plan", "deploy", "report", "analyze", "profile", "run", "schedule", "sweep"):
        cases += [[cmd, missing], [cmd, g]]
    cases += [["optimize", missing, "-o", str(d / "o.tflite")], ["optimize", g, "-o", str(d / "o.tflite")],
              ["eval", missing, "--inputs", xs], ["eval", g, "--inputs", xs]]
    cases += [
        ["plan", m, "--arena", "abc"], ["plan", m, "--arena", "-5"], ["plan", m, "--arena", "100"],
        ["plan", m, "--target", "cortex-m0"], ["plan", m, "--kernels", "fast"], ["plan", m, "--planner", "magic"],
        ["plan", m, "--planner", "all", "--mcu", "stm32f999"],
        ["eval", m, "--inputs", str(d / "none.npy")], ["eval", m, "--inputs", xs, "--labels", str(d / "none.npy")],
        ["eval", m, "--inputs", xs, "--labels", str(d / "labels3.npy")],
        ["eval", m, "--inputs", xs, "--labels", str(d / "flabels.npy")],
        ["eval", m, "--inputs", xs, "--output", nodir + ".npy"], ["eval", m, "--inputs", str(d / "xf.npy")],
        ["eval", m, "--inputs", str(d / "wrong.npy")], ["eval", m, "--inputs", str(d / "m.tflite")],
        ["deploy", m, "--mcu", "cortex-m4@48"], ["deploy", m, "--mcu", "stm32f999"], ["deploy", m, "--target", "m9"],
        ["deploy", m, "--kernels", "fast"],
        ["report", m, "-o", nodir + ".html"], ["report", m, "-o", str(d)], ["report", m, "--arena", "x"],
        ["report", m, "--mcu", "nope"],
        ["optimize", m, "-o", nodir + ".tflite"], ["optimize", m],
        ["run", m, "--input", str(d / "none.npy")], ["run", m, "--input", x, "--output", nodir + ".npy"],
        ["run", m, "--input", str(d / "wrong.npy")], ["run", m, "--input", x, "--arena", "1K"],
        ["run", m, "--input", x, "--pools", "1:2"], ["run", m, "--input", x, "--pools", "2:1:1"],
        ["run", m, "--input", x, "--arena", "40K", "--backing", str(d / "sd.img"), "--key-file", str(d / "key.bin")],
        ["run", m, "--input", x, "--arena", "40K", "--backing", str(d / "a_file")],
        ["run", m, "--input", x, "--backing", nodir + ".img", "--arena", "40K"],
        ["run", m, "--input", x, "--mcu", "cortex-m4@fast"], ["run", m, "--input", x, "--target", "cortex-m0"],
        ["analyze", m, "--mcu", "nope"], ["analyze", m, "--kernels", "fast"],
        ["profile", m, "--checksum", "md5", "--arena", "40K", "--backing", str(d / "sd2.img")],
        ["profile", m, "--tile", "1", "--arena", "40K", "--backing", str(d / "sd3.img")],
        ["profile", m, "--host-rounds", "-3"],
        ["demo", "--workdir", nodir], ["demo", "--size", "0"], ["demo", "--arena", "1K", "--size", "32"],
        ["listen", str(d / "none.wav")], ["listen", str(d / "x.npy")], ["listen", x, "--models", nodir],
        ["lm", "--prompt", "a,b"], ["lm", "--steps", "-1"], ["lm", "--mcu", "nope"], ["lm", "--save", nodir],
        ["lm", "--layers", "0"], ["lm", "--context", "2", "--steps", "40"],
        ["schedule", "gen:nope"], ["schedule", m, "--pools", "1:2"], ["schedule", m, "--arena", "1K"],
        ["schedule", m, "--mcu", "nope"], ["schedule", m, "--gantt", nodir + ".png"],
        ["sweep", m, "--variants", "nope"], ["sweep", m, "--out", str(d / "a_file")],
        ["sweep", m, "--out", nodir], ["sweep", m, "--arena", "x"],
    ]
    return cases


def test_no_command_ends_in_a_traceback(files, capsys):
    failures = []
    for argv in _cases(files):
        try:
            code = main(argv)
        except SystemExit as e:          # argparse's usage errors and the commands' own messages
            code = e.code if isinstance(e.code, int) else 1
            if not isinstance(e.code, int) and e.code:
                print(e.code)
        except BaseException as e:  # noqa: BLE001 - what this test is looking for
            failures.append((argv, f"{type(e).__name__}: {e}"))
            continue
        out, err = capsys.readouterr()
        text = out + err
        if code == 0 or "Traceback" in text or "internal error" in text or not text.strip():
            failures.append((argv, code, text[-300:]))
    assert not failures, "\n".join(map(str, failures))


def test_the_messages_say_what_to_do(files, capsys):
    d = files
    m, xs = str(d / "m.tflite"), str(d / "xs.npy")

    def err(argv):
        try:
            main(argv)
        except SystemExit:
            pass
        return capsys.readouterr().err

    assert "add --quantize" in err(["eval", m, "--inputs", str(d / "xf.npy")])
    assert "has 3 labels for 4 samples" in err(["eval", m, "--inputs", xs, "--labels", str(d / "labels3.npy")])
    assert "no such file" in err(["eval", m, "--inputs", xs, "--labels", str(d / "missing.npy")])
    for argv in (["report", m, "-o", str(d / "no" / "r.html")], ["optimize", m, "-o", str(d / "no" / "o.tflite")],
                 ["run", m, "--input", str(d / "x.npy"), "--output", str(d / "no" / "y.npy")]):
        assert "does not exist (create it first)" in err(argv), argv
    text = err(["run", m, "--input", str(d / "x.npy"), "--arena", "1K"])
    assert "--planner phased" in text and "--backing sd.img" in text
    assert "choose cmsis-nn or reference" in err(["plan", m, "--kernels", "fast"])
    assert "needs a unit" in err(["deploy", m, "--mcu", "cortex-m4@48"])
    # a board spec in a message stays a spec (its facts are not the command's --flash)
    text = err(["deploy", m, "--mcu", "cortex-m7@480MHz,wait=4"])
    assert "unknown board fact 'wait=4'" in text and "cortex-m7@480MHz,sram=1M,flash=2M,flash_ws=4" in text, text
