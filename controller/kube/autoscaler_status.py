"""The cluster autoscaler's status ConfigMap (``kube-system/cluster-autoscaler-status``, key ``status``),
read into node groups. Pure: text in, ``NodeGroup`` list out.

The autoscaler has written two formats. Releases before 1.30 write readable text, one block per node
group, its sizes inside the Health line::

    NodeGroups:
      Name:        pool-a
      Health:      Healthy (ready=2 ... registered=2 cloudProviderTarget=4 (minSize=0, maxSize=30))
      ScaleUp:     InProgress (ready=2 cloudProviderTarget=4)

Later releases write YAML: ``nodeGroups`` is a list whose ``health`` holds ``cloudProviderTarget``,
``minSize``, ``maxSize`` and ``nodeCounts.registered.total``, and whose ``scaleUp.status`` says
NoActivity, InProgress or Backoff. Both are read; text that is neither gives no node groups (and the
cluster falls back to what else it shows), never an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from controller.planning.node_autoscaling import NodeGroup

NAMESPACE, NAME, KEY = "kube-system", "cluster-autoscaler-status", "status"
_TEXT_HEADER = "Cluster-autoscaler status at"
_PAIR = re.compile(r"(\w+)=(-?\d+)")


def node_groups(configmap: Mapping[str, Any] | None) -> list[NodeGroup]:
    """The node groups a status ConfigMap names, in either format; [] when it names none."""
    text = str(((configmap or {}).get("data") or {}).get(KEY) or "")
    if text.lstrip().startswith(_TEXT_HEADER):
        return parse_text(text)
    return parse_yaml(text)


def parse_text(text: str) -> list[NodeGroup]:
    """The pre-1.30 readable format."""
    groups: list[NodeGroup] = []
    fields: dict[str, Any] | None = None
    in_groups = False
    for line in text.splitlines():
        key, _, value = line.strip().partition(":")
        if line.startswith("NodeGroups:"):
            in_groups = True
        elif in_groups and key == "Name":
            if fields is not None:
                groups += _text_group(fields)
            fields = {"name": value.strip()}
        elif fields is not None and key == "Health":
            fields.update({k: int(v) for k, v in _PAIR.findall(value)})
        elif fields is not None and key == "ScaleUp":
            fields["scale_up"] = value.split()[0] if value.split() else None
    if fields is not None:
        groups += _text_group(fields)
    return groups


def _text_group(fields: Mapping[str, Any]) -> list[NodeGroup]:
    if "maxSize" not in fields or "cloudProviderTarget" not in fields:
        return []
    return [
        NodeGroup(
            name=fields["name"],
            min_size=fields.get("minSize", 0),
            max_size=fields["maxSize"],
            target=fields["cloudProviderTarget"],
            registered=fields.get("registered", 0),
            scale_up=fields.get("scale_up"),
        )
    ]


def parse_yaml(text: str) -> list[NodeGroup]:
    """The 1.30+ YAML format."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return []
    if not isinstance(doc, Mapping):
        return []
    groups = []
    for raw in doc.get("nodeGroups") or []:
        if not isinstance(raw, Mapping):
            continue
        health = raw.get("health") or {}
        try:
            registered = ((health.get("nodeCounts") or {}).get("registered") or {}).get("total", 0)
            groups.append(
                NodeGroup(
                    name=str(raw.get("name") or ""),
                    min_size=int(health.get("minSize") or 0),
                    max_size=int(health["maxSize"]),
                    target=int(health["cloudProviderTarget"]),
                    registered=int(registered or 0),
                    scale_up=(raw.get("scaleUp") or {}).get("status"),
                )
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return groups
