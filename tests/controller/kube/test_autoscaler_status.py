"""The cluster autoscaler's status ConfigMap, in its readable-text format and in its YAML format.

The samples (``autoscaler_status/``) are written after each format's layout, with sizes chosen here."""

from __future__ import annotations

from pathlib import Path

from controller.kube.autoscaler_status import node_groups, parse_text, parse_yaml
from controller.planning.node_autoscaling import NodeGroup

SAMPLES = Path(__file__).parent / "autoscaler_status"
TEXT = (SAMPLES / "status-text.txt").read_text()
YAML = (SAMPLES / "status.yaml").read_text()

EXPECTED = [
    NodeGroup("cloud-a", min_size=0, max_size=30, target=3, registered=1, scale_up="InProgress"),
    NodeGroup("cloud-b", min_size=2, max_size=2, target=2, registered=2, scale_up="NoActivity"),
]


def test_text_format() -> None:
    assert parse_text(TEXT) == EXPECTED


def test_yaml_format() -> None:
    assert parse_yaml(YAML) == EXPECTED


def test_the_configmap_picks_the_format() -> None:
    for text in (TEXT, YAML):
        assert node_groups({"data": {"status": text}}) == EXPECTED


def test_unreadable_status_names_no_group() -> None:
    assert node_groups(None) == []
    assert node_groups({"data": {"status": "::: not yaml ["}}) == []
    assert node_groups({"data": {"status": "- a list"}}) == []
    assert parse_yaml("nodeGroups: [{name: x, health: {maxSize: many}}]") == []
