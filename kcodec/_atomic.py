"""Files that appear whole or not at all: written aside, fsynced, renamed into place."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


def fsync_directory(directory: Path) -> None:
    """Make a rename or a new entry in ``directory`` durable (where the system allows it)."""
    if hasattr(os, "O_DIRECTORY"):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def staging_directory(target: Path) -> Path:
    """A new hidden directory beside ``target``, to fill and rename into place; created as
    mkdir creates directories (0777 less the umask), not private as mkdtemp's are."""
    staging = target.parent / f".{target.name}.{secrets.token_hex(8)}.partial"
    staging.mkdir(mode=0o777)
    return staging


@contextlib.contextmanager
def atomic_file(target: Path) -> Iterator[BinaryIO]:
    """A file to write that replaces ``target`` once the block ends without an error; until
    then it has a hidden temporary name beside ``target``, removed if the block fails."""
    temporary = target.parent / f".{target.name}.{secrets.token_hex(8)}.partial"
    # created as open() creates files (0666 less the umask), not private as mkstemp's are
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(handle, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
        fsync_directory(target.parent)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
