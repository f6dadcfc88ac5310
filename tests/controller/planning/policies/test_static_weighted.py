"""StaticWeighted: the preferences' weights divide the bounds, and an explanation can show the numbers."""

from __future__ import annotations

from controller.planning.policies.base import UNKNOWN
from controller.planning.policies.static_weighted import StaticWeighted
from fhpa_api.models import ClusterAutoscalingPreference
from tests.support.planning_builders import fhpa, obs

POLICY = StaticWeighted()
F = fhpa("StaticWeighted", 2, 12, weights={"a": 1, "b": 2})


class View:
    """Preferences as status resolves them: the weights, or None when one selects by labels."""

    def __init__(self, weights: dict[str, int] | None) -> None:
        self._weights = weights

    def preference(self, name: str) -> ClusterAutoscalingPreference | str | None:
        return UNKNOWN if self._weights is None else None

    def weights(self) -> dict[str, int] | None:
        return self._weights


def test_the_split_divides_by_weight_whatever_the_room() -> None:
    clusters = [obs("a", available=100), obs("b", available=1)]
    assert POLICY.split(F, 12, clusters, {"a": 100, "b": 1}) == {"a": 4, "b": 8}
    assert POLICY.preference_order(F, clusters) == ["b", "a"]
    assert POLICY.least_preferred(F, clusters) == "a"


def test_the_explanation_shows_the_split_from_the_spec() -> None:
    view = View({"a": 1, "b": 2})
    assert POLICY.split_max_from_spec(F, view, "b") == 8
    assert POLICY.explain_split(F, view, "a", 4) == [
        "StaticWeighted: weight 1 of 3 (a 1, b 2): F.max 12 divides to max 4, F.min 2 to min 0; "
        "every member HPA has min >= 1"
    ]
    assert POLICY.explain_split(F, view, "a", 0)[0].endswith("to min 0")  # no HPA: no min to raise


def test_a_weight_picked_by_labels_is_not_shown() -> None:
    view = View(None)
    assert POLICY.split_max_from_spec(F, view, "a") is None
    assert "selects by labels" in POLICY.explain_split(F, view, "a", 4)[0]
    assert not POLICY.reads_capacity
