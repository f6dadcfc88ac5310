"""The one weighted split every policy uses (DESIGN §3), and the greedy fill of the ordered policies.

Both are deterministic in the cluster *names* and the tie order a caller gives, never in the order a
caller lists them, so a plan does not change when the registry lists clusters differently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def divide(total: int, weights: Mapping[str, int], ties: Sequence[str] | None = None) -> dict[str, int]:
    """Split ``total`` by ``weights``: floor shares, then the remainder one at a time.

    The remainder goes to clusters by weight descending, so the heaviest clusters absorb rounding;
    equal weights in the order of ``ties`` (the policy's order of preference, which keeps the current
    holder), by name for any it does not list. All weights zero (or negative, treated as zero) means
    equal weights.
    """
    if total < 0:
        raise ValueError(f"divide: total must be >= 0, got {total}")
    if not weights:
        return {}
    clean = {name: max(0, w) for name, w in weights.items()}
    if sum(clean.values()) == 0:
        clean = dict.fromkeys(clean, 1)
    whole = sum(clean.values())
    shares = {name: total * w // whole for name, w in clean.items()}
    remainder = total - sum(shares.values())
    rank = {name: i for i, name in enumerate(ties or ())}
    for name in sorted(clean, key=lambda n: (-clean[n], rank.get(n, len(rank)), n))[:remainder]:
        shares[name] += 1
    return shares


def greedy_fill(total: int, order: Sequence[str], capacity: Mapping[str, int | None]) -> dict[str, int]:
    """Fill clusters in ``order``, each up to its capacity (None: unlimited), until ``total`` is placed.

    What no capacity holds goes to the first cluster of ``order`` (DESIGN §3, Aggregated and Prioritized).
    """
    if total < 0:
        raise ValueError(f"greedy_fill: total must be >= 0, got {total}")
    shares, left = fill(total, order, capacity)
    if left and order:
        shares[order[0]] += left
    return shares


def fill(total: int, order: Sequence[str], capacity: Mapping[str, int | None]) -> tuple[dict[str, int], int]:
    """The walk of :func:`greedy_fill` without placing the remainder: the shares, and what none held."""
    shares = dict.fromkeys(order, 0)
    left = total
    for name in order:
        room = capacity.get(name)
        take = left if room is None else min(left, max(0, room))
        shares[name] = take
        left -= take
    return shares, left


def capped_divide(
    total: int, weights: Mapping[str, int], caps: Mapping[str, int | None], ties: Sequence[str] | None = None
) -> tuple[dict[str, int], int]:
    """Split ``total`` by ``weights`` with no share above its cap (None: no cap); also return what is left.

    A share above its cap is lowered to it, and what that removes is divided again, by the same weights,
    over the clusters still below their cap; a cluster of weight 0 takes no part in the re-split, so it
    never outranks a weighted cluster. The rounds repeat until everything is placed or nobody has room:
    the second value is the excess no cluster could take. All weights 0 are treated as equal;
    ``ties`` orders equal weights for the remainder, as in :func:`divide`.
    """
    clean = {name: max(0, w) for name, w in weights.items()}
    if clean and not any(clean.values()):
        clean = dict.fromkeys(clean, 1)
    shares = dict.fromkeys(clean, 0)
    left = total
    open_ = dict(clean)
    while left > 0 and open_:
        part = divide(left, open_, ties)
        left = 0
        for name, amount in part.items():
            cap = caps.get(name)
            shares[name] += amount
            if cap is not None and shares[name] > cap:
                left += shares[name] - max(cap, 0)
                shares[name] = max(cap, 0)
        open_ = {
            n: w for n, w in open_.items() if w > 0 and ((cap := caps.get(n)) is None or shares[n] < cap)
        }
    return shares, left
