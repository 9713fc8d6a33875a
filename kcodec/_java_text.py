"""Bytes decoded as UTF-8 the way Java decodes them (``new String(bytes, UTF_8)``, which is
how Kafka reads header keys and its tools print keys and values): well-formed UTF-8 as any
decoder does, and each malformed sequence replaced by U+FFFD as the JDK's decoder replaces
it, which is not always where Python's ``"replace"`` puts its replacements (a UTF-8 encoded
surrogate, ``ED A0 80``, is one U+FFFD for Java and three for Python).

Importing this module registers the error handler ``"kcodec-java"``:
``data.decode("utf-8", "kcodec-java")``; Python's decoder runs until a malformed sequence,
where the handler takes the step the JDK takes there.
"""

from __future__ import annotations

import codecs

ERRORS = "kcodec-java"
_REPLACEMENT = "\ufffd"


def _continuation(b: int) -> bool:
    return b & 0xC0 == 0x80


def _java_step(data: bytes, at: int) -> int:
    """Where the JDK's UTF-8 decoder goes on after the one U+FFFD it writes for the
    malformed sequence starting at ``at`` (String.decodeUTF8_UTF16, JDK 17 and later)."""
    end = len(data)
    b1 = data[at]
    if 0xE0 <= b1 <= 0xEF:       # a 3-byte lead
        if at + 2 < end:
            b2, b3 = data[at + 1], data[at + 2]
            if (b1 == 0xE0 and b2 & 0xE0 == 0x80) or not _continuation(b2):
                return at + 1
            if not _continuation(b3):
                return at + 2
            return at + 3        # a UTF-8 encoded surrogate (ED A0..BF xx)
        if at + 1 < end and ((b1 == 0xE0 and data[at + 1] & 0xE0 == 0x80)
                             or not _continuation(data[at + 1])):
            return at + 1
        return end               # cut short by the end: one U+FFFD for all of it
    if 0xF0 <= b1 <= 0xF7:       # a 4-byte lead
        if at + 3 < end:
            b2, b3 = data[at + 1], data[at + 2]
            if (b1 > 0xF4 or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF)
                    or (b1 == 0xF4 and b2 & 0xF0 != 0x80) or not _continuation(b2)):
                return at + 1
            return at + 2 if not _continuation(b3) else at + 3
        if b1 > 0xF4 or (at + 1 < end and (
                (b1 == 0xF0 and not 0x90 <= data[at + 1] <= 0xBF)
                or (b1 == 0xF4 and data[at + 1] & 0xF0 != 0x80)
                or not _continuation(data[at + 1]))):
            return at + 1
        if at + 2 < end and not _continuation(data[at + 2]):
            return at + 2
        return end
    return at + 1                # a lone continuation byte, C0, C1, F8..FF, or a 2-byte
    #                              lead without its continuation


def _handle(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeDecodeError):
        raise error
    return _REPLACEMENT, _java_step(error.object, error.start)


codecs.register_error(ERRORS, _handle)


def java_utf8(data: bytes) -> str:
    """``data`` decoded as Java's ``new String(data, UTF_8)`` decodes it."""
    return data.decode("utf-8", ERRORS)
