"""The dictionary this package ships, trained on ``kcodec demo``'s order events (seeds 90
and 91, 10 000 values; see ``python -m kcodec_zstd_dict train``) and declared as the
entry point ``zstd-dict-<id>`` so that kcodec finds it wherever the package is installed."""

from __future__ import annotations

from importlib.resources import files

from kcodec_zstd_dict import ZstdDictCodec


def orders() -> ZstdDictCodec:
    return ZstdDictCodec(files("kcodec_zstd_dict").joinpath("orders.zdict").read_bytes())
