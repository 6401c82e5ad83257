"""The distributions a user installs: the wheel and the sdist hold every file of the package, Python or not.

An editable install reads the source tree, so a data file the wheel leaves out (the cost model's coefficients)
only shows on a plain ``pip install .``; this builds both distributions as ``pip`` and ``python -m build`` do and
compares their file lists with the package's files.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def project_files() -> list[str]:
    """The project's files as a fresh clone has them: what git tracks or would (not what it ignores), relative
    paths; outside a checkout, every file but caches and build output."""
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        skip = {"__pycache__", "build", "dist", ".git"}
        out = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
               if p.is_file() and not skip & set(p.parts) and not any(x.endswith(".egg-info") for x in p.parts)]
    return [f for f in out if (ROOT / f).is_file()]


def package_files() -> set[str]:
    files = {f for f in project_files() if f.startswith("microinterp/")}
    assert files, "no package files found"
    return files


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    import build  # noqa: F401  (the test extra installs it: a missing one must fail, not skip)

    # a clean copy: build output and egg-info left in the working tree (an editable install writes one) feed
    # setuptools' file lists and would hide a file the configuration leaves out
    src = tmp_path_factory.mktemp("src")
    for f in project_files():
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, src / f)
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(src)],
                   check=True, capture_output=True)
    wheel, = out.glob("microinterp-*.whl")
    sdist, = out.glob("microinterp-*.tar.gz")
    return wheel, sdist


def test_the_wheel_holds_every_package_file(dists):
    wheel, _ = dists
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(package_files() - names)
    assert not missing, f"left out of the wheel: {missing}"
    assert "microinterp/cost/instructions.json" in names


def test_the_sdist_holds_every_package_file(dists):
    _, sdist = dists
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    missing = sorted(package_files() - names)
    assert not missing, f"left out of the sdist: {missing}"
