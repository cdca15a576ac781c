"""Reading a source file's bytes as Python does."""

from __future__ import annotations

import io
import tokenize

#: As git, a file with a NUL byte in its first 8,000 bytes is binary.
_BINARY_PROBE = 8000


def decode_source(data: bytes) -> str:
    """Decode as Python does: BOM, then a coding cookie, else UTF-8 (PEP 263). A cookie naming a codec
    Python lacks (`# -*- coding: future_fstrings -*-`) names one a package registers as the interpreter
    starts (through a `.pth` file); over bytes that are UTF-8, the source is read as UTF-8."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as unknown:
        if not _unknown_codec(unknown):
            raise
        try:
            return data.decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError:
            raise unknown from None
    text = data.decode(encoding)
    return text.removeprefix("\ufeff")


def undecodable_reason(data: bytes, error: Exception) -> str:
    """Why `decode_source` refused `data`, in words a user can act on."""
    if b"\x00" in data[:_BINARY_PROBE]:
        return "binary file, not Python source"
    if isinstance(error, SyntaxError):  # no coding cookie, or one naming an unknown codec, and not UTF-8
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as not_utf8:
            if _unknown_codec(error):
                return f"cannot decode file: {error}, and as utf-8 {_where(data, not_utf8)}"
            error = not_utf8
    if isinstance(error, UnicodeDecodeError):
        return f"cannot decode file as {error.encoding}: {_where(data, error)}"
    return f"cannot decode file: {error}"


def _where(data: bytes, error: UnicodeDecodeError) -> str:
    row = data.count(b"\n", 0, error.start) + 1
    return f"byte {error.object[error.start]:#04x} on line {row}"


def _unknown_codec(error: SyntaxError) -> bool:
    """tokenize's refusal of a coding cookie naming a codec this interpreter lacks."""
    return str(error).startswith("unknown encoding")
