"""microinterp report: one self-contained HTML page per model, checked as a document and in headless Chromium."""

from __future__ import annotations

import itertools
import re
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from microinterp import Interpreter
from microinterp.apps.cli import main
from microinterp.apps.report import render
from microinterp.model import load_model
from microinterp.targets import CORES
from microinterp.testing.models import demo_cnn

from ..conftest import MODELS_DIR

SECTIONS = ("headline", "cores", "summary", "graph", "arena", "ops", "deploy")
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
    assert page.rows["cores"] == 1 + len(CORES) * 2    # every supported core, both kernel sets
    for op in model.main.operators:
        assert op.key in text
    assert "kTensorArenaSize" in text and "op (time step)" in text and "offset in the arena" in text
    assert text.count('class="peak"') == 3                                  # per planner: the peak op
    assert text.count('class="tail"') == (3 if Interpreter(model).tail_bytes else 0)      # and the tail
    assert text.count('<g class="op"') == ops and 'id="verdict"' in text and " ms</div>" in text
    assert _edges_through_boxes(text) == []


def _edges_through_boxes(text: str) -> list[tuple[int, str]]:
    """Every (box, path) of the graph where an edge's segment runs through an op's box (its label): the segments'
    points are sampled; a point strictly inside a box (1 px in from its border) is a crossing."""
    svg = text[text.index('aria-label="operator graph"'):]
    svg = svg[:svg.index("</svg>")]
    boxes = [tuple(float(v) for v in m) for m in
             re.findall(r'<g class="op"[^>]*><rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"',
                        svg)]
    bad = []
    for d in re.findall(r'<path class="edge" d="([^"]+)"', svg):
        pts = [tuple(float(v) for v in p.split(",")) for p in re.findall(r"[ML]([\d.\-]+,[\d.\-]+)", d)]
        for (x0, y0), (x1, y1) in itertools.pairwise(pts):
            for k in range(1, 40):
                x, y = x0 + (x1 - x0) * k / 40, y0 + (y1 - y0) * k / 40
                for i, (bx, by, bw, bh) in enumerate(boxes):
                    if bx + 1 < x < bx + bw - 1 and by + 1 < y < by + bh - 1:
                        bad.append((i, d))
    return bad


def test_the_graph_is_layered_and_no_edge_crosses_a_box():
    """A branchy model: parallel ops share a row, skip connections run in lanes beside the boxes, no edge runs
    through a box or its label, and boxes are coloured by op kind with a legend."""
    from microinterp.apps.report.graph import graph_svg, layers
    from microinterp.testing.models import mobilenet_v2

    model = load_model(mobilenet_v2(alpha=0.35, input_size=32, classes=10))
    layer, _ = layers(model)
    assert all(layer[i] > max((layer[j] for j in range(i) if any(t in model.main.operators[j].outputs
                                                                 for t in op.inputs)), default=-1)
               for i, op in enumerate(model.main.operators))
    svg = graph_svg(model, str)
    assert _edges_through_boxes(svg) == [] and 'stroke="#0072B2"' in svg        # skip connections drawn
    kinds = set(re.findall(r'data-kind="(\w+)"', svg))
    assert {"conv", "depthwise", "elementwise"} <= kinds and "depthwise" in svg.split("<svg")[0]


def test_a_model_that_does_not_fit_says_how_it_would_run(tmp_path):
    from microinterp.testing.models import mobilenet_v1

    text = render(mobilenet_v1(input_size=128, classes=10), mcu="apollo3")
    head = text[:text.index('<section id="cores"')]
    assert "does NOT fit on apollo3" in head and "Out of core it runs on apollo3" in head and "--backing" in head
    assert "--planner phased" in head and " ms" in head
    text = render(demo_cnn(), target="cortex-m55")
    assert "fits on cortex-m55@400MHz" in text[:text.index('<section id="cores"')]


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


#: Measures, in the laid-out page, the bottom edge of the verdict, the latency figure and the per-core table.
_PROBE = """<script>
const b = s => document.querySelector(s).getBoundingClientRect().bottom;
document.body.setAttribute("data-bottoms", [b("#verdict"), b(".tile:nth-child(3) .figure"), b("table.cores")].join());
</script>"""


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
    # the first screen (the top 900 px of a 1400 px wide window) shows the verdict, the latency in ms and the arena
    # of every core: a copy of the page measures where the browser laid them out
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", _PROBE + "</body>"))
    dom = subprocess.run([*flags[:-1], "--window-size=1400,900", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=120, check=False)
    m = re.search(r'data-bottoms="([^"]+)"', dom.stdout)
    assert m, dom.stdout[-2000:]
    verdict, latency, cores = (float(v) for v in m[1].split(","))
    assert 0 < verdict < latency < 900 and 0 < cores <= 900, m[1]
    text = dom.stdout[:dom.stdout.index('<section id="summary"')]
    assert re.search(r"(fits|does NOT fit|NOT deployable) on", text) and re.search(r"[\d,.]+ ms</div>", text)
    assert all(f"<td class=\"l\">{c}</td>" in text for c in ("cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33",
                                                              "cortex-m55"))
    shot = tmp_path / "report.png"
    r = subprocess.run([*flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True,
                       timeout=120, check=False)
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    width, height, spread = _png_size_and_spread(Path(shot).read_bytes())
    assert (width, height) == (1400, 2400) and spread > 50          # not a blank page


def test_a_model_that_does_not_fit_shows_the_arena_after_optimize_per_core(tmp_path):
    from microinterp.apps.report import render
    from microinterp.testing.models import mobilenet_v2

    html = render(mobilenet_v2(alpha=0.35, input_size=96, classes=10), mcu="cortex-m4@80MHz,sram=64K")
    assert "after optimize" in html and "microinterp optimize MODEL -o MODEL_optimized.tflite --target" in html
