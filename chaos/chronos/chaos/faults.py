"""The shape every fault has, whatever it breaks: inject it, then roll back what it left broken.

Implementations live with what they drive (the local stack's processes in chronos.stack.faults); the
experiment runner only needs this Protocol.
"""

from __future__ import annotations

from typing import Protocol

from chronos.model import FaultRecord


class FaultInjector(Protocol):
    def inject(self) -> FaultRecord:
        """Break the target now and say what was done."""
        ...

    def rollback(self) -> None:
        """Undo what the fault left broken (restart, resume); safe to call more than once."""
        ...
