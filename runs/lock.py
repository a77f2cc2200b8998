"""One writer per directory: an OS-level lock on `DIR/.lock`, held while a run (or a sweep)
writes there and released when the process exits, however it exits (the OS drops the lock of
a killed process, so a stale lock file never blocks anyone).

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
        f = open(self.path, "a+")  # noqa: SIM115 - held open for the lock's life
        if fcntl is not None:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.close()
                raise LockedError(
                    f"{self.path.parent} is being written by {_holder(self.path)}. Wait for it "
                    "to finish (or stop it), or choose another directory; nothing was changed."
                ) from None
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
        """Drop the lock (the file stays: removing it would race with a waiting writer)."""
        if self._file is not None:
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


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` whole or not at all: a temporary file in the same directory,
    flushed to disk, then renamed over `path`."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
