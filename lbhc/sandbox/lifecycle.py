"""One way for the sandbox's long-running parts to be used in a `with` block: entering starts
the part, leaving closes it, whatever happened inside."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class StartedInWith:
    """A part with start() (which returns it) and close()."""

    def start(self) -> Self:
        return self

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
