"""Rule packs: operator-reviewed rule files, pinned by the SHA-256 of their bytes.

A rule pack is UTF-8 text of at most 64 KiB (so the rendered hook command stays within
the 128 KiB a single command-line argument may hold on Linux). The hash covers the exact
bytes on disk: a changed space, line ending or byte-order mark makes it another file,
which the operator has to review and pin again.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from pathlib import Path

from grove_harness.errors import HarnessError

MAX_RULES_BYTES = 64 * 1024
SHA256_HEX = re.compile(r"[0-9a-fA-F]{64}")
# C0 controls other than tab, line feed and carriage return, and DEL: not plain text.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class RulePack:
    """A checked rule file: its exact bytes, their text and their SHA-256 (hex)."""

    data: bytes
    text: str
    sha256: str


def read_rule_pack(path: Path) -> RulePack:
    """Read a rule file and check it is non-empty UTF-8 text of at most 64 KiB."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_RULES_BYTES + 1)
    except OSError as ex:
        raise HarnessError(f"{path}: cannot read the rule file ({ex.strerror})") from ex
    if len(data) > MAX_RULES_BYTES:
        raise HarnessError(f"{path}: a rule pack must be at most {MAX_RULES_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as ex:
        raise HarnessError(f"{path}: not UTF-8 text (invalid byte at offset {ex.start})") from ex
    if not text.strip():
        raise HarnessError(f"{path}: the rule file is empty")
    if found := CONTROL.search(text):
        code = ord(found.group())
        raise HarnessError(f"{path}: not plain text (control character U+{code:04X})")
    return RulePack(data=data, text=text, sha256=hashlib.sha256(data).hexdigest())


def pinned_sha256(value: str) -> str:
    """A SHA-256 given by the operator: 64 hexadecimal digits, returned in lower case."""
    if not SHA256_HEX.fullmatch(value.strip()):
        raise HarnessError(f"not a SHA-256 (64 hexadecimal digits): {value!r}")
    return value.strip().lower()


def load_pinned_rule_pack(path: Path, expected_sha256: str) -> RulePack:
    """The rule pack at ``path``, only if its bytes hash to the pinned SHA-256."""
    expected = pinned_sha256(expected_sha256)
    pack = read_rule_pack(path)
    if not hmac.compare_digest(pack.sha256, expected):
        raise HarnessError(
            f"{path}: SHA-256 mismatch: pinned {expected}, file has {pack.sha256}; "
            "this is not the reviewed rule pack"
        )
    return pack
