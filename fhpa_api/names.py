"""Kubernetes name rules (DNS-1123, path segments, qualified names, resource names).

Each check returns None when the value is fine, or a sentence saying what is wrong and what is
allowed, so the validators can attach it to the field path they are looking at.
"""

from __future__ import annotations

import re

from fhpa_api.limits import API_VERSION_MAX_CHARS, shorten

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(rf"^{_LABEL}$")
_DNS1123_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
# group/version or just version (core): a DNS subdomain, '/', then v1, v2beta1, v1alpha3. Used with
# fullmatch after a length check; every repetition is anchored by a '.', so a failed match is linear.
_API_VERSION = re.compile(rf"(?:{_LABEL}(?:\.{_LABEL})*/)?v[0-9]+(?:(?:alpha|beta)[0-9]+)?")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
HUGEPAGES_PREFIX = "hugepages-"


def dns1123_label(value: str) -> str | None:
    """A cluster name, a container name, a namespace: lowercase alphanumerics and '-', 1..63."""
    if not value:
        return "must not be empty: use lowercase letters, digits and '-' (a DNS-1123 label)"
    if len(value) > DNS1123_LABEL_MAX:
        return (
            f"{shorten(value)} is {len(value)} characters long; "
            f"a DNS-1123 label has at most {DNS1123_LABEL_MAX}"
        )
    if not _DNS1123_LABEL.match(value):
        return (
            f"{shorten(value)} is not a DNS-1123 label: use lowercase letters, digits and '-', "
            "starting and ending with a letter or digit (e.g. 'member-1')"
        )
    return None


def dns1123_subdomain(value: str) -> str | None:
    """An object name: DNS-1123 labels joined by '.', at most 253 characters."""
    if not value:
        return "must not be empty: use lowercase letters, digits, '-' and '.' (a DNS-1123 subdomain)"
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        return f"is {len(value)} characters long; a DNS-1123 subdomain has at most {DNS1123_SUBDOMAIN_MAX}"
    if not _DNS1123_SUBDOMAIN.match(value):
        return (
            f"{shorten(value)} is not a DNS-1123 subdomain: use lowercase letters, digits, '-' and '.', "
            "starting and ending with a letter or digit (e.g. 'web-frontend')"
        )
    return None


def path_segment(value: str) -> str | None:
    """A kind or name that ends up in a URL path: not '.' or '..', and no '/' or '%'."""
    if not value:
        return "must not be empty"
    if value in (".", ".."):
        return f"{shorten(value)} is not allowed: a name may not be '.' or '..'"
    for forbidden in ("/", "%"):
        if forbidden in value:
            return f"{shorten(value)} may not contain {shorten(forbidden)} (it is used in URL paths)"
    return None


def qualified_name(value: str) -> str | None:
    """A label key: an optional DNS subdomain prefix and '/', then a name of up to 63 characters."""
    if not value:
        return "must not be empty: a qualified name such as 'app' or 'example.com/tier'"
    prefix, slash, name = value.rpartition("/")
    if slash:
        if not prefix:
            return f"{shorten(value)} has an empty prefix before '/'"
        problem = dns1123_subdomain(prefix)
        if problem:
            return f"prefix of {shorten(value)}: {problem}"
    if not name or len(name) > QUALIFIED_NAME_MAX or not _QUALIFIED_NAME.match(name):
        return (
            f"{shorten(value)} is not a qualified name: "
            f"the name part must be 1..{QUALIFIED_NAME_MAX} characters of "
            "letters, digits, '-', '_' and '.', starting and ending with a letter or digit, "
            "optionally prefixed by a DNS subdomain and '/'"
        )
    return None


def label_value(value: str) -> str | None:
    """A label value: empty, or up to 63 letters, digits, '-', '_' and '.', alphanumeric at both ends."""
    if len(value) > QUALIFIED_NAME_MAX or not _LABEL_VALUE.match(value):
        return (
            f"{shorten(value)} is not a valid label value: "
            f"at most {QUALIFIED_NAME_MAX} letters, digits, '-', '_' "
            "and '.', starting and ending with a letter or digit"
        )
    return None


def container_resource_name(value: str) -> str | None:
    """cpu, memory, ephemeral-storage, hugepages-<size>, or a prefixed name such as nvidia.com/gpu."""
    allowed = "use cpu, memory, ephemeral-storage, hugepages-<size> or a prefixed name such as nvidia.com/gpu"
    if not value:
        return f"must not be empty: {allowed}"
    problem = qualified_name(value)
    if problem:
        return f"{problem}; {allowed}"
    if "/" not in value:
        if value in STANDARD_CONTAINER_RESOURCES or value.startswith(HUGEPAGES_PREFIX):
            return None
        return f"{shorten(value)} is not a container resource: {allowed}"
    prefix = value.split("/", 1)[0]
    if prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io"):
        return None  # a native resource name
    if qualified_name(f"requests.{value}"):
        return f"{shorten(value)} is not a valid extended resource name: {allowed}"
    return None


def api_version(value: str) -> str | None:
    """An apiVersion such as apps/v1, v1 or example.com/v2beta1 (it is put in request paths)."""
    if len(value) > API_VERSION_MAX_CHARS:
        return f"is {len(value)} characters long; an apiVersion has at most {API_VERSION_MAX_CHARS}"
    if not _API_VERSION.fullmatch(value):
        return (
            f"{shorten(value)} is not an apiVersion: write group/version (e.g. apps/v1, "
            "example.com/v2beta1) or a core version (v1), in lowercase"
        )
    return None
