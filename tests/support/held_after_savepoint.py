"""`python -m tests.support.held_after_savepoint SECONDS ARGS...`: the chronos CLI whose retunes wait SECONDS after
their savepoint is journaled and before they resubmit, the window a crash test kills chronos in.

Test-only: the product has no such pause. The one place the CLI builds its Retuner (`chronos.cli.wiring`) is handed a
subclass of chronos's own Retuner, so everything else the process does is the product's code.
"""

from __future__ import annotations

import sys
import time

from chronos.cli import wiring
from chronos.tune.journal import Retune
from chronos.tune.retune import Retuner, TunedJob


def held_retuner(seconds: float) -> type[Retuner]:
    class HeldAfterSavepoint(Retuner):
        def stop(self, job: TunedJob, to_ms: int, explanation: str) -> Retune:
            stopped = super().stop(job, to_ms, explanation)
            if stopped.step == "savepoint":
                time.sleep(seconds)
            return stopped

    return HeldAfterSavepoint


def main() -> None:
    seconds, args = float(sys.argv[1]), sys.argv[2:]
    wiring.Retuner = held_retuner(seconds)  # type: ignore[misc]
    from chronos.cli.main import main as chronos

    sys.argv = ["chronos", *args]
    chronos()


if __name__ == "__main__":
    main()
