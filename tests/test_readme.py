"""The README is tested: every shell command and Python block runs (or says why not), and the outputs it shows are
what the commands print.

Markers, an HTML comment on the line before a fenced block (invisible on GitHub):

- ``<!-- readme-test: skip: REASON -->``: the block is not run here; the reason is required.
- ``<!-- readme-test: given: PYTHON -->``: a Python block runs after this line, a shell block after this Python has
  run in its folder (what the prose assumes: ``x``, a model file).
- ``<!-- readme-test: slow -->``: run only with ``-m slow``.
- ``<!-- readme-test: raises: NAME -->``: a Python block whose last line raises ``NAME`` (an error the README shows).
- A fence without a language after a run block is that block's **output**: every number in it must appear in what
  the block printed (``<!-- readme-test: output: host columns vary -->`` drops each line's last number, a host
  time). A block whose first line starts with ``$ `` is a command and its output.

Blocks run in a scratch folder holding links to ``../shared/models/*`` and ``../shared/data/*``, with ``../shared``
beside it, as in a clone; Python blocks in one interpreter per block (``python -c``), shell lines one by one.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from microinterp.kernels import REFERENCE_KERNELS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SHARED = ROOT.parent / "shared"
_MARK = re.compile(r"<!--\s*readme-test:\s*(skip|given|slow|output|raises)\s*:?\s*(.*?)\s*-->")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?")


@dataclass
class Block:
    line: int
    lang: str
    text: str
    marks: dict[str, str]
    output: Block | None = None


def blocks() -> list[Block]:
    """The README's fenced blocks, with their markers; output blocks attached to the block they follow."""
    lines = README.read_text().splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            lang = lines[i][3:].strip()
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            marks = {}
            k = i - 1
            while k >= 0 and (m := _MARK.search(lines[k])):
                marks[m[1]] = m[2]
                k -= 1
            block = Block(i + 1, lang, "\n".join(lines[i + 1:j]), marks)
            if not lang and out and out[-1].lang and out[-1].output is None and "skip" not in out[-1].marks \
                    and not block.text.startswith("$ ") and _follows(lines, out[-1], i):
                out[-1].output = block
            else:
                out.append(block)
            i = j + 1
        else:
            i += 1
    return out


def _follows(lines: list[str], prev: Block, start: int) -> bool:
    """An output block comes right after its command block (blank lines and markers between)."""
    end = prev.line + prev.text.count("\n") + 1
    return all(not ln.strip() or _MARK.search(ln) for ln in lines[end + 1:start])


RUNNABLE = [b for b in blocks() if b.lang in ("bash", "python") or b.text.startswith("$ ")]


def _id(b: Block) -> str:
    return f"line{b.line}"


@pytest.fixture
def scratch(tmp_path):
    if not (SHARED / "models").is_dir():
        pytest.skip("../shared is not beside the repository")
    (tmp_path / "shared").symlink_to(SHARED)
    work = tmp_path / "work"
    work.mkdir()
    for sub in ("models", "data"):
        for f in (SHARED / sub).iterdir():
            if f.is_file() and not (work / f.name).exists():
                (work / f.name).symlink_to(f)
    return work


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def _run(block: Block, cwd: Path) -> str:
    if block.lang == "python":
        code = block.marks.get("given", "") + "\n" + block.text
        r = subprocess.run([sys.executable, "-c", code], check=False, cwd=cwd, env=_env(), capture_output=True, text=True,
                           timeout=600)
        if "raises" in block.marks:
            tail = r.stderr.strip().splitlines()[-1:] or [""]
            assert r.returncode != 0 and tail[0].split(":")[0].endswith(block.marks["raises"]), \
                f"README line {block.line}: expected {block.marks['raises']}\n{r.stderr[-3000:]}"
        else:
            assert r.returncode == 0, f"README line {block.line}:\n{r.stderr[-3000:]}"
        return r.stdout
    if "given" in block.marks:
        r = subprocess.run([sys.executable, "-c", block.marks["given"]], check=False, cwd=cwd, env=_env(),
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"README line {block.line}: its given failed\n{r.stderr[-3000:]}"
    lines = block.text.splitlines()
    if block.text.startswith("$ "):
        lines = [lines[0][2:]]
    printed = []
    for cmd in lines:
        if not cmd.strip() or cmd.lstrip().startswith("#"):
            continue
        argv = shlex.split(cmd, comments=True)
        if argv[0] == "microinterp":         # the installed script; run from this checkout
            argv = [sys.executable, "-m", "microinterp", *argv[1:]]
        elif argv[0] == "python":
            argv[0] = sys.executable
        r = subprocess.run(argv, check=False, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"README line {block.line}: {cmd}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
        printed.append(r.stdout)
    return "\n".join(printed)


def _numbers(text: str, drop_last: bool) -> list[str]:
    found = []
    for line in text.splitlines():
        if line.strip().startswith("...") or line.startswith("$ "):
            continue
        nums = _NUMBER.findall(line)
        found += nums[:-1] if drop_last and len(nums) > 1 else nums
    return found


def test_every_block_runs_or_says_why_not():
    for b in RUNNABLE:
        if "skip" in b.marks:
            assert len(b.marks["skip"]) > 10, f"README line {b.line}: a skipped block needs its reason"


@pytest.mark.parametrize("block", [pytest.param(b, id=_id(b), marks=[pytest.mark.slow] if "slow" in b.marks else [])
                                   for b in RUNNABLE if "skip" not in b.marks])
def test_readme_block(block, scratch):
    printed = _run(block, scratch)
    expected = block.output.text if block.output is not None else (
        "\n".join(block.text.splitlines()[1:]) if block.text.startswith("$ ") else "")
    drop_last = "host" in (block.output or block).marks.get("output", "")
    missing = [n for n in _numbers(expected, drop_last) if n not in printed]
    assert not missing, f"README line {block.line}: figures the README shows but the command did not print: " \
                        f"{missing[:20]}\n--- printed:\n{printed[-3000:]}"


def test_ops_table_matches_registry():
    text = README.read_text()
    table = text.split("<!-- ops-table -->")[1].split("<!-- /ops-table -->")[0]
    listed = set()
    for line in table.splitlines()[2:]:
        cell = line.split("|")[1]
        listed |= {name.strip() for name in cell.split(",") if re.fullmatch(r"\s*[A-Za-z0-9_]+\s*", name)}
    assert listed == set(REFERENCE_KERNELS)


def test_the_first_example_runs_as_pasted(tmp_path):
    """The README's first Python example needs no file a user lacks: it runs in an empty folder (no ../shared)."""
    first = next(b for b in RUNNABLE if b.lang == "python")
    assert "given" not in first.marks and "skip" not in first.marks
    printed = _run(first, tmp_path)
    assert first.output is not None and all(n in printed for n in _numbers(first.output.text, False))
    assert (tmp_path / "demo.tflite").exists()


def test_ci_runs_the_readme_setup_commands():
    """CI (``.ci/run``) runs the README's two set-up commands as they are written: the main job from a plain
    install, then the test command -- so a README that stops working for a new user turns CI red."""
    setup = README.read_text().split("## Set-up", 1)[1].split("\n## ", 1)[0]
    commands = [b.split("\n")[0] for b in re.findall(r"```bash\n(.*?)```", setup, re.DOTALL)][:2]
    assert commands == ["pip install . && microinterp demo", "pip install -e '.[test]' && python -m pytest -q"]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in commands:
        assert any(line.strip() == command for line in ci), f".ci/run does not run {command!r}"
    user = next(i for i, line in enumerate(ci) if line.strip() == commands[0])
    assert any("venv" in line for line in ci[:user]) and "-e" not in commands[0].split()
