"""`fhpa cron next`: next fires per rule as JSON, with local offsets, for every example."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from fhpa.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

CRON = """\
apiVersion: autoscaling.karmada.io/v1alpha1
kind: CronFederatedHPA
metadata: {name: peak, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  rules:
  - name: early
    schedule: "30 2 * * *"
    timeZone: America/Los_Angeles
    targetReplicas: 10
  - name: paused
    schedule: "@hourly"
    suspend: true
    targetReplicas: 1
  - name: plain
    schedule: "3 * * * *"
    targetReplicas: 2
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(["cron", "next", *argv])
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else out, err


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    path = tmp_path / "cron.yaml"
    path.write_text(CRON)
    return path


def test_dst_local_offsets_and_utc(capsys: pytest.CaptureFixture[str], manifest: Path) -> None:
    code, report, _ = run(capsys, str(manifest), "--from", "2026-03-07T12:00:00-08:00", "-n", "2")
    assert code == 0
    early = report["rules"][0]
    assert early["name"] == "early" and early["timeZone"] == "America/Los_Angeles"
    assert early["next"] == [
        {"local": "2026-03-08T03:00:00-07:00", "utc": "2026-03-08T10:00:00Z"},  # 02:30 skipped -> 03:00 PDT
        {"local": "2026-03-09T02:30:00-07:00", "utc": "2026-03-09T09:30:00Z"},
    ]


def test_suspended_rule_reports_empty_list(capsys: pytest.CaptureFixture[str], manifest: Path) -> None:
    _, report, _ = run(capsys, str(manifest), "--from", "2026-01-01T00:00:00Z")
    assert report["rules"][1] == {"name": "paused", "timeZone": "UTC", "next": []}


def test_seed_example_and_naive_from_is_utc(capsys: pytest.CaptureFixture[str], manifest: Path) -> None:
    _, report, _ = run(capsys, str(manifest), "--from", "2026-05-01T09:04:00", "-n", "1")
    assert report["rules"][2]["next"] == [
        {"local": "2026-05-01T10:03:00+00:00", "utc": "2026-05-01T10:03:00Z"}
    ]
    _, report, _ = run(capsys, str(manifest), "--from", "2026-05-01T09:01:00Z", "-n", "1")
    assert report["rules"][2]["next"][0]["utc"] == "2026-05-01T09:03:00Z"


def test_default_time_zone_flag(capsys: pytest.CaptureFixture[str], manifest: Path) -> None:
    args = ("--from", "2026-05-01T00:00:00Z", "-n", "1", "--default-time-zone", "Asia/Shanghai")
    _, report, _ = run(capsys, str(manifest), *args)
    assert report["rules"][2]["timeZone"] == "Asia/Shanghai"
    assert report["rules"][2]["next"] == [
        {"local": "2026-05-01T08:03:00+08:00", "utc": "2026-05-01T00:03:00Z"}
    ]


def test_default_count_is_five(capsys: pytest.CaptureFixture[str], manifest: Path) -> None:
    _, report, _ = run(capsys, str(manifest), "--from", "2026-05-01T00:00:00Z")
    assert [len(r["next"]) for r in report["rules"]] == [5, 0, 5]


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("cron*.yaml")))
def test_every_cron_example_answers(capsys: pytest.CaptureFixture[str], example: str) -> None:
    code, report, err = run(capsys, str(EXAMPLES / example), "--from", "2026-06-01T00:00:00Z", "-n", "3")
    assert code == 0, err
    assert report["rules"]
    for rule in report["rules"]:
        assert set(rule) - {"skipped"} == {"name", "timeZone", "next"}  # skipped: a rule with exclusions
        assert all(set(fire) == {"local", "utc"} for fire in rule["next"])


def test_several_objects_prefix_rule_names(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "two.yaml"
    path.write_text(CRON + "---\n" + CRON.replace("name: peak", "name: other"))
    _, report, _ = run(capsys, str(path), "-n", "1")
    assert [r["name"] for r in report["rules"]][:4] == [
        "peak/early",
        "peak/paused",
        "peak/plain",
        "other/early",
    ]


def test_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(CRON))
    code, report, _ = run(capsys, "-", "-n", "1")
    assert code == 0 and len(report["rules"]) == 3


def test_bad_schedule_exits_1_naming_the_rule(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(CRON.replace('"3 * * * *"', '"@every 5m"'))
    code, _, err = run(capsys, str(path))
    assert code == 1
    assert "spec.rules[2].schedule" in err and "@every" in err


def test_bad_zone_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(CRON.replace("America/Los_Angeles", "Mars/Olympus"))
    code, _, err = run(capsys, str(path))
    assert code == 1 and "spec.rules[0].timeZone" in err


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [(("--from", "yesterday"), "ISO 8601"), (("-n", "0"), "out of range"), (("-n", "5000"), "out of range")],
)
def test_bad_arguments_exit_1(
    capsys: pytest.CaptureFixture[str], manifest: Path, argv: tuple[str, ...], fragment: str
) -> None:
    code, _, err = run(capsys, str(manifest), *argv)
    assert code == 1 and fragment in err


def test_no_cron_object_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(EXAMPLES / "federatedhpa-duplicated.yaml"))
    assert code == 1 and "no CronFederatedHPA" in err


def test_unreadable_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, str(tmp_path / "missing.yaml"))
    assert code == 2 and "no such file" in err
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: [unclosed\n")
    code, _, err = run(capsys, str(broken))
    assert code == 2 and "line" in err


HOLIDAYS = """\
apiVersion: autoscaling.karmada.io/v1alpha1
kind: CronFederatedHPA
metadata: {name: peak, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  rules:
  - name: morning
    schedule: "0 8 * * *"
    timeZone: Europe/Berlin
    targetReplicas: 10
    excludeDates: ["2026-12-24..2026-12-26"]
    excludeCalendarRef: {name: holidays}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: holidays, namespace: shop}
data:
  dates: |
    # company holidays
    2026-12-31..2027-01-01
"""


def test_excluded_days_are_skipped_and_said_why(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "holidays.yaml"
    path.write_text(HOLIDAYS)
    code, report, _ = run(capsys, str(path), "--from", "2026-12-23T12:00:00Z", "-n", "4")
    assert code == 0
    rule = report["rules"][0]
    assert [f["local"][:10] for f in rule["next"]] == ["2026-12-27", "2026-12-28", "2026-12-29", "2026-12-30"]
    assert rule["skipped"] == [
        {
            "local": "2026-12-24T08:00:00+01:00",
            "utc": "2026-12-24T07:00:00Z",
            "excludedBy": "2026-12-24..2026-12-26 (excludeDates)",
        }
    ]
    code, report, _ = run(capsys, str(path), "--from", "2026-12-30T12:00:00Z", "-n", "1")
    assert report["rules"][0]["next"][0]["local"].startswith("2027-01-02")
    assert (
        report["rules"][0]["skipped"][0]["excludedBy"] == "2026-12-31..2027-01-01 (calendar holidays/dates)"
    )


def test_a_calendar_missing_from_the_file_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "alone.yaml"
    path.write_text(HOLIDAYS.split("---")[0])
    code, _, err = run(capsys, str(path))
    assert code == 1 and "ConfigMap shop/holidays is not in FILE" in err
