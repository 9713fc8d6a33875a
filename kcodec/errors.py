"""The one exception hierarchy of kcodec.

Every error raised for bad data derives from :class:`KcodecError`. Where Apache
Kafka has an error code for the same condition, the class carries it as
``error_code`` and ``error_name`` (the names of Kafka's ``Errors`` enum), so a
proxy or broker emulation can answer with it. ``position`` is the byte position
in the input where the problem was found, when known.

Misuse of the API (a wrong argument type, a negative timestamp handed to the
builder) raises the usual ``TypeError`` or ``ValueError`` instead; a codec argument
Kafka does not define raises :class:`UnknownCompressionTypeError`, which is both a
``ValueError`` and Kafka's UNSUPPORTED_COMPRESSION_TYPE. Every error pickles whole,
so a process pool hands a worker's error back as it was raised.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any


class KcodecError(Exception):
    """Base class of every kcodec data error."""

    #: Kafka's numeric error code for this condition, or None when Kafka has none.
    error_code: int | None = None
    #: Kafka's name for ``error_code`` (e.g. ``"CORRUPT_MESSAGE"``).
    error_name: str | None = None

    def __init__(self, message: str, *, position: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        #: Byte position in the input where the problem was found, or None.
        self.position = position

    def __str__(self) -> str:
        text = self.message
        if self.position is not None:
            text += f" (at byte {self.position})"
        if self.error_name is not None:
            text += f" [Kafka {self.error_name}, code {self.error_code}]"
        return text

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled (a process pool handing it back) as its class, message and attributes,
        # not by calling __init__ again: subclasses take required keyword arguments
        return _unpickle, (type(self), self.message), self.__dict__


def _unpickle(cls: type[KcodecError], message: str) -> KcodecError:
    """An error of class cls with this message (as its args), its attributes still to be
    restored."""
    return cls.__new__(cls, message)


class CorruptRecordError(KcodecError):
    """The framing or checksum is broken (Kafka ``CorruptRecordException``)."""

    error_code = 2
    error_name = "CORRUPT_MESSAGE"


class ChecksumError(CorruptRecordError):
    """A batch's CRC-32C (or a legacy message's CRC-32) does not match its bytes."""

    def __init__(self, message: str, *, position: int | None = None,
                 stored: int = 0, computed: int = 0) -> None:
        super().__init__(message, position=position)
        self.stored = stored
        self.computed = computed


class InvalidRecordError(KcodecError):
    """The batch frames correctly but its records are malformed (``InvalidRecordException``)."""

    error_code = 87
    error_name = "INVALID_RECORD"


class UnsupportedCompressionTypeError(KcodecError):
    """A codec id Kafka does not define, or one the format version cannot carry."""

    error_code = 76
    error_name = "UNSUPPORTED_COMPRESSION_TYPE"


class UnknownCompressionTypeError(UnsupportedCompressionTypeError, ValueError):
    """A codec given as an argument (an id or a name) that Kafka does not define: a
    ``ValueError``, as a wrong argument is, wherever kcodec takes a codec, and Kafka's
    UNSUPPORTED_COMPRESSION_TYPE, as the same id met in data is."""


class UnknownPluginError(UnsupportedCompressionTypeError):
    """A pluggable-codec batch (id 5) names a plugin that is neither registered nor
    installed; ``plugin`` is the name it carries."""

    def __init__(self, message: str, *, plugin: str, position: int | None = None) -> None:
        super().__init__(message, position=position)
        self.plugin = plugin


class RecordTooLargeError(KcodecError):
    """A batch or record is larger than the configured limit (``RecordTooLargeException``)."""

    error_code = 10
    error_name = "MESSAGE_TOO_LARGE"


class RecordListTooLargeError(KcodecError):
    """A whole record set is larger than allowed (``RecordBatchTooLargeException``)."""

    error_code = 18
    error_name = "RECORD_LIST_TOO_LARGE"


class InvalidTimestampError(KcodecError):
    """A timestamp outside the allowed range (``InvalidTimestampException``)."""

    error_code = 32
    error_name = "INVALID_TIMESTAMP"


class UnsupportedForMessageFormatError(KcodecError):
    """A feature the batch's magic cannot express (``UnsupportedForMessageFormatException``)."""

    error_code = 43
    error_name = "UNSUPPORTED_FOR_MESSAGE_FORMAT"


class UnknownServerError(KcodecError):
    """What a broker refuses with UNKNOWN_SERVER_ERROR: an exception of its own code (an
    ``IllegalArgumentException`` of its record builder, a ``KafkaException``) rather than
    one of Kafka's API errors (``UnknownServerException``)."""

    error_code = -1
    error_name = "UNKNOWN_SERVER_ERROR"


class CompressionError(UnknownServerError):
    """Compressed data that cannot be decompressed (Java surfaces it as a KafkaException,
    which the broker answers with UNKNOWN_SERVER_ERROR)."""


class DecompressionLimitError(RecordTooLargeError):
    """Decompressing would produce more than the allowed maximum size."""

    @classmethod
    def exceeding(cls, limit: int) -> DecompressionLimitError:
        return cls(f"decompressed data would exceed the limit of {limit} bytes")


class CorruptIndexError(KcodecError):
    """An offset or time index that fails the check Kafka makes before trusting one
    (CorruptIndexException, which has no error code: a broker rebuilds such an index from
    its segment at start-up)."""


class LossyConversionError(KcodecError):
    """A conversion would drop what its target magic cannot hold, and ``on_loss="raise"``
    was asked for (Kafka's down-conversion drops it without a word: no error code)."""


@contextlib.contextmanager
def naming(path: str | os.PathLike[str]) -> Iterator[None]:
    """Name the file ``path`` (as a note, ``in <path>``) in the kcodec errors raised within."""
    try:
        yield
    except KcodecError as exc:
        exc.add_note(f"in {path}")
        raise


__all__ = [
    "ChecksumError",
    "CompressionError",
    "CorruptIndexError",
    "CorruptRecordError",
    "DecompressionLimitError",
    "InvalidRecordError",
    "InvalidTimestampError",
    "KcodecError",
    "LossyConversionError",
    "RecordListTooLargeError",
    "RecordTooLargeError",
    "UnknownCompressionTypeError",
    "UnknownPluginError",
    "UnknownServerError",
    "UnsupportedCompressionTypeError",
    "UnsupportedForMessageFormatError",
    "naming",
]
