"""The context-manager protocol every local stand-in shares: leaving the block stops it."""

from __future__ import annotations

from typing import Self


class StopOnExit:
    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
