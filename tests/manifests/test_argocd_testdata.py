"""The Argo CD customizations in manifests/argocd run against their own test data (Argo CD's layout:
`health_test.yaml`, `actions/action_test.yaml`, `testdata/`) in Debian's real Lua 5.1 interpreter, the
language version Argo CD's gopher-lua implements. The object is handed over as the global `obj`, as
Argo CD does; an action's returned object comes back as JSON and must equal the expected file.

`make test` installs `lua5.1` (scripts/lua-install.sh); outside CI a missing interpreter skips these
tests with that reason, under CI=true it fails them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
GROUP_DIR = REPO / "manifests" / "argocd" / "autoscaling.karmada.io"
LUA = shutil.which("lua5.1")

# A JSON encoder in Lua for the value a script returns (arrays are tables with keys 1..n).
ENCODER = r"""
local function encode(v)
  local t = type(v)
  if t == "nil" then return "null" end
  if t == "boolean" or t == "number" then return tostring(v) end
  if t == "string" then
    return '"' .. v:gsub('[%c"\\]', function(c) return string.format("\\u%04x", c:byte()) end) .. '"'
  end
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  if n > 0 and #v == n then
    local parts = {}
    for i = 1, n do parts[i] = encode(v[i]) end
    return "[" .. table.concat(parts, ",") .. "]"
  end
  local parts = {}
  for k, item in pairs(v) do table.insert(parts, encode(tostring(k)) .. ":" .. encode(item)) end
  return "{" .. table.concat(parts, ",") .. "}"
end
"""


def lua_literal(value: Any) -> str:
    """A Lua table constructor for a JSON-like value."""
    if isinstance(value, dict):
        return "{" + ",".join(f"[{lua_literal(str(k))}]={lua_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "{" + ",".join(lua_literal(v) for v in value) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if value is None:
        return "nil"
    return json.dumps(str(value))  # a JSON string literal is a valid Lua string literal here


def run_lua(script: Path, obj: dict[str, Any]) -> Any:
    """What `script` returns for `obj`, decoded."""
    if LUA is None:
        reason = "lua5.1 is not installed (make test installs it: scripts/lua-install.sh)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + "; required in CI", pytrace=False)
        pytest.skip(reason)
    program = (
        f"{ENCODER}\nobj = {lua_literal(obj)}\nlocal result = (function()\n{script.read_text()}\nend)()\n"
    )
    program += "io.write(encode(result))\n"
    done = subprocess.run([LUA, "-"], input=program, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def health_cases() -> list[Any]:
    cases = []
    for test_file in sorted(GROUP_DIR.glob("*/health_test.yaml")):
        for case in load(test_file)["tests"]:
            cases.append(
                pytest.param(test_file.parent, case, id=f"{test_file.parent.name}-{case['inputPath']}")
            )
    return cases


@pytest.mark.parametrize(("kind_dir", "case"), health_cases())
def test_health_scripts_give_the_expected_status_for_their_test_data(
    kind_dir: Path, case: dict[str, Any]
) -> None:
    result = run_lua(kind_dir / "health.lua", load(kind_dir / case["inputPath"]))
    assert result == case["healthStatus"]


def test_every_health_test_input_is_used_and_deletion_is_covered() -> None:
    for kind_dir in (GROUP_DIR / "FederatedHPA", GROUP_DIR / "CronFederatedHPA"):
        cases = load(kind_dir / "health_test.yaml")["tests"]
        used = {c["inputPath"] for c in cases}
        assert used == {f"testdata/{p.name}" for p in (kind_dir / "testdata").glob("*.yaml")}
        statuses = {c["healthStatus"]["status"] for c in cases}
        assert statuses == {"Healthy", "Progressing", "Degraded", "Suspended"}
        assert "testdata/deleting.yaml" in used


ACTIONS = GROUP_DIR / "FederatedHPA" / "actions"


@pytest.mark.parametrize(
    "case", load(ACTIONS / "action_test.yaml")["discoveryTests"], ids=lambda c: c["inputPath"]
)
def test_discovery_offers_only_the_action_that_changes_something(case: dict[str, Any]) -> None:
    result = run_lua(ACTIONS / "discovery.lua", load(ACTIONS / case["inputPath"]))
    assert result == {item["name"]: {"disabled": item["disabled"]} for item in case["result"]}


@pytest.mark.parametrize("case", load(ACTIONS / "action_test.yaml")["actionTests"], ids=lambda c: c["action"])
def test_actions_pause_and_resume_give_the_expected_object(case: dict[str, Any]) -> None:
    result = run_lua(ACTIONS / case["action"] / "action.lua", load(ACTIONS / case["inputPath"]))
    expected = load(ACTIONS / case["expectedOutputPath"])
    if "annotations" not in expected["metadata"]:
        assert result["metadata"].get("annotations") in (None, {}, [])  # an emptied Lua table
        result["metadata"].pop("annotations", None)
    assert result == expected
