"""The build scripts of the real-server tiers take the Debian mirror from the machine, never from us.

scripts/debian-mirror.sh reads the machine's apt sources (deb822 ``*.sources`` and one-line ``*.list``
files) and prints the Debian archive for its release; with none it fails with a message instead of
falling back to a host written in the project. Run against made-up /etc/apt trees.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "debian-mirror.sh"
BUILD_SCRIPTS = [REPO / "scripts" / "kube-build.sh", REPO / "scripts" / "realapi-build.sh", SCRIPT]

THIRD_PARTY = """Types: deb
URIs: https://third-party.example/node_20.x
Suites: nodistro
Components: main
"""
SECURITY = """Types: deb
URIs: http://security.example/debian-security
Suites: bookworm-security
Components: main
"""
ARCHIVE = """Types: deb
# a comment line inside the paragraph
URIs: http://archive.example/debian
Suites: bookworm bookworm-updates
Components: main
"""


def mirror(
    tmp_path: Path, files: dict[str, str], codename: str = "bookworm", env: dict[str, str] | None = None
):
    etc = tmp_path / "apt"
    (etc / "sources.list.d").mkdir(parents=True)
    for name, text in files.items():
        (etc / name).write_text(text)
    os_release = tmp_path / "os-release"
    os_release.write_text(f'ID=debian\nVERSION_CODENAME="{codename}"\n')
    return subprocess.run(
        ["bash", str(SCRIPT)],
        capture_output=True,
        text=True,
        env={
            "PATH": "/usr/bin:/bin",
            "FHPA_APT_ETC": str(etc),
            "FHPA_OS_RELEASE": str(os_release),
            **(env or {}),
        },
        check=False,
    )


def test_deb822_archive_is_found_past_third_party_and_security_entries(tmp_path: Path) -> None:
    out = mirror(
        tmp_path,
        {
            "sources.list.d/nodesource.sources": THIRD_PARTY,
            "sources.list.d/debian.sources": SECURITY + "\n" + ARCHIVE,
        },
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "http://archive.example/debian"


def test_a_disabled_deb822_entry_is_skipped(tmp_path: Path) -> None:
    disabled = ARCHIVE.replace("Components: main", "Components: main\nEnabled: no")
    out = mirror(tmp_path, {"sources.list.d/debian.sources": disabled})
    assert out.returncode == 1


def test_one_line_sources_with_options_are_read(tmp_path: Path) -> None:
    text = (
        "# deb http://commented.example/debian bookworm main\n"
        "deb [signed-by=/usr/share/keyrings/x.gpg arch=amd64] http://line.example/debian/ bookworm main\n"
    )
    out = mirror(tmp_path, {"sources.list": text})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "http://line.example/debian"


def test_another_release_does_not_count(tmp_path: Path) -> None:
    out = mirror(tmp_path, {"sources.list.d/debian.sources": ARCHIVE}, codename="trixie")
    assert out.returncode == 1
    assert "no Debian archive for 'trixie'" in out.stderr


def test_no_mirror_fails_with_a_message_and_no_fallback(tmp_path: Path) -> None:
    out = mirror(tmp_path, {"sources.list.d/nodesource.sources": THIRD_PARTY})
    assert out.returncode == 1 and out.stdout == ""
    assert "FHPA_DEBIAN_MIRROR" in out.stderr


def test_the_override_wins(tmp_path: Path) -> None:
    out = mirror(tmp_path, {}, env={"FHPA_DEBIAN_MIRROR": "http://proxy.example/debian"})
    assert out.stdout.strip() == "http://proxy.example/debian"


@pytest.mark.parametrize("script", BUILD_SCRIPTS, ids=lambda p: p.name)
def test_no_host_is_written_into_the_build_scripts(script: Path) -> None:
    hosts = re.findall(r"https?://[A-Za-z0-9.-]+\.[A-Za-z]{2,}", script.read_text())
    assert hosts == []
