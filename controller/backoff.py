"""The one exponential backoff of the controller: the work queue's retries of a failed reconcile and the
list/watch loop's retries of a failed list or watch wait by it, each with its own base and cap.

Why one: a retry schedule is a promise about load on a recovering API server; two copies drift (one
capped and jittered, the other not) and the slower-to-recover one is the one nobody reads.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

DEFAULT_BASE_DELAY_SECONDS = 0.05
DEFAULT_MAX_DELAY_SECONDS = 300.0


@dataclass
class ExponentialBackoff:
    """Delays base, 2*base, 4*base, ... capped at ``maximum``, each spread by +/- ``jitter`` (a fraction).

    Jitter keeps many clients that failed together (an API server restart) from retrying together.
    """

    base: float = DEFAULT_BASE_DELAY_SECONDS
    maximum: float = DEFAULT_MAX_DELAY_SECONDS
    jitter: float = 0.0
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        if self.base <= 0 or self.maximum < self.base:
            raise ValueError(
                f"backoff needs 0 < base <= maximum, got base={self.base} maximum={self.maximum}"
            )
        if not 0 <= self.jitter < 1:
            raise ValueError(f"backoff jitter is a fraction in [0, 1), got {self.jitter}")

    def delay(self, failures: int) -> float:
        """The delay after ``failures`` consecutive failures (1 = the first failure)."""
        exponent = min(max(failures - 1, 0), 64)
        raw = min(self.base * (2**exponent), self.maximum)
        if self.jitter:
            raw *= 1 + self.rng.uniform(-self.jitter, self.jitter)
        return max(0.0, raw)
