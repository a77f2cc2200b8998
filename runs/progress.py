"""A status line for work that has no steps to count (loading a run, compiling, evaluating):
what is being done and for how long, refreshed while it runs, so a long wait is never silent.

    with Ticker("eval", enabled=True) as ticker:
        ticker.phase("loading the run")
        ...
        ticker.phase("evaluating test, ood (256 tasks each)")
        ...
"""

import sys
import threading
from types import TracebackType


class Ticker:
    """`DESC: PHASE... [elapsed]` on stderr, redrawn every `interval` seconds from a daemon
    thread until the `with` block ends (then the line stays, with the total time). Where stderr
    is no terminal (a log file), each phase is one line `DESC: PHASE...` instead. Disabled, it
    shows nothing."""

    def __init__(self, desc: str, *, enabled: bool = True, interval: float = 0.5):
        self.desc = desc
        self.enabled = enabled
        self.interval = interval
        self._bar = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def phase(self, words: str) -> None:
        """Say what is being done now."""
        if self._bar is not None:
            self._bar.set_description_str(f"{self.desc}: {words}...", refresh=True)
        elif self.enabled:
            print(f"{self.desc}: {words}...", file=sys.stderr, flush=True)

    def _tick(self) -> None:
        while not self._done.wait(self.interval):
            if self._bar is not None:
                self._bar.refresh()

    def __enter__(self) -> "Ticker":
        if self.enabled and sys.stderr.isatty():
            from tqdm.auto import tqdm

            self._bar = tqdm(total=None, desc=self.desc, bar_format="{desc} [{elapsed}]")
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._bar.close()
            self._bar = None
