"""The micro_speech pipeline, as TFLM's example runs it (``micro/examples/micro_speech``, its ``evaluate.py``).

A 16 kHz, 16-bit mono clip is cut into 30 ms windows (480 samples) with a 20 ms stride (320 samples); each window
goes through the audio preprocessor model (TFLM's signal library: window, FFT, energy, mel filter bank, noise
reduction, PCAN, log) **in order on one interpreter**, whose noise estimate carries over between windows; the
49 x 40 int8 features of a 1 s clip go through the micro_speech classifier, whose 4 scores name the label.
:func:`features_batch` computes the features of many clips at once, each clip a stream of its own.

:func:`listen` returns the features, the scores, the label and the MCU cycle estimate of each stage; ``microinterp
listen FILE.wav`` prints them.
"""

from __future__ import annotations

import os
import wave
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..interpreter import Interpreter

SAMPLE_RATE = 16000
WINDOW = 480
STRIDE = 320
FRAMES = 49
LABELS = ("silence", "unknown", "yes", "no")


@dataclass
class Heard:
    """What :func:`listen` found: features (49 x 40 int8), scores (4 int8), the label and per-stage figures."""

    features: np.ndarray
    scores: np.ndarray
    label: str
    cycles: dict[str, int]


def read_wav(path: str | os.PathLike) -> np.ndarray:
    """The samples of a 16 kHz, 16-bit mono WAV file (``InputError`` for anything else)."""
    try:
        with wave.open(os.fspath(path), "rb") as w:
            if w.getnchannels() != 1 or w.getsampwidth() != 2 or w.getframerate() != SAMPLE_RATE:
                raise InputError(f"{path}: need 16 kHz 16-bit mono, got {w.getframerate()} Hz, "
                                 f"{8 * w.getsampwidth()}-bit, {w.getnchannels()} channel(s)")
            return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.int16)
    except (wave.Error, EOFError) as e:
        raise InputError(f"{path}: not a readable WAV file ({e})") from None


def windows(samples: np.ndarray, frames: int = FRAMES) -> np.ndarray:
    """``frames`` windows of 480 samples, 320 apart (a short clip is zero-padded at the end)."""
    return _window_views([samples], frames)[0].copy()


def _window_views(clips: Sequence[np.ndarray], frames: int) -> np.ndarray:
    """``[clips, frames, 480]``: every clip's windows as views of one zero-padded copy of the samples they reach."""
    need = (frames - 1) * STRIDE + WINDOW
    samples = np.zeros((len(clips), need), np.int16)
    for row, c in zip(samples, clips):
        c = np.asarray(c, np.int16).reshape(-1)[:need]
        row[:c.size] = c
    return np.lib.stride_tricks.sliding_window_view(samples, WINDOW, axis=1)[:, ::STRIDE]


def features(preprocessor: Interpreter, samples: np.ndarray) -> np.ndarray:
    """The 49 x 40 int8 feature map: every window through ``preprocessor`` in order (state carries over)."""
    rows = []
    for w in windows(samples):
        preprocessor.set_input(w.reshape(preprocessor.get_input_details(0)["shape"]), 0)
        preprocessor.invoke()
        rows.append(preprocessor.get_output(0).reshape(-1))
    return np.stack(rows)


def features_batch(preprocessor: str | os.PathLike | bytes, clips: Sequence[np.ndarray], streams: int = 256) -> np.ndarray:
    """The 49 x 40 feature maps of many clips (``[clips, 49, 40]``): each clip's windows in order through the
    preprocessor with a noise estimate of its own, ``streams`` clips at a time as streams of one model
    (:class:`~microinterp.streams.Streams`) -- what :func:`features` gives clip by clip on a fresh interpreter, bit
    for bit, at a fraction of the time per window (256 streams: the FFT's butterflies then run over the streams,
    ``docs/speed.md``)."""
    from ..streams import run_streams

    if not len(clips):
        return np.zeros((0, FRAMES, 0), np.int8)
    out = run_streams(preprocessor, _window_views(clips, FRAMES), streams=streams)
    return out.reshape(len(clips), FRAMES, -1)


def listen(path_or_samples: Any, preprocessor: str | os.PathLike | bytes, classifier: str | os.PathLike | bytes,
           mcu: str = "stm32f746") -> Heard:
    """Run a clip through the audio preprocessor and the micro_speech classifier, as TFLM's example does."""
    samples = path_or_samples if isinstance(path_or_samples, np.ndarray) else read_wav(path_or_samples)
    pre = Interpreter(preprocessor, mcu=mcu)
    feats = features(pre, samples)
    clf = Interpreter(classifier, mcu=mcu)
    x = feats.reshape(clf.get_input_details(0)["shape"]).astype(clf.get_input_details(0)["dtype"])
    clf.set_input(x, 0)
    clf.invoke()
    scores = clf.get_output(0).reshape(-1)
    per_window = int(sum(r.total_cycles for r in pre.profile))
    cycles = {"preprocessor per window": per_window, "preprocessor, 49 windows": FRAMES * per_window,
              "classifier": int(sum(r.total_cycles for r in clf.profile))}
    return Heard(feats, scores, LABELS[int(np.argmax(scores))], cycles)


def listen_many(paths_or_samples: Sequence[Any], preprocessor: str | os.PathLike | bytes,
                classifier: str | os.PathLike | bytes, mcu: str = "stm32f746") -> list[Heard]:
    """:func:`listen` for many clips: their features as streams (:func:`features_batch`), their scores in one
    batched classifier run (``invoke_batch``) -- the same features, scores and labels as :func:`listen` on each
    (no cycle figures: :func:`listen` gives them per clip)."""
    clips = [c if isinstance(c, np.ndarray) else read_wav(c) for c in paths_or_samples]
    if not clips:
        return []
    feats = features_batch(preprocessor, clips)
    clf = Interpreter(classifier, mcu=mcu)
    detail = clf.get_input_details(0)
    xs = feats.reshape(len(clips), *detail["shape"][1:]).astype(detail["dtype"])
    scores = np.asarray(clf.invoke_batch(xs)).reshape(len(clips), -1)
    return [Heard(f, s, LABELS[int(np.argmax(s))], {}) for f, s in zip(feats, scores)]


def default_models(models_dir: str | os.PathLike) -> tuple[Path, Path]:
    d = Path(models_dir)
    return d / "audio_preprocessor_int8.tflite", d / "micro_speech_quantized.tflite"
