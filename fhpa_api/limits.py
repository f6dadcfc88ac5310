"""Size limits on everything a user writes, and the cron status budget they add up to.

The same numbers go into the CRD schema (scripts/gen_crds.py: maxLength, maxItems, maxProperties) and
into validation (so `fhpa validate` and the webhook refuse with a message that names the limit). They
are far above anything a real object needs; they exist so that no field can make the webhook work for
seconds or make an object too large for etcd (1.5 MiB per object).
"""

from __future__ import annotations

import reprlib
from typing import Any

# --- strings --------------------------------------------------------------------------------------
QUANTITY_MAX_CHARS = 64
"""A quantity such as "500m" or "1.5Gi"; the longest exact decimal a member HPA needs is ~40."""
SCHEDULE_MAX_CHARS = 128
"""A cron schedule; checked before any parsing (the croniter cross-check is slow on long text)."""
TIME_ZONE_MAX_CHARS = 64
"""An IANA zone name; the longest in tzdata is 32 characters."""
API_VERSION_MAX_CHARS = 253 + 1 + 20
"""group/version: a DNS subdomain, '/', a version such as v2beta2."""
KIND_MAX_CHARS = 63
"""A kind (the longest built-in is ~40); it ends up in request paths."""
OBJECT_NAME_MAX_CHARS = 253
"""scaleTargetRef.name, describedObject.name: an object name (a DNS subdomain at most)."""
METRIC_NAME_MAX_CHARS = 253
"""A metric name (metrics.name in a custom/external metrics API path)."""
RESOURCE_NAME_MAX_CHARS = 253
"""A resource name such as cpu or example.com/gpu (prefix up to 253, name up to 63)."""
LABEL_KEY_MAX_CHARS = 253 + 1 + 63
SELECTOR_VALUE_MAX_CHARS = 253
"""A value in a selector requirement (a label value has at most 63; a zone or region name, 253)."""

# --- lists and maps ----------------------------------------------------------------------------------
RULES_MAX_ITEMS = 64
"""Rules in one CronFederatedHPA."""
METRICS_MAX_ITEMS = 32
"""Metrics in one FederatedHPA (a member HPA with more would be unusual and slow to evaluate)."""
POLICIES_MAX_ITEMS = 16
"""Scaling policies in one direction of behavior."""
PREFERENCES_MAX_ITEMS = 128
"""clusterAutoscalingPreference entries."""
CLUSTER_NAMES_MAX_ITEMS = 512
"""clusterNames / exclude entries (a fleet larger than this would use labels)."""
SELECTOR_EXPRESSIONS_MAX_ITEMS = 32
"""matchExpressions in one selector."""
SELECTOR_VALUES_MAX_ITEMS = 256
"""values in one selector requirement."""
MATCH_LABELS_MAX_PROPERTIES = 64
"""matchLabels entries in one selector."""

# --- the CronFederatedHPA status budget --------------------------------------------------------------
HISTORY_MESSAGE_MAX_CHARS = 256
"""A failed execution's message as stored in status; longer messages are cut (the Event keeps more)."""
STORED_BYTES_PER_CHAR = 6
"""The most bytes one character can take in stored JSON: Go escapes <, >, & and U+2028/9 as \\u00XX."""
TIMESTAMP_MAX_CHARS = 32
"""An RFC 3339 timestamp as stored (2025-01-01T00:00:00.123456+00:00 is 32)."""
SUCCESS_ENTRY_MAX_BYTES = 240
"""A successfulExecutions entry: two timestamps and three int32s with their keys (tested)."""
FAILED_ENTRY_OVERHEAD_BYTES = 120
FAILED_ENTRY_MAX_BYTES = FAILED_ENTRY_OVERHEAD_BYTES + STORED_BYTES_PER_CHAR * HISTORY_MESSAGE_MAX_CHARS
"""A failedExecutions entry: two timestamps and the longest stored message (tested)."""
HISTORY_BUDGET_BYTES = 512 * 1024
"""What the histories of one CronFederatedHPA may take at their limits, at worst (a third of etcd's
1.5 MiB object limit; the spec, conditions and metadata take the rest, with room to spare)."""


def history_bytes(successful_limit: int, failed_limit: int) -> int:
    """The most bytes a rule's history can take in status with these limits."""
    return successful_limit * SUCCESS_ENTRY_MAX_BYTES + failed_limit * FAILED_ENTRY_MAX_BYTES


def shorten(value: Any, limit: int = 64) -> str:
    """repr() of a user value for a message or a log line, cut to about ``limit`` characters with '…'.

    Every value a message echoes goes through here, so a denial never sends megabytes back; nested
    containers are abbreviated by depth (reprlib), so no input can make it recurse deeply.
    """
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + f"… ({len(value)} characters)"
    text = _REPR.repr(value)
    return text if len(text) <= limit + 2 else text[:limit] + "…"


def cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, the last one '…' when anything was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = 66
_REPR.maxother = 66
_REPR.maxlong = 40
