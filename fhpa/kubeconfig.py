"""A kubeconfig the operator passes on the command line, checked before the `kubernetes` client reads it.

The client's loader assumes a well-formed file: on a YAML syntax error, a section of the wrong type or
an entry without its body it raises whatever Python raises inside it (a YAML traceback, "'int' object
has no attribute 'safe_get'"). The commands read the operator's file through ``api_client`` instead,
which says in one line which file, where and what is wrong, and raises ``KubeconfigFileError``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

SECTIONS = {"clusters": "cluster", "contexts": "context", "users": "user"}


class KubeconfigFileError(ValueError):
    """The kubeconfig cannot be used; the message names the file and the problem."""


def default_files() -> list[str]:
    """The files the client would read with no --kubeconfig: $KUBECONFIG's list, else ~/.kube/config."""
    listed = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return [p for p in listed if Path(p).exists()]
    home = Path.home() / ".kube" / "config"
    return [str(home)] if home.exists() else []


def check_file(path: str) -> None:
    """Refuse a file that is not readable YAML of a kubeconfig's shape (section types only: what is
    in each entry, the client itself reports clearly)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise KubeconfigFileError(f"{path}: {exc.strerror or exc}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise KubeconfigFileError(f"{path} is not valid YAML{at}: {problem}") from None
    if doc is None:
        return  # empty: the client says so itself
    if not isinstance(doc, dict):
        raise KubeconfigFileError(f"{path} is not a kubeconfig: expected a mapping at the top")
    for section, body in SECTIONS.items():
        _check_section(path, section, body, doc.get(section))


def _check_section(path: str, section: str, body: str, entries: Any) -> None:
    if entries is None:
        return
    if not isinstance(entries, list):
        raise KubeconfigFileError(f"{path}: {section} must be a list")
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise KubeconfigFileError(f"{path}: {section}[{index}] must be a mapping with a name")
        if not isinstance(entry.get(body), dict):
            raise KubeconfigFileError(f"{path}: {section}[{index}] ({entry['name']}) has no {body} mapping")


def api_client(config_file: str | None, context: str | None) -> Any:
    """``kubernetes.config.new_client_from_config`` on a checked file; KubeconfigFileError otherwise."""
    from kubernetes import config as kube_config
    from kubernetes.config.config_exception import ConfigException

    for path in [config_file] if config_file else default_files():
        check_file(path)
    where = config_file or "the default kubeconfig"
    try:
        return kube_config.new_client_from_config(config_file=config_file, context=context)
    except (ConfigException, OSError) as exc:
        raise KubeconfigFileError(f"{where}: {exc}") from None
    except (ValueError, TypeError, AttributeError, KeyError):  # a shape the check above does not know
        raise KubeconfigFileError(f"{where} is not a kubeconfig the client can read") from None


def api_client_or_in_cluster(config_file: str | None, context: str | None) -> Any:
    """`api_client` on ``config_file`` when one is given, else the pod's ServiceAccount (in-cluster)."""
    from kubernetes import client
    from kubernetes import config as kube_config

    if config_file:
        return api_client(config_file, context)
    configuration = client.Configuration()
    kube_config.load_incluster_config(client_configuration=configuration)
    return client.ApiClient(configuration)
