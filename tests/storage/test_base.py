"""The storage seam: both shipped backends implement the written protocols."""

from __future__ import annotations

from microinterp.storage.base import Backing, Image, is_path
from microinterp.storage.null import NullStorage
from microinterp.storage.sd import SdImage


def test_the_null_backend_and_its_image_implement_the_protocols():
    backing = NullStorage()
    assert isinstance(backing, Backing) and not is_path(backing)
    image = backing.open(fingerprint="f", weights_bytes=0, activation_bytes=0, table_entries=1)
    assert isinstance(image, Image) and image.weights_ready


def test_an_sd_image_implements_the_image_protocol(tmp_path):
    assert is_path(tmp_path / "sd.img") and is_path("sd.img")
    image = SdImage.open(tmp_path / "sd.img", fingerprint="f", weights_bytes=512, activation_bytes=512,
                         table_entries=2)
    try:
        assert isinstance(image, Image) and not image.weights_ready
    finally:
        image.close()
