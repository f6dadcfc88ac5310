"""What the webhook answers: defaults on /mutate, rules on /validate.

No rule or default is written here. Both come from `fhpa_api` (`default_patch`, `validate`), which the
offline `fhpa validate` command calls too, so the cluster and the command line can never disagree. This
module only decides which requests those functions see and how their results become AdmissionReviews.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from fhpa_api import CRON_FEDERATED_HPA, FEDERATED_HPA, GROUP
from fhpa_api.defaulting import default_patch
from fhpa_api.limits import cut
from fhpa_api.validation import validate
from webhook.review import AdmissionRequest, allow, deny

log = logging.getLogger(__name__)

OUR_KINDS = (FEDERATED_HPA, CRON_FEDERATED_HPA)
CHECKED_OPERATIONS = ("CREATE", "UPDATE")
# Karmada's webhook and controller-runtime deny with 403 Forbidden; the API server passes code, reason
# and message on to the client, so kubectl prints "Error from server (Forbidden): ... denied the request".
DENIED_CODE = 403
DENIED_REASON = "Forbidden"
# A denial lists at most this many field errors, and is cut to MAX_DENIAL_CHARS, so that an object with
# thousands of bad fields does not get megabytes back (nor write them to the log).
MAX_LISTED_ERRORS = 20
MAX_DENIAL_CHARS = 4096


@dataclass(frozen=True)
class Decision:
    """An AdmissionReview to send back, and the outcome label the metrics count it under."""

    review: dict[str, Any]
    outcome: str


def kind_label(request: AdmissionRequest) -> str:
    """Our two kinds by name, everything else as `other`, so metrics labels stay bounded."""
    return request.kind if is_ours(request) else "other"


def is_ours(request: AdmissionRequest) -> bool:
    return request.group == GROUP and request.kind in OUR_KINDS


def needs_checking(request: AdmissionRequest) -> bool:
    """Creates and updates of a FederatedHPA or CronFederatedHPA themselves (not a subresource such as
    /status, which the controller writes). DELETE, CONNECT and other kinds pass untouched."""
    return is_ours(request) and request.operation in CHECKED_OPERATIONS and not request.sub_resource


def leaves_spec_alone(request: AdmissionRequest) -> bool:
    """An UPDATE that need not be checked (M3): the object is being deleted (its finalizers are being
    removed), or its spec is unchanged (only metadata such as labels, annotations or finalizers, or
    status, changed). Checking such an update again would block deletes and finalizer removal of any
    object stored while the webhook was bypassed or before a rule was tightened, and the controller's
    own finalizer patches while the webhook is down; nothing the rules guard changes in it."""
    if request.operation != "UPDATE" or not isinstance(request.object, dict):
        return False
    metadata = request.object.get("metadata")
    if isinstance(metadata, dict) and metadata.get("deletionTimestamp"):
        return True
    old = request.old_object
    return (
        isinstance(old, dict) and "spec" in request.object and request.object.get("spec") == old.get("spec")
    )


def _describe(request: AdmissionRequest) -> tuple[str, str, str, str]:
    """kind, namespace, name and uid for a log line, each cut short (they are client text)."""
    return tuple(cut(str(v), 80) for v in (request.kind, request.namespace, request.name, request.uid))  # type: ignore[return-value]


def mutate(request: AdmissionRequest) -> Decision:
    """Fill in the defaults with a JSONPatch. Never denies: if the object is too malformed to default,
    it goes through unpatched and /validate refuses it with a message that names the field. An UPDATE
    that leaves the spec alone (or of an object being deleted) is not defaulted either: a patch would
    change the spec, and validation would then check an object the user did not change."""
    if not needs_checking(request) or leaves_spec_alone(request):
        return Decision(allow(request), "skipped")
    if not isinstance(request.object, dict):
        return Decision(allow(request), "allowed")
    try:
        patch = default_patch(request.object)
    except Exception:
        log.exception(
            "defaulting failed for %s %s/%s (uid %s); passing it on unpatched to validation",
            *_describe(request),
        )
        return Decision(allow(request), "error")
    return Decision(allow(request, patch), "patched" if patch else "allowed")


def review_validation(request: AdmissionRequest) -> Decision:
    """Refuse an object that breaks any rule, listing every field error; pass on warnings for fields
    that are accepted but have no effect. A dry run gets the same answer, since nothing here has side
    effects. An UPDATE is checked with its old object, for the rules that compare the two."""
    if not needs_checking(request) or leaves_spec_alone(request):
        return Decision(allow(request), "skipped")
    old = request.old_object if request.operation == "UPDATE" else None
    try:
        result = validate(request.object, old)
    except Exception:
        log.exception("validation raised for %s %s/%s (uid %s)", *_describe(request))
        message = "the webhook could not check this object (an internal error, logged by the webhook)"
        return Decision(deny(request, message, 500, "InternalError"), "error")
    warnings = list(result.warnings)
    if result.ok:
        return Decision(allow(request, warnings=warnings), "allowed")
    message = denial_message([str(err) for err in result.errors])
    log.info("denied %s %s %s/%s (uid %s): %s", request.operation, *_describe(request), message)
    return Decision(deny(request, message, DENIED_CODE, DENIED_REASON, warnings), "denied")


def denial_message(errors: list[str]) -> str:
    """The field errors joined with '; ', at most MAX_LISTED_ERRORS of them and MAX_DENIAL_CHARS long."""
    shown = "; ".join(errors[:MAX_LISTED_ERRORS])
    if len(errors) > MAX_LISTED_ERRORS:
        shown += f"; and {len(errors) - MAX_LISTED_ERRORS} more errors"
    return cut(shown, MAX_DENIAL_CHARS)
