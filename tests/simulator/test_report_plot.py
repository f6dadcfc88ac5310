"""timeline.png: the controller's bounds per cluster, F.min and F.max, a down cluster kept out of the
stack compared with F.max, labelled action markers, minutes on the x axis."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.legend import Legend

from simulator.engine import RunResult, simulate
from simulator.report import ACTION_STYLES, draw_timeline, write_png
from simulator.scenario import parse_scenario

NAMES = ("alpha", "beta", "gamma")
DOWN = (10.0, 18.0)  # gamma's outage, in minutes


def fleet_doc(
    name: str, duration: str, clusters: list[dict[str, Any]], rps: int, **spec: Any
) -> dict[str, Any]:
    """A scenario of one FederatedHPA ``web`` over ``clusters`` at a flat ``rps``."""
    return {
        "name": name,
        "duration": duration,
        "clusters": clusters,
        "load": {"podCapacity": 100, "trace": [{"at": "0m", "rps": rps}]},
        "federatedHPA": {
            "apiVersion": "autoscaling.karmada.io/v1alpha1",
            "kind": "FederatedHPA",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                **spec,
            },
        },
    }


@cache
def run() -> RunResult:
    clusters: list[dict[str, Any]] = [
        {"name": "alpha", "capacity": 40, "podStartup": "30s", "replicas": 6},
        {"name": "beta", "capacity": 40, "podStartup": "30s", "replicas": 6},
        {
            "name": "gamma",
            "capacity": 40,
            "podStartup": "30s",
            "replicas": 6,
            "outages": [{"at": "10m", "for": "8m"}],
        },
    ]
    assignment = {
        "federatedHPAAssignmentType": "StaticWeighted",
        "clusterAutoscalingPreference": [{"targetCluster": {"clusterNames": list(NAMES)}, "staticWeight": 1}],
    }
    doc = fleet_doc(
        "plot-me", "30m", clusters, 1500, minReplicas=3, maxReplicas=45, federatedHPAAssignment=assignment
    )
    return simulate(parse_scenario(doc, "test"))


@pytest.fixture(scope="module")
def fig() -> Iterator[Any]:
    figure = draw_timeline(run())
    yield figure
    plt.close(figure)


def lines(ax: Any) -> dict[str, Any]:
    return {line.get_label(): line for line in ax.get_lines()}


def test_each_cluster_panel_draws_the_min_and_max_the_controller_assigned(fig):
    cluster_axes = fig.axes[2:]
    assert [ax.get_ylabel() for ax in cluster_axes] == list(NAMES)
    steps = run().steps
    for name, ax in zip(NAMES, cluster_axes, strict=True):
        drawn = lines(ax)
        for bound in ("max", "min"):
            line = drawn[f"{name} HPA {bound}"]
            expected = [getattr(s.clusters[name], f"hpa_{bound}") for s in steps]
            ys = list(line.get_ydata())[: len(steps)]
            assert ys == [float(v) for v in expected]
        assert drawn[f"{name} HPA max"].get_linestyle() == "--"
        assert drawn[f"{name} HPA min"].get_linestyle() == ":"
    moved = {s.clusters["alpha"].hpa_max for s in steps}
    assert len(moved) > 1  # the controller moved alpha's max during gamma's outage: the line shows it


def test_the_fleet_panel_draws_f_min_and_f_max(fig):
    drawn = lines(fig.axes[0])
    assert set(drawn[label].get_ydata()[0] for label in ("F.min", "F.max")) == {3.0, 45.0}


def test_a_down_clusters_replicas_are_not_stacked_against_f_max(fig):
    (gamma,) = [c for c in fig.axes[0].collections if c.get_label() == "gamma"]
    vertices = gamma.get_paths()[0].vertices

    def thickness(lo: float, hi: float) -> float:
        ys = [y for x, y in vertices if lo < x < hi]
        return max(ys) - min(ys)

    assert thickness(1, DOWN[0] - 1) > 0  # stacked while it serves
    assert thickness(DOWN[0] + 0.5, DOWN[1] - 0.5) == 0  # nothing stacked while it is down
    down = [s.clusters["gamma"] for s in run().steps if DOWN[0] * 60 <= s.t < DOWN[1] * 60]
    assert all(c.down and c.replicas > 0 for c in down)  # although its replicas still exist


def test_action_markers_are_labelled_by_kind_and_drawn_where_they_happened(fig):
    legends = [c for c in fig.axes[0].get_children() if isinstance(c, Legend)]
    texts = {t.get_text() for legend in legends for t in legend.get_texts()}
    assert ACTION_STYLES["create"][2] in texts and ACTION_STYLES["update"][2] in texts
    markers = [line for line in fig.axes[2].get_lines() if line.get_marker() == ACTION_STYLES["update"][0]]
    assert markers  # alpha's bounds were changed, and the marker sits in alpha's panel


def test_the_x_axis_is_in_minutes(fig):
    assert fig.axes[-1].get_xlabel() == "minutes since start"
    assert fig.axes[-1].get_xlim()[1] == pytest.approx(30.0)


def test_write_png_writes_a_png(tmp_path):
    path = tmp_path / "timeline.png"
    write_png(run(), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@cache
def crowded() -> RunResult:
    """One cluster with room for 4 pods under a load that asks for about 10: the rest pend."""
    clusters = [{"name": "alpha", "capacity": 4, "podStartup": "30s", "replicas": 2}]
    assignment = {"federatedHPAAssignmentType": "Aggregated"}
    doc = fleet_doc(
        "crowded", "10m", clusters, 800, minReplicas=2, maxReplicas=20, federatedHPAAssignment=assignment
    )
    return simulate(parse_scenario(doc, "test"))


def test_the_fleet_panel_stacks_scheduled_replicas_and_draws_pending_apart():
    result = crowded()
    last = result.steps[-1].clusters["alpha"]
    assert last.pending > 0 and last.ready + last.starting == 4  # the scenario does crowd
    figure = draw_timeline(result)
    try:
        collections = {c.get_label(): c for c in figure.axes[0].collections}
        stacked = max(y for _, y in collections["alpha"].get_paths()[0].vertices)
        assert stacked == 4.0  # what is scheduled, not spec.replicas
        pending = max(y for _, y in collections["pending (not scheduled)"].get_paths()[0].vertices)
        assert pending == float(max(s.clusters["alpha"].replicas for s in result.steps))
    finally:
        plt.close(figure)
