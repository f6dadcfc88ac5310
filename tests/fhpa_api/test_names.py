"""Kubernetes name rules: each check accepts the valid form and explains the invalid one."""

from __future__ import annotations

import pytest

from fhpa_api import names


@pytest.mark.parametrize("value", ["a", "member-1", "0abc", "x" * 63])
def test_dns1123_label_accepted(value: str) -> None:
    assert names.dns1123_label(value) is None


@pytest.mark.parametrize("value", ["", "A", "-a", "a-", "a.b", "a_b", "x" * 64])
def test_dns1123_label_refused(value: str) -> None:
    message = names.dns1123_label(value)
    assert message and ("label" in message or "empty" in message)


@pytest.mark.parametrize("value", ["web", "web.example.com", "a-b.c-d", "x" * 253])
def test_dns1123_subdomain_accepted(value: str) -> None:
    assert names.dns1123_subdomain(value) is None


@pytest.mark.parametrize("value", ["", "Web", "web..x", ".web", "web.", "a_b", "x" * 254])
def test_dns1123_subdomain_refused(value: str) -> None:
    assert names.dns1123_subdomain(value)


@pytest.mark.parametrize("value", ["Deployment", "a.b", "...", "name with space", "UPPER_x"])
def test_path_segment_accepted(value: str) -> None:
    assert names.path_segment(value) is None


@pytest.mark.parametrize("value", ["", ".", "..", "a/b", "50%"])
def test_path_segment_refused(value: str) -> None:
    assert names.path_segment(value)


@pytest.mark.parametrize("value", ["app", "example.com/tier", "kubernetes.io/os", "A_b.c-D"])
def test_qualified_name_accepted(value: str) -> None:
    assert names.qualified_name(value) is None


@pytest.mark.parametrize("value", ["", "/x", "Example.com/x", "a/", "-a", "x" * 64, "a/b/c"])
def test_qualified_name_refused(value: str) -> None:
    assert names.qualified_name(value)


@pytest.mark.parametrize("value", ["", "gold", "v1.2_x"])
def test_label_value_accepted(value: str) -> None:
    assert names.label_value(value) is None


@pytest.mark.parametrize("value", ["-x", "a b", "x" * 64])
def test_label_value_refused(value: str) -> None:
    assert names.label_value(value)


@pytest.mark.parametrize(
    "value", ["cpu", "memory", "ephemeral-storage", "hugepages-1Gi", "nvidia.com/gpu", "kubernetes.io/batch"]
)
def test_container_resource_name_accepted(value: str) -> None:
    assert names.container_resource_name(value) is None


@pytest.mark.parametrize("value", ["", "gpu", "storage", "bad prefix/gpu", "nvidia.com/"])
def test_container_resource_name_refused(value: str) -> None:
    message = names.container_resource_name(value)
    assert message and "nvidia.com/gpu" in message
