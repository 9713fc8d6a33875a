"""Files that appear whole or not at all: written aside, fsynced, renamed into place."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

NAME_MAX = 255   # bytes in a file name (Linux's and macOS's file systems)
#: What :func:`_aside` names: a file or directory being written, or left by a process killed
#: while writing it.
ASIDE_NAME = re.compile(r"^\..*\.[0-9a-f]{16}\.partial$", re.DOTALL)


def fsync_directory(directory: Path) -> None:
    """Make a rename or a new entry in ``directory`` durable (where the system allows it)."""
    if hasattr(os, "O_DIRECTORY"):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _aside(target: Path) -> Path:
    """A new hidden name beside ``target``: ``.<name>.<random>.partial``, the name cut to
    keep it within a file name's 255 bytes."""
    random = secrets.token_hex(8)
    name = os.fsdecode(os.fsencode(target.name)[:NAME_MAX - len(f"..{random}.partial")])
    return target.parent / f".{name}.{random}.partial"


def staging_directory(target: Path) -> Path:
    """A new hidden directory beside ``target``, to fill and rename into place; created as
    mkdir creates directories (0777 less the umask), not private as mkdtemp's are."""
    staging = _aside(target)
    staging.mkdir(mode=0o777)
    return staging


class NewDirectories:
    """What :func:`directories_together` gives its block: called with a new directory's
    name (a path relative to the parent; FileExistsError if there is one already), the
    path to create it at (with the directories up to it); ``staging``, the hidden
    directory those paths lie in (for writers that learn the names as they write)."""

    def __init__(self, parent: Path, staging: Path) -> None:
        self.parent, self.staging = parent, staging
        self.named: list[Path] = []

    def __call__(self, name: str) -> Path:
        if Path(name) in self.named or (self.parent / name).exists():
            raise FileExistsError(f"{self.parent / name} exists; kcodec never overwrites it")
        self.named.append(Path(name))
        return self.staging / name


@contextlib.contextmanager
def directories_together(parent: Path) -> Iterator[NewDirectories]:
    """New directories under ``parent`` that appear there together once the block ends
    without an error, or not at all (see :class:`NewDirectories`), staged in a hidden
    directory: beside ``parent`` when it does not exist yet (renamed to it at the end), or
    else in it (each directory renamed into place at the end, and put back should one
    rename fail)."""
    creating = not parent.exists()
    if creating:
        parent.parent.mkdir(parents=True, exist_ok=True)
    elif not parent.is_dir():
        raise NotADirectoryError(f"{parent} is not a directory")
    place = NewDirectories(parent, staging_directory(parent if creating else parent / "new"))
    try:
        yield place
        if creating:
            os.rename(place.staging, parent)
            fsync_directory(parent.parent)
        else:
            # (a directory named inside another moves with it)
            _move_into_place(place.staging, parent,
                             [name for name in place.named
                              if not any(n in name.parents for n in place.named)])
    finally:
        shutil.rmtree(place.staging, ignore_errors=True)


def _move_into_place(staging: Path, parent: Path, names: list[Path]) -> None:
    """Rename each of ``names`` from ``staging`` into ``parent`` (making the directories
    between); should one fail, those moved go back and those made are removed."""
    made: list[Path] = []   # directories between, made here
    # each with its identity, noted before its rename (a signal may cut in as it returns):
    # only a directory of that identity at its name goes back
    moved: list[tuple[Path, tuple[int, int]]] = []
    try:
        for name in names:
            missing = [d for d in (parent / name).parents if d not in parent.parents
                       and d != parent and not d.exists()]
            for directory in reversed(missing):
                directory.mkdir()
                made.append(directory)
            moved.append((name, _identity(staging / name)))
            os.rename(staging / name, parent / name)
        for directory in {(parent / name).parent for name in names}:
            fsync_directory(directory)
    except BaseException:
        for name, identity in reversed(moved):
            with contextlib.suppress(FileNotFoundError):
                if _identity(parent / name) == identity:
                    os.rename(parent / name, staging / name)
        for directory in reversed(made):
            with contextlib.suppress(OSError):   # (unless another writer put something there)
                directory.rmdir()
        raise


def _identity(path: Path) -> tuple[int, int]:
    """The device and inode of ``path`` (FileNotFoundError if there is none)."""
    found = os.lstat(path)
    return found.st_dev, found.st_ino


def replaceable(target: Path) -> Path:
    """The regular file to replace for ``target``: itself, or the file a symbolic link
    names; ValueError for anything else there (a directory, a device, a pipe)."""
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise ValueError(f"{target} is not a regular file; kcodec replaces only those")
    return Path(os.path.realpath(target)) if target.is_symlink() else target


@contextlib.contextmanager
def atomic_file(target: Path) -> Iterator[BinaryIO]:
    """A file to write that replaces ``target`` (a regular file, or the one a symbolic link
    names) once the block ends without an error, keeping its permissions; until then it has
    a hidden temporary name beside it, removed if the block fails."""
    target = replaceable(target)
    temporary = _aside(target)
    # created as open() creates files (0666 less the umask), not private as mkstemp's are
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with contextlib.suppress(FileNotFoundError):   # (a file replaced keeps its mode)
            os.fchmod(handle, stat.S_IMODE(os.stat(target).st_mode))
        with os.fdopen(handle, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
        fsync_directory(target.parent)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
