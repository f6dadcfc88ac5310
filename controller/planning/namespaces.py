"""Which namespaces the controller acts in (security review M5, the confused deputy).

The member namespace of a FederatedHPA is its own namespace on the management cluster, and the writes
there are made with the member identity. So whoever may create a FederatedHPA or CronFederatedHPA in
namespace X on the management cluster could make the controller write HPAs and replica counts in X on
every member. ``--allow-namespaces`` and ``--deny-namespaces`` bound that: an object in a refused
namespace is not acted on at all (no member read or write, no finalizer, no cron fire); its status
gets ``Ready=False`` with reason ``NamespaceNotAllowed`` and a Warning Event says why.

Patterns are namespace names or globs: ``*`` matches any run of characters, ``?`` one character.
A namespace that matches a deny pattern is refused even when an allow pattern matches it too.

Pure: no clock (the caller passes ``now``), no client library.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from controller.planning.conditions import condition
from controller.planning.kstatus import STALLED, with_kstatus
from fhpa_api.models import Condition

REASON_NAMESPACE_NOT_ALLOWED = "NamespaceNotAllowed"
CONDITION_READY = "Ready"
ALLOW_ALL = ("*",)
DEFAULT_DENY = ("kube-*",)
MAX_PATTERN_LENGTH = 63  # a namespace is a DNS label
_PATTERN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-*?")


def glob_match(pattern: str, text: str) -> bool:
    """``*`` matches any run of characters (also none), ``?`` exactly one; everything else itself.

    The usual two-pointer walk with one backtrack point: time O(len(pattern) * len(text)) at worst.
    """
    p = t = 0
    star = -1  # position in pattern of the last '*' seen
    resume = 0  # position in text where that '*' match resumes
    while t < len(text):
        if p < len(pattern) and (pattern[p] == "?" or pattern[p] == text[t]):
            p += 1
            t += 1
        elif p < len(pattern) and pattern[p] == "*":
            star, resume = p, t
            p += 1
        elif star >= 0:
            p = star + 1
            resume += 1
            t = resume
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


def parse_patterns(text: str, flag: str) -> tuple[str, ...]:
    """A comma-separated list of namespace names or globs; ValueError naming ``flag`` for a bad one.

    Blanks around commas and empty entries are ignored, so ``""`` is the empty list.
    """
    patterns: list[str] = []
    for raw in text.split(","):
        pattern = raw.strip()
        if not pattern:
            continue
        if len(pattern) > MAX_PATTERN_LENGTH:
            raise ValueError(f"{flag}: pattern longer than {MAX_PATTERN_LENGTH} characters: {pattern[:20]}…")
        bad = sorted(set(pattern) - _PATTERN_CHARS)
        if bad:
            raise ValueError(
                f"{flag}: {pattern!r} is not a namespace name or glob (lowercase letters, digits, '-', "
                f"'*' and '?' only; found {''.join(bad)!r})"
            )
        if pattern not in patterns:
            patterns.append(pattern)
    return tuple(patterns)


@dataclass(frozen=True)
class NamespacePolicy:
    """The namespaces the controller may act in: matching ``allow`` and matching no ``deny``."""

    allow: tuple[str, ...] = ALLOW_ALL
    deny: tuple[str, ...] = DEFAULT_DENY

    @classmethod
    def from_flags(cls, allow: str, deny: str) -> NamespacePolicy:
        """From the flags' text (``--allow-namespaces``, ``--deny-namespaces``); ValueError when bad."""
        allowed = parse_patterns(allow, "--allow-namespaces")
        if not allowed:
            raise ValueError("--allow-namespaces: empty; give '*' to allow every namespace")
        return cls(allow=allowed, deny=parse_patterns(deny, "--deny-namespaces"))

    def refusal(self, namespace: str) -> str | None:
        """None when the controller may act in ``namespace``; else why not (for status and the Event)."""
        denied = next((p for p in self.deny if glob_match(p, namespace)), None)
        if denied is not None:
            why = f"namespace {namespace} matches --deny-namespaces pattern {denied!r}"
        elif not any(glob_match(p, namespace) for p in self.allow):
            why = f"namespace {namespace} matches no --allow-namespaces pattern ({', '.join(self.allow)})"
        else:
            return None
        return (
            f"{why}: the controller does not act on objects in this namespace; nothing is read or "
            "written in member clusters and no rule is run. Ask the operator to allow it, or move the "
            "object"
        )

    def describe(self) -> str:
        """For the start-up log line."""
        return f"allow={','.join(self.allow)} deny={','.join(self.deny) or '-'}"


def refused_conditions(previous: list[Condition] | None, message: str, now: datetime) -> list[Condition]:
    """``previous`` with Ready=False (reason NamespaceNotAllowed, ``message``) in place of any Ready, and
    Stalled saying the same for kstatus."""
    ready = condition(previous, CONDITION_READY, "False", REASON_NAMESPACE_NOT_ALLOWED, message, now)
    return with_kstatus([c for c in previous or [] if c.type != CONDITION_READY] + [ready])


def without_refusal(conditions: list[Condition] | None) -> list[Condition] | None:
    """``conditions`` without the Ready (and Stalled) this guard wrote: the namespace is allowed again."""
    if not conditions:
        return conditions
    kept = [
        c
        for c in conditions
        if not (c.type in (CONDITION_READY, STALLED) and c.reason == REASON_NAMESPACE_NOT_ALLOWED)
    ]
    return kept or None


def is_refused(conditions: list[Condition] | None, message: str) -> bool:
    """Status already says exactly this refusal (nothing to write, no new Event)."""
    return any(
        c.type == CONDITION_READY
        and c.status == "False"
        and c.reason == REASON_NAMESPACE_NOT_ALLOWED
        and c.message == message
        for c in conditions or []
    )
