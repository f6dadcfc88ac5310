"""docs/install.md is followed by new users word for word: its kustomize overlays render with the real
`kubectl kustomize` and put the pushed image into both Deployments, every `fhpa` command in it parses
with the real CLI, and every repository path it names exists."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from fhpa.cli import build_parser
from tests.support.kustomize import kustomize, needs_kubectl

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "install.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)
PLACEHOLDERS = {"<registry>": "my-registry", "<tag>": "1.2.3", "<name>": "member1"}


def blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(DOC.read_text()) if lang == language]


def overlays() -> dict[str, str]:
    """The doc's kustomization files by path, placeholders filled in."""
    found = {}
    for body in blocks("yaml"):
        first, _, rest = body.partition("\n")
        if first.startswith("# my-fleet/"):
            for placeholder, value in PLACEHOLDERS.items():
                rest = rest.replace(placeholder, value)
            found[first[2:].strip()] = rest
    return found


def commands(program: str) -> list[str]:
    """Shell commands of the doc that start with ``program``, continuation lines joined."""
    found = []
    for body in blocks("sh"):
        for line in body.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith(program + " "):
                found.append(line)
    return found


@needs_kubectl
def test_the_overlays_render_with_the_pushed_image(tmp_path: Path) -> None:
    files = overlays()
    assert set(files) == {"my-fleet/controller/kustomization.yaml", "my-fleet/webhook/kustomization.yaml"}
    (tmp_path / "federated-hpa").symlink_to(REPO)
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True)
        path.write_text(text)
    for part in ("controller", "webhook"):
        docs = kustomize(tmp_path / "my-fleet" / part, home=tmp_path / "cache")
        images = {
            c["image"]
            for d in docs
            if d["kind"] == "Deployment"
            for c in d["spec"]["template"]["spec"]["containers"]
        }
        assert images == {"my-registry/federated-hpa:1.2.3"}, part


def test_every_fhpa_command_parses() -> None:
    found = commands("fhpa")
    assert len(found) >= 5
    for line in found:
        argv = shlex.split(line.replace("~", "/home/user"))[1:]
        argv = [PLACEHOLDERS.get(a, a) for a in argv]
        args = build_parser().parse_args(argv)  # SystemExit (and a failure) on an unknown flag
        assert getattr(args, "func", None) is not None, line


def test_every_repository_path_named_exists() -> None:
    text = DOC.read_text()
    paths = set(re.findall(r"federated-hpa/((?:manifests|examples|docs)/[\w./-]+)", text))
    paths |= set(re.findall(r"`((?:manifests|docs|examples)/[\w./-]+)`", text))
    assert paths
    for relative in sorted(paths):
        relative = relative.rstrip(".")
        if relative.endswith("/certs"):  # made by `fhpa certs generate`, not in the repository
            continue
        assert (REPO / relative).exists(), relative
