"""`fhpa validate`: OK lines, one line per error with its path, warnings on stderr, exit codes, JSON."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from fhpa.cli import main

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"

FHPA = """\
apiVersion: autoscaling.karmada.io/v1alpha1
kind: FederatedHPA
metadata:
  name: web
  namespace: shop
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
  maxReplicas: 5
"""


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["validate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_every_example_is_ok(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(EXAMPLES))
    lines = out.splitlines()
    assert code == 0, out + err
    assert len(lines) == len([p for p in EXAMPLES.iterdir() if p.suffix == ".yaml"])
    assert all(line.endswith(": OK") for line in lines)
    assert (
        f"{EXAMPLES / 'federatedhpa-prioritized.yaml'}: FederatedHPA analytics/report-renderer: OK" in lines
    )


def test_defaulting_runs_before_validation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """minReplicas is absent: the default 1 applies; a scaleUp without policies gets the default ones."""
    path = write(
        tmp_path, "web.yaml", FHPA + "  behavior:\n    scaleUp:\n      stabilizationWindowSeconds: 30\n"
    )
    code, out, _ = run(capsys, path)
    assert (code, out) == (0, f"{path}: FederatedHPA shop/web: OK\n")


def test_each_error_is_one_line_with_its_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = FHPA.replace("maxReplicas: 5", "maxReplicas: 0\n  minReplicas: 0").replace(
        "name: web\n  namespace", "name: Web\n  namespace"
    )
    path = write(tmp_path, "bad.yaml", text)
    code, out, _ = run(capsys, path)
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 3
    assert all(line.startswith(f"{path}: FederatedHPA shop/Web: ") for line in lines)
    assert {line.split(": ")[2] for line in lines} == {
        "metadata.name",
        "spec.minReplicas",
        "spec.maxReplicas",
    }


def test_warnings_go_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "w.yaml", FHPA + "  scalingToZero: true\n")
    code, out, err = run(capsys, path)
    assert code == 0
    assert out.endswith(": OK\n")
    assert "warning: spec.scalingToZero:" in err


def test_multi_document_file_and_foreign_objects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
    cron = (EXAMPLES / "cronfederatedhpa-deployment.yaml").read_text()
    path = write(tmp_path, "all.yaml", f"{deployment}---\n{FHPA}---\n{cron}")
    code, out, err = run(capsys, path)
    assert code == 0
    assert len(out.splitlines()) == 2
    assert "Deployment apps/v1: skipped" in err


def test_a_misspelt_kind_of_our_group_is_not_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "k.yaml", FHPA.replace("kind: FederatedHPA", "kind: FederatedHpa"))
    code, out, _ = run(capsys, path)
    assert code == 1
    assert ": kind: 'FederatedHpa' is not supported" in out


def test_bad_yaml_exits_2_and_names_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "broken.yaml", FHPA + "  minReplicas: [1\n")
    good = str(EXAMPLES / "federatedhpa-duplicated.yaml")
    code, out, err = run(capsys, path, good)
    assert code == 2
    assert f"{path}: line " in err
    assert out.endswith(": OK\n"), "the readable file is still checked"


def test_unreadable_wins_over_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, "bad.yaml", FHPA.replace("maxReplicas: 5", "maxReplicas: 0"))
    code, _, err = run(capsys, bad, str(tmp_path / "missing.yaml"))
    assert code == 2
    assert "no such file" in err


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(FHPA))
    code, out, _ = run(capsys, "-")
    assert (code, out) == (0, "<stdin>: FederatedHPA shop/web: OK\n")


def test_json_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "web.json", json.dumps(yaml.safe_load(FHPA)))
    assert run(capsys, path)[0] == 0


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(
        tmp_path, "bad.yaml", FHPA.replace("maxReplicas: 5", "maxReplicas: 0") + "  scalingToZero: true\n"
    )
    code, out, err = run(capsys, "--output", "json", bad)
    report = json.loads(out)
    assert code == 1
    assert err == ""
    assert report["valid"] is False
    assert report["exitCode"] == 1
    (doc,) = report["documents"]
    assert (doc["kind"], doc["namespace"], doc["name"], doc["ok"]) == ("FederatedHPA", "shop", "web", False)
    assert doc["errors"][0]["path"] == "spec.maxReplicas"
    assert "must be an integer >= 1" in doc["errors"][0]["message"]
    assert doc["warnings"] and doc["warnings"][0].startswith("spec.scalingToZero:")


def test_a_document_that_is_not_an_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "list.yaml", "- a\n- b\n")
    code, out, _ = run(capsys, path)
    assert code == 1
    assert "object: must be an object" in out


@pytest.mark.parametrize(
    ("example", "path", "value", "field"),
    [
        ("federatedhpa-duplicated.yaml", ["spec", "maxReplicas"], 1, "spec.maxReplicas"),
        (
            "federatedhpa-static-weighted.yaml",
            ["spec", "federatedHPAAssignment", "clusterAutoscalingPreference"],
            [],
            "spec.federatedHPAAssignment.clusterAutoscalingPreference",
        ),
        (
            "federatedhpa-dynamic-weighted.yaml",
            ["spec", "metrics", 0, "resource", "target", "averageValue"],
            "-3Gi",
            "spec.metrics[0].resource.target.averageValue",
        ),
        (
            "federatedhpa-aggregated.yaml",
            ["spec", "autoscaleMultiClusterDelay"],
            -5,
            "spec.autoscaleMultiClusterDelay",
        ),
        (
            "federatedhpa-prioritized.yaml",
            ["spec", "behavior", "scaleDown", "policies", 0, "periodSeconds"],
            3600,
            "spec.behavior.scaleDown.policies[0].periodSeconds",
        ),
        (
            "cronfederatedhpa-federatedhpa.yaml",
            ["spec", "rules", 0, "schedule"],
            "30 7 * * MON-FRI 2027",
            "spec.rules[0].schedule",
        ),
        (
            "cronfederatedhpa-deployment.yaml",
            ["spec", "rules", 1, "targetReplicas"],
            -1,
            "spec.rules[1].targetReplicas",
        ),
    ],
)
def test_a_hand_broken_copy_of_each_example_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], example: str, path: list, value: object, field: str
) -> None:
    doc = yaml.safe_load((EXAMPLES / example).read_text())
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    broken = write(tmp_path, example, yaml.safe_dump(doc))
    code, out, _ = run(capsys, broken)
    assert code == 1
    (line,) = out.splitlines()
    assert f": {field}: " in line
    assert any(word in line for word in ("use", "must", "allowed", ">=", "from")), line


@pytest.mark.parametrize("text", ["", "---\n# nothing yet\n---\n"])
def test_an_empty_file_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    path = write(tmp_path, "empty.yaml", text)
    code, out, err = run(capsys, path)
    assert code == 1
    assert out == ""
    assert err == f"error: no FederatedHPA or CronFederatedHPA objects in {path}\n"


def test_a_directory_without_our_objects_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, "deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n")
    code, out, err = run(capsys, str(tmp_path))
    assert code == 1
    assert out == ""
    assert "skipped" in err
    assert err.endswith(f"error: no FederatedHPA or CronFederatedHPA objects in {tmp_path}\n")


def test_empty_stdin_is_an_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert run(capsys, "-") == (1, "", "error: no FederatedHPA or CronFederatedHPA objects in <stdin>\n")


def test_one_empty_input_among_others_is_fine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The objects may live in any of the inputs: only all of them empty is an error."""
    empty, web = write(tmp_path, "empty.yaml", ""), write(tmp_path, "web.yaml", FHPA)
    code, _, err = run(capsys, empty, web)
    assert (code, err) == (0, "")


def test_empty_input_in_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "empty.yaml", "")
    code, out, _ = run(capsys, "--output", "json", path)
    report = json.loads(out)
    assert code == 1
    assert (report["valid"], report["exitCode"], report["documents"]) == (False, 1, [])
    assert report["error"] == f"no FederatedHPA or CronFederatedHPA objects in {path}"
