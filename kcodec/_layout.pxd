# Byte layout of the v2 batch header (FORMAT.md §2.1, §2.2), shared by reader and builder.

cdef enum:
    HEADER_SIZE = 61          # RECORD_BATCH_OVERHEAD; also the size of an empty batch
    LOG_OVERHEAD = 12         # offset + size field, common to every magic
    MIN_ENTRY_SIZE = 14       # smallest legal size field (LegacyRecord.RECORD_OVERHEAD_V0)
    CRC_START = 21            # the CRC-32C covers [21, end)

    # offsets of the header fields
    OFF_BASE_OFFSET = 0
    OFF_LENGTH = 8
    OFF_LEADER_EPOCH = 12
    OFF_MAGIC = 16
    OFF_CRC = 17
    OFF_ATTRIBUTES = 21
    OFF_LAST_OFFSET_DELTA = 23
    OFF_BASE_TIMESTAMP = 27
    OFF_MAX_TIMESTAMP = 35
    OFF_PRODUCER_ID = 43
    OFF_PRODUCER_EPOCH = 51
    OFF_BASE_SEQUENCE = 53
    OFF_RECORD_COUNT = 57

    # legacy (magic 0/1) message fields; offset, size and magic are where v2 has them
    LEGACY_CRC = 12
    LEGACY_ATTRIBUTES = 17
    LEGACY_KEY_LENGTH_V0 = 18     # magic 1 has an 8-byte timestamp here first

    # attribute bits
    ATTR_CODEC = 0x07
    ATTR_LOG_APPEND_TIME = 0x08
    ATTR_TRANSACTIONAL = 0x10
    ATTR_CONTROL = 0x20
    ATTR_DELETE_HORIZON = 0x40
    ATTR_NO_RECORD_ATTRIBUTES = 0x80   # magic 3 (KIP-931): records carry no attributes byte
    ATTR_HEADERS_FIRST = 0x100         # magic 3, kcodec's experiment: metadata before values

    # magic 3 (FORMAT.md §8.2): fixed fields, then three varints, then the records
    V3_OFF_PRODUCER_ID = 23
    V3_OFF_PRODUCER_EPOCH = 31
    V3_OFF_BASE_SEQUENCE = 33
    V3_OFF_RECORD_COUNT = 37
    V3_FIXED_SIZE = 41
    V3_MIN_SIZE = 44            # the three varints take a byte each at least
    V3_MAX_HEADER = 66          # 41 + varint (5) + two varlongs (10 each)
