"""Which Events are repeats of one another: the key an Event series is counted under.

Kubernetes' convention (client-go's recorder, kubectl's "x1440 over 24h") is one Event object per
thing that keeps happening, its ``count`` and ``lastTimestamp`` raised on each repeat, rather than a
new object each time. What makes two Events "the same" here is the involved object, the type, the
reason and the message with its timestamps left out: a cron rule firing every minute reports
``rule scale-up (scheduled 2026-06-01T09:03:00Z): set replicas=5``, and only the schedule time
changes from one fire to the next (1,440 Events a day otherwise, each kept for the API server's event
TTL). Every other difference (another rule, another value, a failure instead of a success) is a new
series. Both adapters of the ControlPlane port (controller.kube.control_plane, the simulator's) key
their Events with this.
"""

from __future__ import annotations

import re

_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")
TIME = "<time>"


def series_key(type_: str, reason: str, message: str) -> str:
    """The part of an Event that says which series it belongs to (the object aside)."""
    return "\x00".join([type_, reason, _TIMESTAMP.sub(TIME, message)])
