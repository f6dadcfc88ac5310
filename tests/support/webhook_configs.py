"""Admission webhook configurations for the realapi tier's core stub: built by tests, and completed with
the defaults a real API server applies (the stub stores what it is given)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

JSON = dict[str, Any]


def webhook_rule(
    api_groups: Sequence[str],
    api_versions: Sequence[str],
    resources: Sequence[str],
    operations: Sequence[str] = ("CREATE", "UPDATE"),
    scope: str = "*",
) -> JSON:
    """One ``rules`` entry of a webhook."""
    return {
        "apiGroups": list(api_groups),
        "apiVersions": list(api_versions),
        "resources": list(resources),
        "operations": list(operations),
        "scope": scope,
    }


def webhook_configuration(
    name: str,
    *,
    url: str,
    ca_bundle: bytes | str,
    rules: Sequence[Mapping[str, Any]],
    webhook_name: str | None = None,
    failure_policy: str = "Fail",
    timeout_seconds: int = 5,
    side_effects: str = "None",
    namespace_selector: Mapping[str, Any] | None = None,
    object_selector: Mapping[str, Any] | None = None,
) -> JSON:
    """A webhook configuration object with one webhook calling ``url`` (for ``set_webhooks``).

    ``ca_bundle`` is the PEM of the CA that signed the webhook server's certificate (for example
    ``server.ca_pem`` with a cert from ``server.issue_cert``). The same body works for mutating
    and validating configurations; the stub fills the kind-specific defaults.
    """
    pem = ca_bundle.encode() if isinstance(ca_bundle, str) else ca_bundle
    return {
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": webhook_name or f"{name}.fhpa.test",
                "admissionReviewVersions": ["v1"],
                "sideEffects": side_effects,
                "failurePolicy": failure_policy,
                "timeoutSeconds": timeout_seconds,
                "matchPolicy": "Equivalent",
                "namespaceSelector": dict(namespace_selector or {}),
                "objectSelector": dict(object_selector or {}),
                "clientConfig": {"url": url, "caBundle": base64.b64encode(pem).decode()},
                "rules": [dict(r) for r in rules],
            }
        ],
    }


def default_webhooks(kind: str, configs: Iterable[Mapping[str, Any]]) -> list[JSON]:
    """Apply the defaults a real apiserver would (the stub stores objects as given)."""
    out: list[JSON] = []
    for config in configs:
        body = json.loads(json.dumps(config))
        for hook in body.get("webhooks") or []:
            hook.setdefault("failurePolicy", "Fail")
            hook.setdefault("matchPolicy", "Equivalent")
            hook.setdefault("namespaceSelector", {})
            hook.setdefault("objectSelector", {})
            hook.setdefault("timeoutSeconds", 10)
            hook.setdefault("sideEffects", "None")
            hook.setdefault("admissionReviewVersions", ["v1"])
            if kind == "mutating":
                hook.setdefault("reinvocationPolicy", "Never")
            for rule in hook.get("rules") or []:
                rule.setdefault("scope", "*")
        out.append(body)
    return out
