"""Counts in messages read as English: "1 cluster", "2 clusters" (status, Events, logs).

A message is what an operator reads first; "1 clusters" makes them wonder whether the number is right.
"""

from __future__ import annotations


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun, singular for exactly one ("1 cluster", "0 clusters", "3 member HPAs")."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
