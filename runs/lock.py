"""One writer per directory: an OS-level lock on `DIR/.lock`, held while a run (or a sweep)
writes there and released when the process exits, however it exits (the OS drops the lock of
a killed process, so a stale lock file never blocks anyone). A writer that finishes removes
the lock file: a directory with no `.lock` has no writer.

    with DirectoryLock(out, "zoo train"):
        ...  # the only writer of `out`

A second writer is refused with `LockedError`, whose message names the holder (its process id,
host, command and start time), read from the lock file.
"""

import datetime
import json
import os
import socket
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock
    fcntl = None

LOCK_FILE = ".lock"


class LockedError(RuntimeError):
    """Another process holds the directory's lock."""


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text())
        return f"process {info['pid']} on {info['host']} ({info['command']}, since {info['since']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


class DirectoryLock:
    """An exclusive lock on `directory` (created if missing), for the life of a `with` block or
    until `release()`; `what` says who holds it ("zoo train", "zoo sweep")."""

    def __init__(self, directory: Path | str, what: str):
        self.path = Path(directory) / LOCK_FILE
        self.what = what
        self._file = None

    def acquire(self) -> "DirectoryLock":
        """Take the lock, or raise `LockedError` naming its holder."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            f = open(self.path, "a+")  # noqa: SIM115 - held open for the lock's life
            if fcntl is None:
                break
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.close()
                raise LockedError(
                    f"{self.path.parent} is being written by {_holder(self.path)}. Wait for it "
                    "to finish (or stop it), or choose another directory; nothing was changed."
                ) from None
            if _same_file(f, self.path):
                break
            # The holder released (and removed) the file between our open and our lock: the
            # lock we got is on a file no one else will look at. Try again on the path's file.
            f.close()
        f.seek(0)
        f.truncate()
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": f"{self.what}: {' '.join(sys.argv[1:])[:200]}".rstrip(": "),
            "since": datetime.datetime.now().isoformat(timespec="seconds"),
        }
        f.write(json.dumps(info) + "\n")
        f.flush()
        self._file = f
        return self

    def release(self) -> None:
        """Drop the lock and remove its file (while still holding it, so that a writer that
        opened the old file sees it was removed and takes the lock on a new one)."""
        if self._file is not None:
            if _same_file(self._file, self.path):
                self.path.unlink(missing_ok=True)
            if fcntl is not None:
                fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
            self._file.close()
            self._file = None

    def __enter__(self) -> "DirectoryLock":
        return self.acquire()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


def _same_file(f: Any, path: Path) -> bool:
    """Whether the open file `f` is the file at `path` (not one removed since it was opened)."""
    try:
        here, there = os.fstat(f.fileno()), os.stat(path)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` whole or not at all: a temporary file in the same directory,
    flushed to disk, then renamed over `path`."""
    atomic_write_bytes(path, text.encode())


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """`atomic_write_text` for bytes (e.g. a PNG)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
