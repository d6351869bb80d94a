"""Reading a user-named file safely (no ROS): the one bounded, non-blocking read that the
nodes' ``robot_file`` and scenario parameters and the campaign's scenario file share."""

from __future__ import annotations

import os
import stat


class FileKindError(ValueError):
    """A path that is not a regular file, or a file larger than allowed (message names it)."""


def file_kind(mode: int) -> str:
    """What a non-regular file is, for messages (``a directory``, ``a FIFO``, ...).

    Parameters
    ----------
    mode : int
        ``st_mode`` of an ``os.stat`` result.

    Returns
    -------
    str
        ``'a directory'``, ``'a FIFO'``, ... or ``'not a regular file'``.
    """
    for test, kind in (
        (stat.S_ISDIR, 'a directory'),
        (stat.S_ISFIFO, 'a FIFO'),
        (stat.S_ISCHR, 'a character device'),
        (stat.S_ISBLK, 'a block device'),
        (stat.S_ISSOCK, 'a socket'),
    ):
        if test(mode):
            return kind
    return 'not a regular file'


def read_regular_file(path: str | os.PathLike[str], max_bytes: int, what: str) -> bytes:
    """The bytes of the regular file ``path``, of at most ``max_bytes`` bytes.

    Opened without blocking (a FIFO would otherwise wait for a writer: a node hung beyond
    SIGTERM), refused unless a regular file (``/dev/zero`` filled the memory), and at most
    ``max_bytes + 1`` bytes are ever read (a file growing meanwhile cannot exhaust the
    memory).

    Parameters
    ----------
    path : str or PathLike
    max_bytes : int
        Largest size taken [bytes].
    what : str
        The field named in messages.

    Returns
    -------
    bytes
        The whole file.

    Raises
    ------
    FileKindError
        ``'{what}: expected a regular file, got {path!r} (a FIFO)'``, or a file too large.
    OSError
        It cannot be opened or read (the caller words it).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileKindError(
                f'{what}: expected a regular file, got {str(path)!r} ({file_kind(info.st_mode)})'
            )
        if info.st_size > max_bytes:
            raise FileKindError(
                f'{what}: expected at most {max_bytes} bytes, got {str(path)!r} of '
                f'{info.st_size} bytes'
            )
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > max_bytes:
        raise FileKindError(f'{what}: expected at most {max_bytes} bytes, {str(path)!r} grew')
    return b''.join(chunks)
