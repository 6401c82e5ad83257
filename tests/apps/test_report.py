"""microinterp report: one self-contained HTML page per model, checked as a document and in headless Chromium."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from microinterp.apps.cli import main
from microinterp.apps.report import render
from microinterp.model import load_model
from microinterp.testing.models import demo_cnn

from ..conftest import MODELS_DIR

SECTIONS = ("summary", "graph", "arena", "ops", "deploy")
ZOO = sorted(MODELS_DIR.glob("*.tflite")) if MODELS_DIR.is_dir() else []


class _Page(HTMLParser):
    """Section ids, SVG elements, table rows per section, and every URL the page would fetch."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.svgs = 0
        self.rows: dict[str, int] = {}
        self.fetches: list[str] = []
        self._section = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "section":
            self._section = a.get("id") or ""
            self.sections.append(self._section)
        elif tag == "svg":
            self.svgs += 1
        elif tag == "tr":
            self.rows[self._section] = self.rows.get(self._section, 0) + 1
        for key in ("src", "href"):
            if a.get(key) and not a[key].startswith("#"):
                self.fetches.append(a[key])


def _parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    return page


def _check(text: str, model) -> None:
    page = _parse(text)
    ops = len(model.main.operators)
    assert page.sections == list(SECTIONS)
    assert page.fetches == [] and "http" not in text.split("<body>")[0]      # self-contained: nothing to fetch
    assert page.svgs >= 4                     # the graph and one arena per planner
    assert page.rows["graph"] == ops + 1 and page.rows["ops"] == ops + 2      # header (+ total)
    for op in model.main.operators:
        assert op.key in text
    assert "kTensorArenaSize" in text and "op (time step)" in text and "offset in the arena head" in text


def test_a_built_model_renders_every_section(tmp_path, capsys):
    data = demo_cnn()
    text = render(data, arena=40_000)
    _check(text, load_model(data))
    assert "Out of core in a 40,000-byte arena" in text
    model = tmp_path / "m.tflite"
    model.write_bytes(data)
    assert main(["report", str(model), "-o", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").read_text() == render(model, arena=512_000)


@pytest.mark.parametrize("path", ZOO, ids=[p.stem for p in ZOO])
def test_every_zoo_model(path):
    _check(render(path), load_model(path))


def _png_size_and_spread(data: bytes) -> tuple[int, int, int]:
    """Width, height and the number of distinct byte values of the decompressed image data."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    idat, at = b"", 8
    while at < len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"IDAT":
            idat += data[at + 8:at + 8 + n]
        at += 12 + n
    return width, height, len(set(zlib.decompress(idat)))


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return name
    pytest.skip("no Chromium on this machine (.ci/run installs Debian's chromium)")


@pytest.mark.parametrize("path", ZOO, ids=[p.stem for p in ZOO])
def test_the_report_opens_in_headless_chromium(path, tmp_path):
    """Chromium loads the page (no network), lays it out with every section, and the screenshot is a picture."""
    browser = _chromium()
    page = tmp_path / "report.html"
    page.write_text(render(path))
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--disable-extensions",
             "--window-size=1400,2400"]
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120,
                         check=False)
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = _parse(dom.stdout)
    assert rendered.sections == list(SECTIONS) and rendered.svgs >= 4
    shot = tmp_path / "report.png"
    r = subprocess.run([*flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True,
                       timeout=120, check=False)
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    width, height, spread = _png_size_and_spread(Path(shot).read_bytes())
    assert (width, height) == (1400, 2400) and spread > 50          # not a blank page
