"""`fhpa certs rotate`: keep the webhook's self-signed certificates valid inside the cluster.

One pass reads the CA Secret and the serving Secret, asks `certs.renewal.plan_renewal` what to change,
and writes it in the order that never leaves the API server distrusting what a pod serves: the CA Secret
first, then the caBundle of the named webhook configurations, and the serving Secret last (the webhook
pods reload it from their mounted volume without a restart). Every write is a replace guarded by the
object's resourceVersion, so two rotators racing lose cleanly and the next pass starts over from what
won. The rights this needs are `get`/`update` on the two Secrets and on the two configurations, and
`create` for the Secrets' first pass (the chart's cert-rotator RBAC).
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from certs.renewal import CertificateSet, Policy, RenewalPlan, plan_renewal

log = logging.getLogger("fhpa.certs.rotator")

CA_SECRET = "federated-hpa-webhook-ca"
TLS_SECRET = "federated-hpa-webhook-tls"
WEBHOOK_CONFIGURATION = "federated-hpa-webhook"


@dataclass(frozen=True)
class Target:
    """Where the certificates live and which webhook configurations trust them."""

    namespace: str
    ca_secret: str = CA_SECRET
    tls_secret: str = TLS_SECRET
    webhook_configuration: str = WEBHOOK_CONFIGURATION


def _decoded(secret: Any, key: str) -> bytes:
    data = (secret.data or {}) if secret is not None else {}
    return base64.b64decode(data[key]) if data.get(key) else b""


def _read_secret(core: Any, namespace: str, name: str) -> Any:
    from kubernetes.client.rest import ApiException

    try:
        return core.read_namespaced_secret(name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _write_secret(
    core: Any, namespace: str, name: str, existing: Any, kind: str, data: dict[str, bytes]
) -> None:
    from kubernetes import client

    body = client.V1Secret(
        metadata=client.V1ObjectMeta(
            name=name,
            namespace=namespace,
            labels={"app.kubernetes.io/name": "federated-hpa", "app.kubernetes.io/component": "webhook"},
            resource_version=existing.metadata.resource_version if existing is not None else None,
        ),
        type=kind,
        data={k: base64.b64encode(v).decode("ascii") for k, v in data.items()},
    )
    if existing is None:
        core.create_namespaced_secret(namespace, body)
    else:
        core.replace_namespaced_secret(name, namespace, body)


def publish_ca_bundle(admission: Any, name: str, ca_bundle: str) -> list[str]:
    """Set `clientConfig.caBundle` on every webhook of the mutating and validating configurations
    called `name`; returns the kinds that changed. A configuration that does not exist yet (installed
    after the rotator) is skipped: the next pass finds it."""
    from kubernetes.client.rest import ApiException

    changed = []
    calls = {
        "MutatingWebhookConfiguration": (
            admission.read_mutating_webhook_configuration,
            admission.replace_mutating_webhook_configuration,
        ),
        "ValidatingWebhookConfiguration": (
            admission.read_validating_webhook_configuration,
            admission.replace_validating_webhook_configuration,
        ),
    }
    for kind, (read, replace) in calls.items():
        try:
            config = read(name)
        except ApiException as exc:
            if exc.status == 404:
                log.info("%s %s does not exist yet; its caBundle is set once it does", kind, name)
                continue
            raise
        stale = [hook for hook in config.webhooks or [] if hook.client_config.ca_bundle != ca_bundle]
        if not stale:
            continue
        for hook in stale:
            hook.client_config.ca_bundle = ca_bundle
        replace(name, config)  # carries the resourceVersion it was read at
        changed.append(kind)
    return changed


def rotate_once(
    api_client: Any, target: Target, policy: Policy, now: dt.datetime | None = None
) -> RenewalPlan:
    """One pass: renew what is due, publish the caBundle; returns the plan that was carried out."""
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    admission = client.AdmissionregistrationV1Api(api_client)
    ca_secret = _read_secret(core, target.namespace, target.ca_secret)
    tls_secret = _read_secret(core, target.namespace, target.tls_secret)
    found = CertificateSet(
        ca_cert=_decoded(ca_secret, "ca.crt"),
        ca_key=_decoded(ca_secret, "ca.key"),
        tls_cert=_decoded(tls_secret, "tls.crt"),
        tls_key=_decoded(tls_secret, "tls.key"),
    )
    plan = plan_renewal(found, policy, now or dt.datetime.now(dt.UTC))
    if plan.ca is not None:
        cert, key = plan.ca
        _write_secret(
            core, target.namespace, target.ca_secret, ca_secret, "Opaque", {"ca.crt": cert, "ca.key": key}
        )
    published = publish_ca_bundle(admission, target.webhook_configuration, plan.ca_bundle)
    if plan.serving is not None:
        cert, key = plan.serving
        ca_pem = plan.ca[0] if plan.ca is not None else found.ca_cert
        data = {"tls.crt": cert, "tls.key": key, "ca.crt": ca_pem}
        _write_secret(core, target.namespace, target.tls_secret, tls_secret, "kubernetes.io/tls", data)
    if plan.changes or published:
        log.info("certificates renewed (%s); caBundle published to %s", plan.reason, published or "none")
    return plan


def run(
    api_client: Any,
    target: Target,
    policy: Policy,
    every: float,
    sleep: Callable[[float], None] = time.sleep,
    passes: int | None = None,
) -> None:
    """Pass after pass, `every` seconds apart; a failed pass is logged and retried on the next one
    (the serving certificate is renewed `renew_before` ahead, which leaves many passes to succeed)."""
    done = 0
    while passes is None or done < passes:
        try:
            rotate_once(api_client, target, policy)
        except Exception:
            log.exception("certificate rotation pass failed; retrying in %.0f s", every)
        done += 1
        if passes is None or done < passes:
            sleep(every)
