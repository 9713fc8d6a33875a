"""kcodec: Apache Kafka record data, read and written byte-for-byte as Kafka does.

The compiled core is required: if it cannot be imported, the ImportError says
so instead of falling back to a slow path.
"""

from __future__ import annotations

try:
    from kcodec._batch import BatchReader, RecordBatch, RecordIterator, read_batches
    from kcodec._builder import BatchBuilder, empty_batch
    from kcodec._crc32c import crc32, crc32c, crc32c_backend
    from kcodec._legacy import LegacyBatch
    from kcodec._record import Record
    from kcodec._varint import decode_varint, decode_varlong, encode_varint, encode_varlong
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        "kcodec's compiled extensions are missing or broken "
        f"({exc}); install kcodec with pip (it builds them) instead of importing the source tree"
    ) from exc

# the modules the README names as kcodec.<module> (dump, cli and spark load on demand)
from kcodec import codecs, errors, kip931, kraft, plugins, producer_snapshot, segments
from kcodec.codecs import compress, decompress
from kcodec.columnar import decode_arrow, decode_columns, iter_arrow, iter_columns
from kcodec.config import ProducerConfig, TopicConfig
from kcodec.constants import Compression, ControlType, TimestampType
from kcodec.convert import ConversionReport, LossyConversionWarning, convert
from kcodec.export import ExportSummary, export_segments
from kcodec.protocols import Batch
from kcodec.validator import ValidationResult, validate

__version__ = "0.1.0"

__all__ = [
    "Batch",
    "BatchBuilder",
    "BatchReader",
    "Compression",
    "ControlType",
    "ConversionReport",
    "ExportSummary",
    "LegacyBatch",
    "LossyConversionWarning",
    "ProducerConfig",
    "Record",
    "RecordBatch",
    "RecordIterator",
    "TimestampType",
    "TopicConfig",
    "ValidationResult",
    "codecs",
    "compress",
    "convert",
    "crc32",
    "crc32c",
    "crc32c_backend",
    "decode_arrow",
    "decode_columns",
    "decode_varint",
    "decompress",
    "decode_varlong",
    "empty_batch",
    "encode_varint",
    "encode_varlong",
    "export_segments",
    "errors",
    "iter_arrow",
    "iter_columns",
    "kip931",
    "kraft",
    "plugins",
    "producer_snapshot",
    "read_batches",
    "segments",
    "validate",
]
