"""Encrypted SD images: every record sealed with AES-256-GCM (the optional ``crypto`` extra, the ``cryptography``
package).

* **Keys.** The user's 32-byte key never encrypts a record itself: each image has a random 16-byte id (in its
  header) and its records are sealed under ``HKDF-SHA256(key, salt=image id, info="microinterp sd records")``, so two
  images under one key never share a (key, nonce) pair.
* **Nonces.** 12 bytes: 4 zero bytes and a 64-bit counter that every record write takes the next value of -- never
  reused under an image key: the header reserves counter blocks ahead (:data:`COUNTER_BLOCK` values) and is rewritten,
  fsync'ed, before a block is used, so a crash or a reopen resumes above everything that could have been written.
  Counter 0 is the key check's.
* **Associated data.** The area, the record's offset and length in it and the model fingerprint: a record copied to
  another slot, or an image's records under another model, fail authentication.
* **Where the tag goes.** Ciphertext replaces the plaintext in the record's sectors (same length, so the layout is
  the plain image's); the nonce counter and the 16-byte tag go where a record's checksum goes -- the weights'
  checksum table on the card and the activations' table in memory (:meth:`RecordCipher.entry`, 24 bytes). A
  record replayed from an earlier write of the same slot has a valid tag for an older counter: the table holds the
  newest one, so it fails too. The tag replaces the checksum (it authenticates; a separate crc32 would add nothing).
* **Key check.** The header holds the sealing of a fixed text under counter 0: a wrong key fails it at open
  (:class:`~microinterp.errors.StorageError`, never garbage), and a missing key on an encrypted image is refused.
"""

from __future__ import annotations

import struct
from typing import Any

from ..errors import StorageError

KEY_BYTES = 32
KEY_CHECK_BYTES = 32
IMAGE_ID_BYTES = 16
TAG_BYTES = 16
ENTRY_BYTES = 8 + TAG_BYTES            # nonce counter + tag
COUNTER_BLOCK = 1 << 32                # counter values reserved per header write
_CHECK_TEXT = b"microinterp-kcv!"      # 16 bytes: the header stores its 32-byte sealing
_ENTRY = struct.Struct("<Q16s")


def _backend() -> Any:
    try:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF
    except ImportError:
        raise StorageError("encrypted SD images need the 'cryptography' package: pip install 'microinterp[crypto]'"
                           ) from None
    return AESGCM, HKDF, hashes, InvalidTag


def check_key(key: Any) -> bytes:
    """The key as 32 bytes (bytes-like of 32 bytes, or 64 hex digits), else StorageError."""
    if isinstance(key, str):
        try:
            key = bytes.fromhex(key)
        except ValueError:
            raise StorageError("an SD image key given as text must be 64 hexadecimal digits") from None
    try:
        raw = bytes(memoryview(key))
    except TypeError:
        raise StorageError(f"an SD image key must be 32 bytes, got {type(key).__name__}") from None
    if len(raw) != KEY_BYTES:
        raise StorageError(f"an SD image key must be {KEY_BYTES} bytes, got {len(raw)}")
    return raw


class RecordCipher:
    """AES-256-GCM for one image's records (see the module docstring)."""

    def __init__(self, key: bytes, image_id: bytes, fingerprint: str):
        aesgcm, hkdf, hashes, self._invalid = _backend()
        subkey = hkdf(algorithm=hashes.SHA256(), length=32, salt=bytes(image_id),
                      info=b"microinterp sd records").derive(check_key(key))
        self._aead = aesgcm(subkey)
        self._fingerprint = fingerprint.encode()
        self.bytes_sealed = 0
        self.bytes_opened = 0

    @staticmethod
    def nonce(counter: int) -> bytes:
        return b"\0\0\0\0" + counter.to_bytes(8, "little")

    def _aad(self, area: str, offset: int, length: int) -> bytes:
        return b"%s:%d:%d:" % (area.encode(), offset, length) + self._fingerprint

    def key_check(self) -> bytes:
        """What the header stores: the sealing of a fixed text under counter 0 (32 bytes)."""
        return self._aead.encrypt(self.nonce(0), _CHECK_TEXT, b"key check:")

    def key_matches(self, stored: bytes) -> bool:
        try:
            return self._aead.decrypt(self.nonce(0), bytes(stored), b"key check:") == _CHECK_TEXT
        except self._invalid:
            return False

    def seal(self, area: str, offset: int, counter: int, plaintext: Any) -> tuple[bytes, bytes]:
        """``(ciphertext, entry)`` of one record: the ciphertext has the plaintext's length; the entry (nonce counter
        and tag, :data:`ENTRY_BYTES`) goes where the record's checksum goes."""
        data = self._aead.encrypt(self.nonce(counter), bytes(plaintext), self._aad(area, offset, len(plaintext)))
        self.bytes_sealed += len(plaintext)
        return data[:-TAG_BYTES], _ENTRY.pack(counter, data[-TAG_BYTES:])

    def open(self, area: str, offset: int, entry: bytes, ciphertext: Any) -> bytes | None:
        """The plaintext of one record, or None when authentication fails (tampered, moved, replayed, wrong key)."""
        counter, tag = _ENTRY.unpack(bytes(entry[:ENTRY_BYTES]))
        n = len(ciphertext)
        try:
            out = self._aead.decrypt(self.nonce(counter), bytes(ciphertext) + tag, self._aad(area, offset, n))
        except self._invalid:
            return None
        self.bytes_opened += n
        return out

    @staticmethod
    def counter_of(entry: bytes) -> int:
        return _ENTRY.unpack(bytes(entry[:ENTRY_BYTES]))[0]
