"""I/O faults on the SD image: every failed write, read, sync and resize is a StorageError naming the file, the SD
offset (for reads and writes) and the errno; nothing written before a failed write or sync is trusted; the image
reopens; and no run ever returns a wrong output.

The faults are injected into the storage modules' view of ``os`` (:class:`FaultyOs`, in ``sd`` and ``device``): the ``n``-th call of one
function raises ``OSError(errno)``. A real trigger runs too: a file-size limit (``RLIMIT_FSIZE``) below the image
size makes the kernel refuse to grow the file (EFBIG).
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from microinterp import Interpreter
from microinterp.errors import StorageError
from microinterp.storage import device as device_module
from microinterp.storage import sd as sd_module
from microinterp.testing.models import demo_cnn

CALLS = ("pwritev", "preadv", "pread", "fsync", "ftruncate")
ERRNOS = (errno.EIO, errno.ENOSPC, errno.EFBIG)
ARENA = 24 * 1024          # demo_cnn pages at this arena


class _Faulty:
    """``with _Faulty(faulty_os):`` -- the SD image and its device see ``faulty_os`` as ``os`` inside the block."""

    def __init__(self, faulty):
        self.faulty = faulty

    def __enter__(self):
        self.saved = sd_module.os, device_module.os
        sd_module.os = device_module.os = self.faulty
        return self.faulty

    def __exit__(self, *exc):
        sd_module.os, device_module.os = self.saved


class FaultyOs:
    """``os`` as the SD image module sees it, with the ``nth`` call (1-based) of ``name`` failing with ``code``."""

    def __init__(self, name: str, nth: int, code: int):
        self.name, self.nth, self.code, self.calls = name, nth, code, 0

    def __getattr__(self, attr):
        real = getattr(os, attr)
        if attr != self.name:
            return real

        def call(*args, **kwargs):
            self.calls += 1
            if self.calls == self.nth:
                raise OSError(self.code, os.strerror(self.code))
            return real(*args, **kwargs)
        return call


@pytest.fixture(scope="module")
def model_and_reference():
    model = demo_cnn()
    x = np.random.default_rng(0).integers(-128, 128, Interpreter(model).get_input_details()[0]["shape"]) \
        .astype(np.int8)
    ref = Interpreter(model)
    ref.set_input(x, 0)
    ref.invoke()
    return model, x, ref.get_output(0)


def _run(model, x, path):
    with Interpreter(model, arena=ARENA, backing=path) as it:
        assert it.out_of_core
        it.set_input(x, 0)
        it.invoke()
        return it.get_output(0)


def _calls_made(model, x, path, name, reused: bool) -> int:
    if reused:
        _run(model, x, path)
    with _Faulty(FaultyOs(name, 0, errno.EIO)) as counter:
        _run(model, x, path)
    return counter.calls


@pytest.mark.parametrize("reused", [False, True], ids=["new image", "reused image"])
@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize("code", ERRNOS)
def test_every_injected_fault_is_a_storage_error_and_the_image_reopens(tmp_path, model_and_reference, name, code,
                                                                        reused):
    model, x, expected = model_and_reference
    path = str(tmp_path / "sd.img")
    total = _calls_made(model, x, str(tmp_path / "count.img"), name, reused)
    if total == 0:                  # a new image reads no header; a reused one neither resizes nor syncs
        assert (name, reused) in {("pread", False), ("fsync", True), ("ftruncate", True)}, name
        return
    for nth in sorted({n for n in (1, 2, (total + 1) // 2, total) if n <= total}):
        if os.path.exists(path):
            os.unlink(path)
        if reused:
            _run(model, x, path)
        with _Faulty(FaultyOs(name, nth, code)), pytest.raises(StorageError) as e:
            _run(model, x, path)
        err = e.value
        assert err.errno == code and err.filename == path, str(err)
        assert path in str(err) and errno.errorcode[code] in str(err)
        if name in ("pwritev", "preadv", "pread"):
            assert isinstance(err.offset, int) and f"SD offset {err.offset}" in str(err)
        # the image reopens (rebuilt or reused, as its header says), and the output is exact
        assert np.array_equal(_run(model, x, path), expected)
        assert np.array_equal(_run(model, x, path), expected)


def test_a_failed_write_poisons_the_open_image(tmp_path):
    img = sd_module.SdImage.open(tmp_path / "sd.img", fingerprint="f", weights_bytes=4096, activation_bytes=4096,
                                 table_entries=4)
    with _Faulty(FaultyOs("pwritev", 1, errno.EIO)), pytest.raises(StorageError, match="EIO"):
        img.write("activations", 0, np.ones(100, np.uint8), key="a")
    with pytest.raises(StorageError, match="cannot be trusted"):
        img.read("activations", 0, 100, key="a")
    img.close()


def test_a_file_size_limit_below_the_image_is_a_storage_error(tmp_path, model_and_reference):
    """RLIMIT_FSIZE: the kernel refuses to grow the file past the limit (EFBIG; Python ignores SIGXFSZ)."""
    script = textwrap.dedent(f"""
        import resource, sys
        import numpy as np
        from microinterp import Interpreter
        from microinterp.errors import StorageError
        from microinterp.testing.models import demo_cnn
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        try:
            Interpreter(demo_cnn(), arena={ARENA}, backing=sys.argv[1]).invoke()
        except StorageError as e:
            print("StorageError", e.errno, e.filename)
    """)
    path = str(tmp_path / "sd.img")
    out = subprocess.run([sys.executable, "-c", script, path], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["StorageError", str(errno.EFBIG), path], out.stdout + out.stderr


def test_special_files_and_directories_are_refused(tmp_path):
    for path in ("/dev/null", str(tmp_path)):
        with pytest.raises(StorageError, match="not a regular file|cannot open"):
            sd_module.SdImage.open(path, fingerprint="f", weights_bytes=10, activation_bytes=10, table_entries=1)
    assert os.path.exists("/dev/null")


def test_a_collected_interpreter_releases_its_image(tmp_path, model_and_reference):
    import gc

    model, x, expected = model_and_reference
    path = str(tmp_path / "sd.img")
    it = Interpreter(model, arena=ARENA, backing=path)
    with pytest.raises(StorageError, match="in use"):
        Interpreter(model, arena=ARENA, backing=path)
    del it
    gc.collect()
    assert np.array_equal(_run(model, x, path), expected)       # the lock went with the interpreter


def test_a_failed_open_never_closes_the_fd_number_twice(tmp_path, monkeypatch):
    """The half-built image of a failed open was collected later and closed its fd number again -- by then the
    number of a newly opened file (a reopened image): EBADF on the new one (a flaky fault-injection failure)."""
    import gc

    def broken(self):
        raise StorageError("injected")

    monkeypatch.setattr(sd_module.SdImage, "_attach", broken)
    try:
        sd_module.SdImage.open(tmp_path / "a.img", fingerprint="f", weights_bytes=10, activation_bytes=10,
                               table_entries=1)
    except StorageError as e:
        kept = e                                   # its traceback keeps the half-built image alive
    fd = os.open(tmp_path / "b", os.O_RDWR | os.O_CREAT)      # the lowest free number: the one just closed
    try:
        del kept
        gc.collect()
        os.fstat(fd)                               # still open
    finally:
        os.close(fd)
