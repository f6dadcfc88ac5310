"""The pod runner's pieces that decide what a container sees: the image's entrypoint and ENV, rewritten
paths and bind addresses, volumes written as the kubelet writes them, fields it refuses, Service routing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.pod_runner import REPO, Image, Pod, PodRunner, _check_fields, _rewriter, _write_atomically


def test_the_image_entrypoint_and_env_come_from_the_dockerfile_last_stage() -> None:
    image = Image.from_dockerfile(REPO / "Dockerfile")
    assert image.entrypoint == ["fhpa"]
    assert image.env["TZ"] == "UTC"
    assert "PATH" not in image.env and "PIP_NO_CACHE_DIR" not in image.env  # the build stage's ENV


def test_paths_under_mounts_move_under_the_pod_root_once_and_bind_addresses_to_loopback(
    tmp_path: Path,
) -> None:
    root = tmp_path / "pod"  # itself under /tmp, which is also a mount path below
    rewrite = _rewriter(root, ["/tmp", "/etc/hook/certs"], {8443: 31000, "https": 31000})
    assert rewrite("--cert-dir=/etc/hook/certs") == f"--cert-dir={root}/etc/hook/certs"
    assert rewrite("/tmp") == f"{root}/tmp"
    assert rewrite("/etc/hook/certificates") == "/etc/hook/certificates"  # not under the mount
    assert rewrite("--bind=0.0.0.0:8443") == "--bind=127.0.0.1:31000"
    assert rewrite("--bind=0.0.0.0:9000") == "--bind=0.0.0.0:9000"  # not a container port


def pod(tmp_path: Path, labels: dict[str, str], ready: bool) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    return Pod(
        "p", "system", labels, tmp_path, {"https": 31000, 8443: 31000}, spec, tmp_path / "p.log", ready=ready
    )


def test_a_renewed_secret_replaces_the_files_through_the_data_link(tmp_path: Path) -> None:
    target = tmp_path / "certs"
    holder = pod(tmp_path, {}, True)
    _write_atomically(holder, "certs", target, {"tls.crt": b"one"})
    first = (target / "..data").resolve()
    _write_atomically(holder, "certs", target, {"tls.crt": b"two"})
    assert (target / "tls.crt").is_symlink() and (target / "tls.crt").read_bytes() == b"two"
    assert not first.exists()  # the old generation is gone, as the kubelet removes it


def test_a_field_the_runner_neither_honours_nor_knows_is_refused_by_name() -> None:
    _check_fields("d", {"containers": [], "securityContext": {}}, {"name": "c", "resources": {}})
    with pytest.raises(ValueError, match="hostNetwork, container lifecycle"):
        _check_fields("d", {"containers": [], "hostNetwork": True}, {"name": "c", "lifecycle": {}})


def test_a_service_routes_to_a_ready_pod_with_its_labels_only(tmp_path: Path) -> None:
    # no probing pass during the test: the pods' readiness is set by hand
    runner = PodRunner(
        tmp_path, lambda *_: None, lambda *_: "t", api=("127.0.0.1", 1), ca_pem=b"", period=3600
    )
    try:
        service = {
            "metadata": {"name": "hook", "namespace": "system"},
            "spec": {"selector": {"app": "hook"}, "ports": [{"port": 443, "targetPort": "https"}]},
        }
        runner.pods = [pod(tmp_path, {"app": "other"}, True), pod(tmp_path, {"app": "hook"}, False)]
        assert runner.endpoint(service, 443) is None
        runner.pods.append(pod(tmp_path, {"app": "hook"}, True))
        assert runner.endpoint(service, 443) == ("127.0.0.1", 31000)
        assert runner.endpoint(service, 80) is None
    finally:
        runner.stop()
