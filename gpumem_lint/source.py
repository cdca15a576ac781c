"""Reading a source file's bytes as Python does."""

from __future__ import annotations

import io
import tokenize


def decode_source(data: bytes) -> str:
    """Decode as Python does: BOM, then a coding cookie, else UTF-8 (PEP 263)."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    return text.removeprefix("\ufeff")
