"""`fhpa assign INPUT`: the initial assignment a FederatedHPA would get, without a cluster.

INPUT (YAML or JSON file, or - for stdin) is ``{federatedHPA: <manifest>, clusters: [{name, labels?,
provider?, region?, zone?, healthy? (default true), taints?, currentReplicas? (default 0),
availableReplicas? (default: unlimited)}]}``. ``currentReplicas`` is what a cluster runs and
``availableReplicas`` its whole room, running pods included; a ``currentReplicas`` above
``availableReplicas`` is read as the excess pending: the cluster runs ``availableReplicas`` and the rest
waits as unschedulable pods. The FederatedHPA is defaulted and validated first, as the API server would
admit it; then the controller's own planner runs its first pass over the clusters.
Output (JSON, sorted by name): ``{"clusters": [{"name", "minReplicas", "maxReplicas", "replicas"}],
"unassigned": [names]}``. Exit 0 on success, 1 when the FederatedHPA is invalid (errors printed as
`fhpa validate` prints them), 2 when the input cannot be read or is malformed.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from controller.planning.observation import ClusterObservation, Taint
from controller.planning.plan import Plan
from controller.planning.planner import PlannerConfig, plan
from controller.ports import ClusterIdentity
from fhpa_api.documents import DocumentError, load_documents
from fhpa_api.models import FederatedHPA
from fhpa_api.validation import InvalidObjectError, parse_object

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_MALFORMED = 2
PLANNING_INSTANT = datetime(2000, 1, 1, tzinfo=UTC)
"""The result does not depend on time; a fixed instant keeps the planner's timestamps reproducible."""


class InputError(ValueError):
    """The input file is not the shape `fhpa assign` reads."""


class ClusterInput(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    name: str = Field(min_length=1)
    labels: dict[str, str] = Field(default_factory=dict)
    provider: str | None = None
    region: str | None = None
    zone: str | None = None
    healthy: bool = True
    taints: list[Taint] = Field(default_factory=list)
    current_replicas: int = Field(default=0, ge=0)
    available_replicas: int | None = Field(default=None, ge=0)

    def observation(self) -> ClusterObservation:
        identity = ClusterIdentity(
            name=self.name,
            labels=self.labels,
            provider=self.provider,
            region=self.region,
            zone=self.zone,
            taints=self.taints,
        )
        pending = self.pending_replicas
        return identity.observed(
            healthy=self.healthy,
            current_replicas=self.current_replicas,
            ready_replicas=self.current_replicas - pending,
            pending_replicas=pending,
            available_replicas=self.available_replicas,
        )

    @property
    def pending_replicas(self) -> int:
        """The replicas above the cluster's room: they cannot be scheduled, so they pend."""
        if self.available_replicas is None:
            return 0
        return max(self.current_replicas - self.available_replicas, 0)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "assign",
        help="show the initial member-HPA min/max and replicas a FederatedHPA gets on a set of clusters",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", metavar="INPUT", help="YAML or JSON file; - reads stdin")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        source, document = _read(args.input)
        manifest, clusters = parse_input(document)
    except (DocumentError, InputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_MALFORMED
    try:
        fhpa = parse_object(manifest)
    except InvalidObjectError as exc:
        label = _label(source, manifest)
        for error in exc.result.errors:
            print(f"{label}: {error.path}: {error.message}")
        return EXIT_INVALID
    if not isinstance(fhpa, FederatedHPA):
        print(f"error: {source}: federatedHPA: must be a FederatedHPA, not {fhpa.kind}", file=sys.stderr)
        return EXIT_MALFORMED
    print(json.dumps(assign(fhpa, clusters), indent=2))
    return EXIT_OK


def _read(path: str) -> tuple[str, Any]:
    documents = load_documents(path)
    if len(documents) != 1:
        raise InputError(f"{path}: expected one document, found {len(documents)}")
    return documents[0].source, documents[0].doc


def parse_input(document: Any) -> tuple[dict[str, Any], list[ClusterInput]]:
    """Split the input into the FederatedHPA manifest and the clusters; InputError says what is wrong."""
    if not isinstance(document, dict):
        raise InputError("the input must be a mapping with keys federatedHPA and clusters")
    unknown = sorted(set(document) - {"federatedHPA", "clusters"})
    if unknown:
        raise InputError(f"unknown keys {unknown}: only federatedHPA and clusters are read")
    manifest = document.get("federatedHPA")
    if not isinstance(manifest, dict):
        raise InputError("federatedHPA: must be a FederatedHPA manifest (a mapping)")
    raw_clusters = document.get("clusters")
    if not isinstance(raw_clusters, list):
        raise InputError(
            "clusters: must be a list of {name, labels?, healthy?, taints?, currentReplicas?, "
            "availableReplicas?}"
        )
    clusters = [_cluster(i, raw) for i, raw in enumerate(raw_clusters)]
    names = [c.name for c in clusters]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputError(f"clusters: duplicate names {duplicates}")
    return manifest, clusters


def _cluster(index: int, raw: Any) -> ClusterInput:
    try:
        return ClusterInput.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
        raise InputError(f"clusters[{index}]{where}: {first['msg']}") from exc


def assign(fhpa: FederatedHPA, clusters: list[ClusterInput]) -> dict[str, Any]:
    """The controller's first planning pass over ``clusters``, as the output document."""
    observations = [c.observation() for c in clusters]
    first = plan(fhpa.model_copy(update={"status": None}), observations, PLANNING_INSTANT, PlannerConfig())
    return result_document(first, observations)


def result_document(first: Plan, observations: list[ClusterObservation]) -> dict[str, Any]:
    writes = {w.cluster: w.replicas for w in first.replica_writes}
    current = {o.name: o.current_replicas for o in observations}
    rows = {r.name: r for r in first.status.clusters or [] if (r.max_replicas or 0) > 0}
    assigned = [
        {
            "name": name,
            "minReplicas": rows[name].min_replicas,
            "maxReplicas": rows[name].max_replicas,
            "replicas": writes.get(name, current[name]),
        }
        for name in sorted(rows)
    ]
    return {"clusters": assigned, "unassigned": sorted(set(current) - set(rows))}


def _label(source: str, manifest: dict[str, Any]) -> str:
    raw = manifest.get("metadata")
    meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
    kind = manifest.get("kind") or "<no kind>"
    return f"{source}: {kind} {meta.get('namespace') or '<no namespace>'}/{meta.get('name') or '<no name>'}"
