"""`fhpa assign`: every example of DESIGN §3 through the command, invalid and malformed input."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from fhpa.cli import main


def manifest(
    policy: str, lo: int, hi: int, prefs: list[dict[str, Any]] | None = None, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": lo,
        "maxReplicas": hi,
        "federatedHPAAssignment": {"federatedHPAAssignmentType": policy},
        **spec,
    }
    if prefs:
        body["federatedHPAAssignment"]["clusterAutoscalingPreference"] = prefs
    return {
        "apiVersion": "autoscaling.karmada.io/v1alpha1",
        "kind": "FederatedHPA",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": body,
    }


def pref(name: str, **fields: int) -> dict[str, Any]:
    return {"targetCluster": {"clusterNames": [name]}, **fields}


def assign(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, document: Any, suffix: str = ".yaml"
) -> tuple[int, str, str]:
    path = tmp_path / f"input{suffix}"
    path.write_text(json.dumps(document) if suffix == ".json" else yaml.safe_dump(document))
    code = main(["assign", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def result(capsys: pytest.CaptureFixture[str], tmp_path: Path, document: Any) -> dict[str, Any]:
    code, out, err = assign(capsys, tmp_path, document)
    assert code == 0, err
    return json.loads(out)


def table(output: dict[str, Any]) -> dict[str, tuple[int, int, int]]:
    return {c["name"]: (c["minReplicas"], c["maxReplicas"], c["replicas"]) for c in output["clusters"]}


def test_seed000_duplicated(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = {
        "federatedHPA": manifest(
            "Duplicated",
            3,
            10,
            clusterAffinity={"clusterNames": ["member1", "member2", "member3", "member5"]},
        ),
        "clusters": [
            {"name": "member1", "currentReplicas": 1},
            {"name": "member2", "currentReplicas": 4},
            {"name": "member3", "currentReplicas": 20},
            {"name": "member4", "currentReplicas": 5},
            {"name": "member5"},
        ],
    }
    out = result(capsys, tmp_path, doc)
    assert table(out) == {
        "member1": (3, 10, 3),
        "member2": (3, 10, 4),
        "member3": (3, 10, 10),
        "member5": (3, 10, 3),
    }
    assert out["unassigned"] == ["member4"]


STATIC_PREFS = [
    pref("member1", staticWeight=1),
    pref("member2", staticWeight=2),
    pref("member3", staticWeight=3),
]
STATIC_CLUSTERS = [
    {"name": "member3"},
    {"name": "member1", "currentReplicas": 1},
    {"name": "member2", "currentReplicas": 4},
]


def test_seed002_static_weighted(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = {"federatedHPA": manifest("StaticWeighted", 2, 10, STATIC_PREFS), "clusters": STATIC_CLUSTERS}
    out = result(capsys, tmp_path, doc)
    assert table(out) == {"member1": (1, 1, 1), "member2": (1, 4, 4), "member3": (2, 5, 2)}
    assert [c["name"] for c in out["clusters"]] == ["member1", "member2", "member3"]  # sorted by name
    assert out["unassigned"] == []


def test_seed002_static_weighted_scaling_to_zero(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    fhpa = manifest("StaticWeighted", 2, 10, STATIC_PREFS, scalingToZero=True)
    out = result(capsys, tmp_path, {"federatedHPA": fhpa, "clusters": STATIC_CLUSTERS})
    assert table(out) == {"member1": (1, 1, 1), "member2": (1, 4, 4), "member3": (2, 5, 0)}


def test_seed002_dynamic_weighted(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    clusters = [
        {"name": "member1", "availableReplicas": 1},
        {"name": "member2", "availableReplicas": 5},
        {"name": "member3", "availableReplicas": 2},
    ]
    out = result(capsys, tmp_path, {"federatedHPA": manifest("DynamicWeighted", 8, 24), "clusters": clusters})
    # the capacity cap: no cluster gets a max it cannot hold; the 16 nobody holds go to the most available
    assert table(out) == {"member1": (1, 1, 1), "member2": (5, 21, 5), "member3": (2, 2, 2)}


def test_seed002_aggregated(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    clusters = [
        {"name": "member1", "availableReplicas": 8},
        {"name": "member2", "availableReplicas": 2},
        {"name": "member3", "availableReplicas": 2},
    ]
    out = result(capsys, tmp_path, {"federatedHPA": manifest("Aggregated", 8, 24), "clusters": clusters})
    assert table(out) == {"member1": (8, 20, 8), "member2": (1, 2, 1), "member3": (1, 2, 1)}


@pytest.mark.parametrize(("to_zero", "member2_replicas"), [(True, 0), (False, 1)])
def test_seed002_prioritized(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, to_zero: bool, member2_replicas: int
) -> None:
    prefs = [pref("member1", priority=2), pref("member2", priority=1)]
    clusters = [
        {"name": "member1", "currentReplicas": 15, "availableReplicas": 20},
        {"name": "member2", "availableReplicas": 1},
    ]
    fhpa = manifest("Prioritized", 8, 24, prefs, scalingToZero=to_zero)
    out = result(capsys, tmp_path, {"federatedHPA": fhpa, "clusters": clusters})
    assert table(out) == {"member1": (8, 23, 15), "member2": (1, 1, member2_replicas)}


def test_current_above_available_is_read_as_pending(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A cluster given 8 current and room for 0 runs nothing: its 8 pend, so it is not kept a max of 8."""
    prefs = [pref("a", staticWeight=1), pref("b", staticWeight=1)]
    clusters = [
        {"name": "a", "currentReplicas": 8, "availableReplicas": 0},
        {"name": "b", "currentReplicas": 2, "availableReplicas": 30},
    ]
    out = result(
        capsys, tmp_path, {"federatedHPA": manifest("StaticWeighted", 4, 12, prefs), "clusters": clusters}
    )
    # a runs nothing: step 5 moves the one replica of max step 2 gave it to b, which has the room
    assert table(out) == {"b": (4, 12, 4)}
    assert out["unassigned"] == ["a"]


def test_the_help_says_how_current_above_available_is_read(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["assign", "--help"])
    text = " ".join(capsys.readouterr().out.replace("`", "").split())
    assert "a currentReplicas above availableReplicas is read as the excess pending" in text


def test_unhealthy_tainted_and_unselected_clusters_are_unassigned(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fhpa = manifest(
        "StaticWeighted",
        1,
        6,
        [pref("a", staticWeight=1), pref("b", staticWeight=1), pref("c", staticWeight=1)],
        clusterAffinity={"labelSelector": {"matchLabels": {"env": "prod"}}, "exclude": ["e"]},
    )
    clusters = [
        {"name": "a", "labels": {"env": "prod"}},
        {"name": "b", "labels": {"env": "prod"}, "healthy": False},
        {"name": "c", "labels": {"env": "prod"}, "taints": [{"key": "drain", "effect": "NoExecute"}]},
        {"name": "d", "labels": {"env": "dev"}},
        {"name": "e", "labels": {"env": "prod"}},
    ]
    out = result(capsys, tmp_path, {"federatedHPA": fhpa, "clusters": clusters})
    assert table(out) == {"a": (1, 6, 1)}
    assert out["unassigned"] == ["b", "c", "d", "e"]


def test_field_selector_on_region(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    selector = {"matchExpressions": [{"key": "region", "operator": "In", "values": ["eu"]}]}
    fhpa = manifest("Duplicated", 1, 4, clusterAffinity={"fieldSelector": selector})
    clusters = [{"name": "x", "region": "eu"}, {"name": "y", "region": "us"}]
    out = result(capsys, tmp_path, {"federatedHPA": fhpa, "clusters": clusters})
    assert table(out) == {"x": (1, 4, 1)}


def test_json_input_and_stdin(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = {"federatedHPA": manifest("Duplicated", 2, 4), "clusters": [{"name": "a"}]}
    code, out, _ = assign(capsys, tmp_path, doc, suffix=".json")
    assert code == 0 and table(json.loads(out)) == {"a": (2, 4, 2)}
    monkeypatch.setattr("sys.stdin", io.StringIO(yaml.safe_dump(doc)))
    assert main(["assign", "-"]) == 0
    assert table(json.loads(capsys.readouterr().out)) == {"a": (2, 4, 2)}


def test_invalid_federated_hpa_prints_errors_like_validate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = {"federatedHPA": manifest("Duplicated", 5, 3), "clusters": [{"name": "a"}]}
    code, out, _ = assign(capsys, tmp_path, doc)
    assert code == 1
    lines = out.strip().splitlines()
    assert lines and all(
        line.startswith(f"{tmp_path / 'input.yaml'}: FederatedHPA shop/web: ") for line in lines
    )
    assert any("maxReplicas" in line or "minReplicas" in line for line in lines)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (["not", "a", "mapping"], "must be a mapping"),
        ({"clusters": []}, "federatedHPA"),
        ({"federatedHPA": manifest("Duplicated", 1, 2)}, "clusters"),
        (
            {"federatedHPA": manifest("Duplicated", 1, 2), "clusters": [{"name": "a"}], "extra": 1},
            "unknown keys",
        ),
        (
            {"federatedHPA": manifest("Duplicated", 1, 2), "clusters": [{"name": "a"}, {"name": "a"}]},
            "duplicate",
        ),
        (
            {
                "federatedHPA": manifest("Duplicated", 1, 2),
                "clusters": [{"name": "a", "currentReplicas": -1}],
            },
            "clusters[0].currentReplicas",
        ),
        (
            {"federatedHPA": manifest("Duplicated", 1, 2), "clusters": [{"name": "a", "replicas": 3}]},
            "clusters[0].replicas",
        ),
        ({"federatedHPA": manifest("Duplicated", 1, 2), "clusters": [{"labels": {}}]}, "clusters[0].name"),
    ],
)
def test_malformed_input_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, document: Any, message: str
) -> None:
    code, out, err = assign(capsys, tmp_path, document)
    assert code == 2
    assert out == ""
    assert message in err


def test_unreadable_input_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("federatedHPA: [unclosed\n")
    assert main(["assign", str(bad)]) == 2
    assert "invalid YAML" in capsys.readouterr().err
    assert main(["assign", str(tmp_path / "missing.yaml")]) == 2


def test_a_cron_federated_hpa_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cron = {
        "apiVersion": "autoscaling.karmada.io/v1alpha1",
        "kind": "CronFederatedHPA",
        "metadata": {"name": "c", "namespace": "shop"},
        "spec": {
            "scaleTargetRef": {
                "apiVersion": "autoscaling.karmada.io/v1alpha1",
                "kind": "FederatedHPA",
                "name": "web",
            },
            "rules": [{"name": "r", "schedule": "0 * * * *", "targetMaxReplicas": 5}],
        },
    }
    code, _, err = assign(capsys, tmp_path, {"federatedHPA": cron, "clusters": []})
    assert code == 2 and "must be a FederatedHPA" in err
