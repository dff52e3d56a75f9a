"""A clock the test steps by hand (passed in where the code takes `clock`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now
