"""kcodec's errors survive pickling (a process pool hands a worker's error back that way)
with their class, message, position, Kafka code and their own attributes."""

from __future__ import annotations

import inspect
import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor

import pytest

import kcodec
from kcodec import errors, plugins

EXAMPLES = [
    errors.KcodecError("odd", position=3),
    errors.CorruptRecordError("short batch"),
    errors.ChecksumError("CRC mismatch", position=61, stored=1, computed=2),
    errors.InvalidRecordError("bad varint", position=70),
    errors.UnsupportedCompressionTypeError("Unknown compression type id: 7", position=21),
    errors.UnknownCompressionTypeError("Unknown compression type 'brotli'"),
    errors.UnknownPluginError("no plugin brotli", plugin="brotli", position=61),
    errors.RecordTooLargeError("batch of 2 GiB"),
    errors.RecordListTooLargeError("set of 2 GiB"),
    errors.InvalidTimestampError("timestamp out of range", position=100),
    errors.UnsupportedForMessageFormatError("transactional on magic 1"),
    errors.CompressionError("truncated lz4 frame", position=61),
    errors.UnknownServerError("Magic v1 does not support record headers", position=0),
    errors.DecompressionLimitError.exceeding(1 << 20),
    errors.CorruptIndexError("Index file x.index is corrupt, found 3 bytes"),
    errors.LossyConversionError("magic 1 cannot hold record headers"),
]


#: Kafka's codes and names (org.apache.kafka.common.protocol.Errors)
KAFKA_ERRORS = {-1: "UNKNOWN_SERVER_ERROR", 2: "CORRUPT_MESSAGE", 10: "MESSAGE_TOO_LARGE",
                18: "RECORD_LIST_TOO_LARGE", 32: "INVALID_TIMESTAMP",
                43: "UNSUPPORTED_FOR_MESSAGE_FORMAT", 76: "UNSUPPORTED_COMPRESSION_TYPE",
                87: "INVALID_RECORD"}


@pytest.mark.parametrize("error", EXAMPLES, ids=lambda e: type(e).__name__)
def test_codes_are_named_as_kafka_names_them(error: errors.KcodecError) -> None:
    if error.error_code is None:
        assert error.error_name is None
    else:
        assert KAFKA_ERRORS[error.error_code] == error.error_name
        assert f"[Kafka {error.error_name}, code {error.error_code}]" in str(error)


def test_every_error_class_has_an_example() -> None:
    classes = {cls for _, cls in inspect.getmembers(errors, inspect.isclass)
               if issubclass(cls, errors.KcodecError)}
    assert classes == {type(error) for error in EXAMPLES}


@pytest.mark.parametrize("error", EXAMPLES, ids=lambda e: type(e).__name__)
def test_pickles_whole(error: errors.KcodecError) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error) and copy.args == error.args
    assert vars(copy) == vars(error)
    assert (copy.error_code, copy.position) == (error.error_code, error.position)


def test_a_process_pool_hands_a_workers_error_back() -> None:
    plugins.register("pool-test-lz4", plugins.BuiltinCodec("lz4"))
    try:
        builder = kcodec.BatchBuilder(compression="pluggable", plugin="pool-test-lz4")
        builder.append(b"value")
        data = builder.build()
    finally:
        plugins.unregister("pool-test-lz4")
    spawn = multiprocessing.get_context("spawn")   # a fresh interpreter: no plugin there
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
        with pytest.raises(errors.UnknownPluginError) as info:
            pool.submit(kcodec.decode_columns, data).result()
    assert info.value.plugin == "pool-test-lz4" and info.value.position == 61
