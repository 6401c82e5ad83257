"""TFLM's micro_speech pipeline end to end: the audio preprocessor (signal library) frame by frame on one
interpreter, then the micro_speech classifier -- features, scores and labels equal to the wheel's, on the two test
clips and on synthesized ones; ``reset()`` clears the noise estimate; ``microinterp listen``."""

from __future__ import annotations

import numpy as np
import pytest
from flatbuffers import flexbuffers

from microinterp import Interpreter
from microinterp.apps.audio import FRAMES, LABELS, features_batch, listen, listen_many, read_wav, windows
from microinterp.apps.cli import main
from microinterp.testing.tflm import TflmRunner

from ...conftest import DATA_DIR, zoo_model

pytest.importorskip("tflite_micro")


def wheel_features(pre_path, samples: np.ndarray) -> np.ndarray:
    runner = TflmRunner(pre_path, preserve_all=False)
    rows = []
    for w in windows(samples):
        runner.run([w.reshape(1, -1)])
        rows.append(runner.output(0).reshape(-1))
    return np.stack(rows)


def wheel_scores(clf_path, feats: np.ndarray) -> np.ndarray:
    runner = TflmRunner(clf_path, preserve_all=False)
    runner.run([feats.reshape(1, -1).astype(np.int8)])
    return runner.output(0).reshape(-1)


def synthesized(kind: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    t = np.arange(16000) / 16000
    if kind == "tone":
        return (8000 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)
    if kind == "chirp":
        return (12000 * np.sin(2 * np.pi * (200 + 3000 * t) * t)).astype(np.int16)
    if kind == "noise":
        return rng.integers(-3000, 3000, size=16000).astype(np.int16)
    if kind == "loud":
        return rng.integers(-32768, 32768, size=16000).astype(np.int16)
    return np.zeros(16000, np.int16)


@pytest.mark.parametrize("model", ["audio_preprocessor_int8.tflite", "audio_preprocessor_float.tflite"])
def test_preprocessor_every_op_of_the_first_frames_matches_the_wheel(model):
    """Every op's output tensor, frame after frame on one interpreter each. SignalEnergy writes only bins
    [start_index, end_index); the others hold whatever the arena held (in the wheel: leftovers that vary) and the
    CAST after it copies them, so those two are compared in that range only (the model's STRIDED_SLICE then keeps
    just that range)."""
    pre = zoo_model(model)
    mine, wheel = Interpreter(pre, preserve_all_tensors=True), TflmRunner(pre)
    graph = mine.model.main
    samples = read_wav(DATA_DIR / "yes_1000ms.wav")
    for w in windows(samples)[:8]:
        mine.set_input(w.reshape(1, -1), 0)
        mine.invoke()
        wheel.run([w.reshape(1, -1)])
        masked: dict[int, slice] = {}
        for op in graph.operators:
            written = slice(None)
            if op.key == "SignalEnergy":
                o = flexbuffers.Loads(bytes(op.custom_options))
                written = slice(o["start_index"], o["end_index"])
                masked[op.outputs[0]] = written
            elif op.key == "CAST" and op.inputs[0] in masked:
                written = masked[op.outputs[0]] = masked[op.inputs[0]]
            for ti in op.outputs:
                a, b = mine.get_tensor(ti).reshape(-1)[written], wheel.tensor(ti).reshape(-1)[written]
                assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), (op.index, op.key)


@pytest.mark.parametrize("clip,label", [("yes", "yes"), ("no", "no")])
def test_clips_give_the_wheels_features_scores_and_label(clip, label):
    pre, clf = zoo_model("audio_preprocessor_int8.tflite"), zoo_model("micro_speech_quantized.tflite")
    samples = read_wav(DATA_DIR / f"{clip}_1000ms.wav")
    heard = listen(samples, pre, clf)
    np.testing.assert_array_equal(heard.features, wheel_features(pre, samples))
    np.testing.assert_array_equal(heard.scores, wheel_scores(clf, heard.features))
    assert heard.label == label and heard.features.shape == (FRAMES, 40)


@pytest.mark.parametrize("kind", ["tone", "chirp", "noise", "loud", "silence"])
def test_synthesized_clips_match_the_wheel(kind):
    pre, clf = zoo_model("audio_preprocessor_int8.tflite"), zoo_model("micro_speech_quantized.tflite")
    samples = synthesized(kind)
    heard = listen(samples, pre, clf)
    np.testing.assert_array_equal(heard.features, wheel_features(pre, samples))
    np.testing.assert_array_equal(heard.scores, wheel_scores(clf, heard.features))
    assert heard.label in LABELS


def test_float_preprocessor_state_carries_over_like_the_wheel():
    pre = zoo_model("audio_preprocessor_float.tflite")
    samples = read_wav(DATA_DIR / "no_1000ms.wav")
    it = Interpreter(pre)
    rows = []
    for w in windows(samples):
        it.set_input(w.reshape(1, -1), 0)
        it.invoke()
        rows.append(it.get_output(0).reshape(-1).copy())
    np.testing.assert_array_equal(np.stack(rows), wheel_features(pre, samples))


def test_reset_clears_the_noise_estimate():
    pre = zoo_model("audio_preprocessor_int8.tflite")
    samples = read_wav(DATA_DIR / "yes_1000ms.wav")
    it = Interpreter(pre)
    first = []
    for w in windows(samples)[:5]:
        it.set_input(w.reshape(1, -1), 0)
        it.invoke()
        first.append(it.get_output(0).copy())
    it.reset()
    for k, w in enumerate(windows(samples)[:5]):
        it.set_input(w.reshape(1, -1), 0)
        it.invoke()
        np.testing.assert_array_equal(it.get_output(0), first[k])


def test_listen_command(capsys):
    zoo_model("micro_speech_quantized.tflite")
    models = zoo_model("audio_preprocessor_int8.tflite").parent
    assert main(["listen", str(DATA_DIR / "yes_1000ms.wav"), "--models", str(models)]) == 0
    out = capsys.readouterr().out
    assert "yes_1000ms.wav: yes" in out and "classifier" in out and "cycles" in out
    assert main(["listen", str(DATA_DIR / "no_1000ms.wav"), "--models", str(models), "--json"]) == 0
    assert '"label": "no"' in capsys.readouterr().out


def test_listen_to_several_clips_gives_each_its_own_label(capsys):
    """``microinterp listen yes.wav no.wav yes.wav``: the clips run together as streams and the classifier once in a
    batch; each label and score is what ``listen`` gives that clip alone."""
    clf = zoo_model("micro_speech_quantized.tflite")
    pre = zoo_model("audio_preprocessor_int8.tflite")
    wavs = [str(DATA_DIR / f"{w}_1000ms.wav") for w in ("yes", "no", "yes")]
    assert main(["listen", *wavs, "--models", str(pre.parent)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split(":")[1].split()[0] for line in lines] == ["yes", "no", "yes"]
    many = listen_many(wavs, pre, clf)
    for wav, heard in zip(wavs, many):
        alone = listen(wav, pre, clf)
        np.testing.assert_array_equal(heard.features, alone.features)
        np.testing.assert_array_equal(heard.scores, alone.scores)
    assert main(["listen", *wavs[:2], "--models", str(pre.parent), "--json"]) == 0
    assert '"label": "no"' in capsys.readouterr().out


def test_listen_refuses_a_non_wav(tmp_path, capsys):
    bad = tmp_path / "x.wav"
    bad.write_bytes(b"not a wav file at all")
    models = zoo_model("audio_preprocessor_int8.tflite").parent
    assert main(["listen", str(bad), "--models", str(models)]) == 1
    assert "InputError" in capsys.readouterr().err


@pytest.mark.parametrize("model", ["audio_preprocessor_int8.tflite", "audio_preprocessor_float.tflite"])
def test_preprocessor_arena_head_is_the_wheels(model):
    from microinterp.testing.tflm import tflm_arena_head

    path = zoo_model(model)
    assert Interpreter(path).head_bytes == tflm_arena_head(path)     # the RFFT work area is a planned scratch


@pytest.mark.parametrize("model", ["audio_preprocessor_int8.tflite", "audio_preprocessor_float.tflite"])
def test_features_of_many_clips_as_streams_equal_the_wheel_clip_by_clip(model):
    """``features_batch``: seven clips (the two recordings, a tone, a chirp, noise, full-scale noise, silence),
    three streams at a time, each with its own noise estimate: every clip's features are the wheel's."""
    pre = zoo_model(model)
    clips = [read_wav(DATA_DIR / "yes_1000ms.wav"), read_wav(DATA_DIR / "no_1000ms.wav")]
    clips += [synthesized(kind) for kind in ("tone", "chirp", "noise", "loud", "silence")]
    got = features_batch(pre, clips, streams=3)
    assert got.shape[:2] == (len(clips), FRAMES)
    for k, clip in enumerate(clips):
        np.testing.assert_array_equal(got[k], wheel_features(pre, clip))
