"""Reading a source file's bytes as Python does."""

from __future__ import annotations

import io
import tokenize

#: As git, a file with a NUL byte in its first 8,000 bytes is binary.
_BINARY_PROBE = 8000


def decode_source(data: bytes) -> str:
    """Decode as Python does: BOM, then a coding cookie, else UTF-8 (PEP 263)."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    return text.removeprefix("\ufeff")


def undecodable_reason(data: bytes, error: Exception) -> str:
    """Why `decode_source` refused `data`, in words a user can act on."""
    if b"\x00" in data[:_BINARY_PROBE]:
        return "binary file, not Python source"
    if isinstance(error, SyntaxError):  # no coding cookie, and the first lines are not UTF-8
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as not_utf8:
            error = not_utf8
    if isinstance(error, UnicodeDecodeError):
        row = data.count(b"\n", 0, error.start) + 1
        byte = error.object[error.start]
        return f"cannot decode file as {error.encoding}: byte {byte:#04x} on line {row}"
    return f"cannot decode file: {error}"
