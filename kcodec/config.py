"""Compression and validation settings in Kafka's own vocabulary.

:class:`TopicConfig` takes a topic's (or broker's) properties as Kafka names them, for
:func:`kcodec.validate`; :class:`ProducerConfig` a producer's, including the 0.7-era keys
``compression.codec`` and ``compressed.topics`` of the original compression design.
Values may be strings, as in a ``.properties`` file, or already typed (an int, a list for
``cleanup.policy``). They are checked as Kafka's ConfigDef checks them: names exactly as
Kafka spells them (``gzip``, ``LogAppendTime``), numbers whole and within their range; a
value Kafka would refuse raises ValueError (UnknownCompressionTypeError for a codec).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from kcodec._builder import BatchBuilder
from kcodec.codecs import LEVEL_RANGES
from kcodec.constants import Compression, TimestampType
from kcodec.errors import UnknownCompressionTypeError
from kcodec.plugins import check_name

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
#: Kafka's defaults (LogConfig): max.message.bytes 1 MiB + 12, segment.bytes 1 GiB.
DEFAULT_MAX_MESSAGE_BYTES = 1048588
DEFAULT_SEGMENT_BYTES = 1 << 30

TOPIC_COMPRESSION_TYPES = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")
PRODUCER_COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd", "pluggable")
#: KIP-984's producer key naming the plugin of ``compression.type=pluggable``.
PLUGIN_KEY = "pluggable.factory.plugin"
LEVEL_KEYS = {"compression.gzip.level": Compression.GZIP,
              "compression.lz4.level": Compression.LZ4,
              "compression.zstd.level": Compression.ZSTD}


#: The releases ``message.format.version`` names (Kafka's MetadataVersion, up to 3.9, the
#: last with the setting), each with its number of internal versions (``"2.8-IV1"``).
RELEASES = {"0.8.0": 0, "0.8.1": 0, "0.8.2": 0, "0.9.0": 0, "0.10.0": 2, "0.10.1": 3,
            "0.10.2": 1, "0.11.0": 3, "1.0": 1, "1.1": 1, "2.0": 2, "2.1": 3, "2.2": 2,
            "2.3": 2, "2.4": 2, "2.5": 1, "2.6": 1, "2.7": 3, "2.8": 2, "3.0": 2, "3.1": 1,
            "3.2": 1, "3.3": 4, "3.4": 1, "3.5": 3, "3.6": 3, "3.7": 5, "3.8": 1, "3.9": 1}
_WHOLE = re.compile(r"[+-]?[0-9]+")


def _number(props: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    """Kafka's INT or LONG setting ``key``: an int, or a string of one, within
    ``low``..``high`` (ValueError otherwise, as ConfigDef refuses it)."""
    if key not in props:
        return default
    value = props[key]
    if isinstance(value, str) and _WHOLE.fullmatch(value.strip()):
        number = int(value.strip())
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        raise ValueError(f"{key}={value!r} is not a whole number")
    if not low <= number <= high:
        raise ValueError(f"{key}={number} is outside {low}..{high}")
    return number


def _levels(props: Mapping[str, Any]) -> dict[Compression, int]:
    levels = {}
    for key, codec in LEVEL_KEYS.items():
        if key in props:
            level = _number(props, key, 0, -INT32_MAX - 1, INT32_MAX)
            low, high = LEVEL_RANGES[codec]
            if not low <= level <= high and not (codec == Compression.GZIP and level == -1):
                raise ValueError(f"{key}={level} is outside {low}..{high}")
            levels[codec] = level
    return levels


def _choice(props: Mapping[str, Any], key: str, allowed: tuple[str, ...], default: str,
            error: type[ValueError] = ValueError) -> str:
    """A setting that is one of ``allowed``, spelled as Kafka spells it (trimmed only)."""
    value = str(props.get(key, default)).strip()
    if value not in allowed:
        raise error(f"{key}={value!r}: expected one of {', '.join(allowed)}")
    return value


def _cleanup_policies(props: Mapping[str, Any]) -> set[str]:
    """``cleanup.policy``, a list of compact and delete: a list, or a string split at its
    commas as ConfigDef splits a LIST (``"compact,"`` holds an empty item, refused)."""
    value = props.get("cleanup.policy", "delete")
    if isinstance(value, str):
        items = re.split(r"\s*,\s*", value.strip()) if value.strip() else []
    else:
        items = [str(item) for item in value]
    policies = set(items)
    if not policies <= {"compact", "delete"}:
        raise ValueError(f"cleanup.policy={value!r}: expected compact, delete or both")
    return policies


def message_format_magic(version: str) -> int:
    """The magic a ``message.format.version`` writes, read as Kafka's
    MetadataVersion.fromVersionString reads it: a release (``"0.10.2"``, ``"2.8"``) or one
    of its internal versions (``"2.8-IV1"``), anything past the release's own parts
    ignored (``"0.10.2.1"``, ``"2.8.1"``); ValueError for one Kafka does not know."""
    parts = version.split(".")
    key = ".".join(parts[:3 if version.startswith("0.") else 2])
    release, dash, internal = key.partition("-")
    count = RELEASES.get(release)
    if count is None or (dash and internal not in {f"IV{i}" for i in range(count)}):
        raise ValueError(f"message.format.version {version!r} is not a valid version")
    numbers = tuple(int(n) for n in release.split("."))
    if numbers < (0, 10):
        return 0
    if numbers < (0, 11):
        return 1
    return 2


@dataclasses.dataclass(frozen=True)
class TopicConfig:
    """A topic's settings that shape how a broker validates and stores produced data."""

    compression_type: str = "producer"
    levels: Mapping[Compression, int] = dataclasses.field(default_factory=dict)
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    timestamp_before_max_ms: int = INT64_MAX
    timestamp_after_max_ms: int = INT64_MAX
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    compact: bool = False
    magic: int = 2

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> TopicConfig:
        """From Kafka's keys: ``compression.type``, ``compression.<codec>.level``,
        ``message.timestamp.type``, ``message.timestamp.before.max.ms`` and
        ``.after.max.ms`` (falling back to ``message.timestamp.difference.max.ms`` while
        at their default, as KIP-937), ``max.message.bytes``, ``segment.bytes``,
        ``cleanup.policy`` and ``message.format.version``."""
        known = {"compression.type", "message.timestamp.type", "message.timestamp.before.max.ms",
                 "message.timestamp.after.max.ms", "message.timestamp.difference.max.ms",
                 "max.message.bytes", "segment.bytes", "cleanup.policy",
                 "message.format.version", *LEVEL_KEYS}
        unknown = set(props) - known
        if unknown:
            raise ValueError(f"unknown topic settings: {', '.join(sorted(unknown))}")
        ts_name = _choice(props, "message.timestamp.type", ("CreateTime", "LogAppendTime"),
                          "CreateTime")
        difference, before, after = (_number(props, f"message.timestamp.{name}.max.ms",
                                             INT64_MAX, 0, INT64_MAX)
                                     for name in ("difference", "before", "after"))
        return cls(
            compression_type=_choice(props, "compression.type", TOPIC_COMPRESSION_TYPES,
                                     "producer", UnknownCompressionTypeError),
            levels=_levels(props),
            timestamp_type=(TimestampType.LOG_APPEND_TIME if ts_name == "LogAppendTime"
                            else TimestampType.CREATE_TIME),
            timestamp_before_max_ms=difference if before == INT64_MAX else before,
            timestamp_after_max_ms=difference if after == INT64_MAX else after,
            max_message_bytes=_number(props, "max.message.bytes", DEFAULT_MAX_MESSAGE_BYTES,
                                      0, INT32_MAX),
            segment_bytes=_number(props, "segment.bytes", DEFAULT_SEGMENT_BYTES, 14, INT32_MAX),
            compact="compact" in _cleanup_policies(props),
            magic=message_format_magic(str(props.get("message.format.version", "3.0")).strip()),
        )

    def target_codec(self, source: Compression) -> Compression:
        """The codec stored data gets: the producer's with ``producer``, else the topic's."""
        if self.compression_type == "producer":
            return source
        if self.compression_type == "uncompressed":
            return Compression.NONE
        return Compression.parse(self.compression_type)

    def level(self, codec: Compression) -> int | None:
        """The level stored data of ``codec`` is compressed at: the topic's for its own
        codec; None (the codec's default) with ``producer``, as Kafka reads a level key
        only for the topic's own codec."""
        return None if self.compression_type == "producer" else self.levels.get(codec)


@dataclasses.dataclass(frozen=True)
class ProducerConfig:
    """A producer's compression settings.

    ``compression.type`` (none, gzip, snappy, lz4, zstd) with the KIP-390 level keys, or
    ``pluggable`` with the plugin in ``pluggable.factory.plugin`` (KIP-984; its level in
    ``compression.pluggable.level``, kcodec's key); or the 0.7-era ``compression.codec``
    (0 none, 1 gzip, 2 snappy, 3 lz4) with ``compressed.topics``: when that list is empty
    the codec applies to every topic, otherwise only to the topics it names.
    """

    compression: Compression = Compression.NONE
    levels: Mapping[Compression, int] = dataclasses.field(default_factory=dict)
    compressed_topics: frozenset[str] = frozenset()
    plugin: str | None = None

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> ProducerConfig:
        if "compression.type" in props and "compression.codec" in props:
            raise ValueError("give compression.type or the 0.7-era compression.codec, not both")
        if "compression.codec" in props:
            try:
                codec_id = _number(props, "compression.codec", 0, -INT32_MAX - 1, INT32_MAX)
            except ValueError as exc:   # (not a number: no codec Kafka defines either)
                raise UnknownCompressionTypeError(str(exc)) from None
            if codec_id not in (0, 1, 2, 3):
                raise UnknownCompressionTypeError(
                    f"compression.codec={codec_id}: expected 0, 1, 2 or 3")
            codec = Compression(codec_id)
        else:
            codec = Compression.parse(_choice(props, "compression.type",
                                              PRODUCER_COMPRESSION_TYPES, "none",
                                              UnknownCompressionTypeError))
        topics = str(props.get("compressed.topics", "")).strip()
        levels = _levels(props)
        plugin = props.get(PLUGIN_KEY)
        if codec == Compression.PLUGGABLE:
            if not plugin:
                raise ValueError(f"compression.type=pluggable needs {PLUGIN_KEY}")
            plugin = str(plugin).strip()
            check_name(plugin)
            if "compression.pluggable.level" in props:
                levels[codec] = _number(props, "compression.pluggable.level", 0,
                                        -INT32_MAX - 1, INT32_MAX)
        elif plugin:
            raise ValueError(f"{PLUGIN_KEY} goes with compression.type=pluggable")
        return cls(compression=codec, levels=levels, plugin=plugin or None,
                   compressed_topics=frozenset(t.strip() for t in topics.split(",") if t.strip()))

    def codec_for(self, topic: str) -> Compression:
        """The codec this producer uses for ``topic``."""
        if self.compressed_topics and topic not in self.compressed_topics:
            return Compression.NONE
        return self.compression

    def level(self, codec: Compression) -> int | None:
        return self.levels.get(codec)

    def batch_builder(self, topic: str, **options: Any) -> BatchBuilder:
        """A :class:`~kcodec.BatchBuilder` compressing as this producer does for ``topic``
        (``options``: its other keyword arguments, e.g. ``base_offset``)."""
        codec = self.codec_for(topic)
        plugin = self.plugin if codec == Compression.PLUGGABLE else None
        return BatchBuilder(compression=codec, level=self.level(codec), plugin=plugin,
                            **options)


__all__ = ["ProducerConfig", "TopicConfig", "message_format_magic"]
