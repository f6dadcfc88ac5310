"""`fhpa validate FILE|DIR|- ...`: check manifests offline, exactly as the API server would admit them.

Each FederatedHPA / CronFederatedHPA is defaulted, then validated with the same code the webhook
runs. Meant for CI before `kubectl apply`: exit 0 when every object is valid, 1 when any is invalid,
2 when some input cannot be read. Documents of other API groups (a Deployment in the same file)
are skipped with a note on stderr. Inputs that hold no FederatedHPA or CronFederatedHPA at all (an
empty file, a directory of Deployments) exit 1 with an error, as `kubectl apply` does on an empty
file: a CI step pointed at the wrong path must not pass silently.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from typing import Any

from fhpa_api import GROUP
from fhpa_api.defaulting import apply_defaults
from fhpa_api.documents import DocumentError, load_documents
from fhpa_api.models import KINDS
from fhpa_api.validation import validate

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_UNREADABLE = 2


@dataclass
class DocumentReport:
    source: str
    kind: str
    namespace: str
    name: str
    errors: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def label(self) -> str:
        return f"{self.source}: {self.kind} {self.namespace}/{self.name}"


@dataclass
class RunReport:
    documents: list[DocumentReport] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)

    @property
    def nothing_to_check(self) -> str | None:
        """The error when every input was read but none held one of our objects, else None."""
        if self.documents or self.unreadable:
            return None
        names = ", ".join("<stdin>" if p == "-" else p for p in self.inputs)
        return f"no FederatedHPA or CronFederatedHPA objects in {names}"

    @property
    def exit_code(self) -> int:
        if self.unreadable:
            return EXIT_UNREADABLE
        if self.nothing_to_check or any(not d.ok for d in self.documents):
            return EXIT_INVALID
        return EXIT_OK


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check FederatedHPA/CronFederatedHPA manifests (defaulting, then validation)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths", nargs="+", metavar="FILE|DIR|-", help="YAML or JSON manifests; - reads stdin"
    )
    parser.add_argument("--output", choices=("text", "json"), default="text", help="report format")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = check_paths(args.paths)
    if args.output == "json":
        print(json.dumps(_as_json(report), indent=2))
    else:
        _print_text(report)
    return report.exit_code


def check_paths(paths: list[str]) -> RunReport:
    report = RunReport(inputs=list(paths))
    for path in paths:
        try:
            documents = load_documents(path)
        except DocumentError as exc:
            report.unreadable.append(str(exc))
            continue
        for source, doc in documents:
            if _foreign(doc):
                report.skipped.append(f"{source}: {doc.get('kind')} {doc.get('apiVersion')}")
                continue
            report.documents.append(check_document(source, doc))
    return report


def check_document(source: str, doc: Any) -> DocumentReport:
    """Default then validate one document, as the mutating and validating webhooks do in turn."""
    defaulted = apply_defaults(doc) if isinstance(doc, dict) else doc
    result = validate(defaulted)
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    return DocumentReport(
        source=source,
        kind=str(doc.get("kind") or "<no kind>") if isinstance(doc, dict) else "<not an object>",
        namespace=str(meta.get("namespace") or "<no namespace>"),
        name=str(meta.get("name") or "<no name>"),
        errors=[{"path": e.path, "message": e.message} for e in result.errors],
        warnings=list(result.warnings),
    )


def _foreign(doc: Any) -> bool:
    """Another API group's object (a Deployment in the same file): not ours to judge.

    A document that names one of our kinds, or our group with a misspelt kind, is always checked.
    """
    if not isinstance(doc, dict) or str(doc.get("kind")) in KINDS:
        return False
    api_version = doc.get("apiVersion")
    if not isinstance(api_version, str):
        return False
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    return group != GROUP


def _print_text(report: RunReport) -> None:
    for message in report.unreadable:
        print(f"error: {message}", file=sys.stderr)
    for note in report.skipped:
        print(f"{note}: skipped (not an {GROUP} object)", file=sys.stderr)
    if report.nothing_to_check:
        print(f"error: {report.nothing_to_check}", file=sys.stderr)
    for doc in report.documents:
        for warning in doc.warnings:
            print(f"{doc.label}: warning: {warning}", file=sys.stderr)
        if doc.ok:
            print(f"{doc.label}: OK")
        for error in doc.errors:
            print(f"{doc.label}: {error['path']}: {error['message']}")


def _as_json(report: RunReport) -> dict[str, Any]:
    return {
        "valid": report.exit_code == EXIT_OK,
        "exitCode": report.exit_code,
        "documents": [
            {
                "source": d.source,
                "kind": d.kind,
                "namespace": d.namespace,
                "name": d.name,
                "ok": d.ok,
                "errors": d.errors,
                "warnings": d.warnings,
            }
            for d in report.documents
        ],
        "unreadable": report.unreadable,
        "skipped": report.skipped,
        "error": report.nothing_to_check,
    }
