"""The committed CRDs are exactly what scripts/gen_crds.py generates from the models, and are structural."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_crds", ROOT / "scripts" / "gen_crds.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()


def test_committed_crds_match_the_generator() -> None:
    for name, text in GEN.render_crds().items():
        committed = (ROOT / "manifests" / "crds" / name).read_text(encoding="utf-8")
        assert committed == text, f"manifests/crds/{name} is stale: run python scripts/gen_crds.py"


def test_check_mode_reports_drift(tmp_path: Path) -> None:
    assert GEN.main(["--out", str(tmp_path)]) == 0
    assert GEN.main(["--check", "--out", str(tmp_path)]) == 0
    target = next(tmp_path.iterdir())
    target.write_text(target.read_text() + "# edited\n")
    assert GEN.main(["--check", "--out", str(tmp_path)]) == 1


def _crd(name: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "manifests" / "crds" / name).read_text())


def _walk(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    out = [(path, node)]
    for key, child in node.get("properties", {}).items():
        out.extend(_walk(child, f"{path}.{key}"))
    if "items" in node:
        out.extend(_walk(node["items"], f"{path}[]"))
    if isinstance(node.get("additionalProperties"), dict):
        out.extend(_walk(node["additionalProperties"], f"{path}{{}}"))
    return out


def test_schemas_are_structural() -> None:
    for name in (
        "autoscaling.karmada.io_federatedhpas.yaml",
        "autoscaling.karmada.io_cronfederatedhpas.yaml",
    ):
        schema = _crd(name)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for path, node in _walk(schema):
            assert "$ref" not in node and "nullable" not in node, path
            assert "type" in node or node.get("x-kubernetes-int-or-string") is True, path
            if "anyOf" in node:
                assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path


def test_fhpa_crd_names_defaults_and_columns() -> None:
    crd = _crd("autoscaling.karmada.io_federatedhpas.yaml")
    assert crd["spec"]["names"]["shortNames"] == ["fhpa"]
    version = crd["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns == ["Reference-Kind", "Reference", "MinPods", "MaxPods", "Replicas", "Policy", "Age"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["scaleTargetRef", "maxReplicas"]
    assert spec["properties"]["minReplicas"]["default"] == 1
    behavior = spec["properties"]["behavior"]["properties"]
    assert behavior["scaleUp"]["properties"]["stabilizationWindowSeconds"]["default"] == 0
    assert "default" not in behavior["scaleDown"]["properties"]["stabilizationWindowSeconds"]
    target = spec["properties"]["metrics"]["items"]["properties"]["resource"]["properties"]["target"]
    assert target["properties"]["averageValue"]["x-kubernetes-int-or-string"] is True


def test_status_fields_of_the_models_are_in_the_crd() -> None:
    crd = _crd("autoscaling.karmada.io_federatedhpas.yaml")
    status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    assert {"observedGeneration", "currentReplicas", "desiredReplicas", "conditions", "clusters"} <= set(
        status
    )
    cluster = status["clusters"]["items"]["properties"]
    assert {"name", "minReplicas", "maxReplicas", "readyReplicas", "pendingReplicas"} <= set(cluster)


def test_cron_crd_names_defaults_and_columns() -> None:
    crd = _crd("autoscaling.karmada.io_cronfederatedhpas.yaml")
    assert crd["spec"]["names"]["shortNames"] == ["cronfhpa"]
    version = crd["spec"]["versions"][0]
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Reference-Kind",
        "Reference-Name",
        "Next",
        "Last-Result",
        "Age",
    ]
    rules = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["rules"]
    rule = rules["items"]["properties"]
    assert (rule["suspend"]["default"], rule["successfulHistoryLimit"]["default"]) == (False, 3)
    assert (rule["failedHistoryLimit"]["minimum"], rule["name"]["maxLength"]) == (0, 32)
    assert rules["x-kubernetes-list-map-keys"] == ["name"]
