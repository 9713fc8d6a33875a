"""Java's wrapping arithmetic, for the values Kafka computes as an int or a long."""

from __future__ import annotations


def java_int(value: int) -> int:
    """``value`` wrapped to a Java int."""
    return (value + 2**31) % 2**32 - 2**31


def java_long(value: int) -> int:
    """``value`` wrapped to a Java long."""
    return (value + 2**63) % 2**64 - 2**63


__all__ = ["java_int", "java_long"]
