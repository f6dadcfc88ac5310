"""A pod runner stand-in: the containers of applied Deployments as local processes, as a kubelet would.

The test tiers have no container runtime, so an installation's Deployments would otherwise never run.
For each Deployment, ``PodRunner.run`` starts its pod template's container as a process of this
checkout, honouring what decides whether the installation works:

* **command**: the image's ENTRYPOINT (read from the Dockerfile's last stage) unless the container sets
  ``command``, with the container's ``args`` (else the Dockerfile's CMD); ``fhpa`` runs as this
  environment's console script of that name (tests/support/pod_entrypoint.py);
* **env**: the image's ``ENV`` (but ``PATH``), the container's ``env`` (values, ``fieldRef`` to the pod's
  namespace and name, ``secretKeyRef``/``configMapKeyRef``) and ``KUBERNETES_SERVICE_HOST``/``PORT``
  naming the API endpoint the pods are given;
* **volumes**: each pod has a root directory; a volume mounted at ``/a/b`` is the directory
  ``ROOT/a/b``, and every arg and env value that names a path under a mount path is rewritten to the
  same path under ``ROOT`` (the launcher does the same for the in-cluster constants). Secret and
  ConfigMap volumes are written as the kubelet writes them (files that are links into a ``..data``
  directory swapped atomically) and re-synced every ``period`` seconds, so a renewed Secret reaches a
  running pod; ``emptyDir`` is an empty directory; the service-account token volume (unless
  ``automountServiceAccountToken`` is false on the pod or its ServiceAccount) holds a token minted for
  the ServiceAccount, the API endpoint's CA and the namespace. A pod whose Secret or ConfigMap does not
  exist yet is not started (the kubelet keeps it in ContainerCreating) until it does;
* **ports**: each ``containerPort`` gets a free loopback port; a bind address ``0.0.0.0:P`` or
  ``[::]:P`` in args or env, with ``P`` a container port, becomes ``127.0.0.1:<its port>``;
* **readiness**: the ``readinessProbe`` (``httpGet``, ``tcpSocket``) is probed every ``period``
  seconds; ``endpoint`` answers only ready pods, which is what a Service routes to.

What it does not honour is ``NOT_HONOURED``, each with the reason; a pod or container field in neither
that list nor the ones above is refused, so a chart that starts relying on a new field makes the install
tests say so. Of the Deployment itself only ``replicas`` counts, and at most ``max_replicas`` pods run
per Deployment (default 1), to keep the tests within their share of the machine; there is no rollout.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.processes import child_env, free_ports

JSON = dict[str, Any]
REPO = Path(__file__).resolve().parents[2]
SERVICE_ACCOUNT_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
BIND = re.compile(r"(?:0\.0\.0\.0|\[::\]):(\d+)\b")
POD_FIELDS = {
    "containers",
    "volumes",
    "serviceAccountName",
    "automountServiceAccountToken",
    "terminationGracePeriodSeconds",
}
CONTAINER_FIELDS = {"name", "command", "args", "env", "ports", "readinessProbe", "volumeMounts"}
NOT_HONOURED = {
    "image": "the code runs from this checkout (the Dockerfile gives the entrypoint and ENV)",
    "imagePullPolicy": "nothing is pulled",
    "securityContext": "processes run as the test's user: no user switch, read-only root or dropped caps",
    "resources": "no cgroups: requests and limits are not enforced",
    "livenessProbe": "nothing restarts a pod",
    "affinity": "one machine: nothing to spread pods over",
}
# read(resource plural, namespace, name) -> the object or None; mint_token(namespace, account) -> token
Reader = Callable[[str, str, str], JSON | None]
TokenMinter = Callable[[str, str], str]


@dataclass(frozen=True)
class Image:
    """What the pod runner takes from the Dockerfile's last stage."""

    entrypoint: list[str]
    cmd: list[str]
    env: dict[str, str]

    @classmethod
    def from_dockerfile(cls, path: Path) -> Image:
        text = re.sub(r"\\\n", " ", path.read_text())
        stage = [line.strip() for line in text.splitlines()]
        last = max(i for i, line in enumerate(stage) if line.startswith("FROM "))
        entrypoint: list[str] = []
        cmd: list[str] = []
        env: dict[str, str] = {}
        for line in stage[last:]:
            word, _, rest = line.partition(" ")
            if word == "ENTRYPOINT":
                entrypoint = json.loads(rest)
            elif word == "CMD":
                cmd = json.loads(rest)
            elif word == "ENV":
                for pair in rest.split():
                    key, equals, value = pair.partition("=")
                    if equals:
                        env[key] = value
        env.pop("PATH", None)  # the image's virtualenv: here the console scripts of this environment
        return cls(entrypoint, cmd, env)


@dataclass
class Pod:
    name: str
    namespace: str
    labels: dict[str, str]
    root: Path
    ports: dict[str | int, int]  # container port (and its name) -> loopback port
    spec: JSON
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    ready: bool = False
    synced: dict[str, str] = field(default_factory=dict)  # volume name -> digest of what was written

    @property
    def container(self) -> JSON:
        found: JSON = self.spec["containers"][0]
        return found

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def probe(self) -> bool:
        """One readiness probe, as the kubelet runs it."""
        if self.process is None or self.process.poll() is not None:
            return False
        probe = self.container.get("readinessProbe")
        if not probe:
            return True
        if "tcpSocket" in probe:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.ports[probe["tcpSocket"]["port"]]), timeout=2),
            ):
                return True
            return False
        get = probe["httpGet"]
        scheme = get.get("scheme", "HTTP").lower()
        url = f"{scheme}://127.0.0.1:{self.ports[get['port']]}{get.get('path', '/')}"
        context = ssl._create_unverified_context() if scheme == "https" else None  # as the kubelet: no verify
        try:
            with urllib.request.urlopen(url, timeout=2, context=context) as answer:
                return 200 <= int(answer.status) < 400
        except (OSError, ValueError):
            return False


class PodRunner:
    """``PodRunner(workdir, read, mint_token, api=(host, port), ca_pem=...)``; ``run(deployment)``,
    ``wait_ready(pods)``, ``endpoint(service, port)``, ``stop()``."""

    def __init__(
        self,
        workdir: Path,
        read: Reader,
        mint_token: TokenMinter,
        *,
        api: tuple[str, int],
        ca_pem: bytes,
        image: Image | None = None,
        max_replicas: int = 1,
        period: float = 0.5,
    ) -> None:
        self.workdir = workdir
        self.read = read
        self.mint_token = mint_token
        self.api = api
        self.ca_pem = ca_pem
        self.image = image or Image.from_dockerfile(REPO / "Dockerfile")
        self.max_replicas = max_replicas
        self.period = period
        self.pods: list[Pod] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sync_loop, name="pod-runner", daemon=True)
        self._thread.start()

    # -- starting pods ------------------------------------------------------------------------------

    def run(self, deployment: JSON, timeout: float = 30) -> list[Pod]:
        """Start the Deployment's pods once their Secret and ConfigMap volumes exist."""
        template = deployment["spec"]["template"]
        namespace = deployment["metadata"].get("namespace", "default")
        replicas = min(int(deployment["spec"].get("replicas", 1)), self.max_replicas)
        deadline = time.monotonic() + timeout
        while (missing := self._missing_sources(template["spec"], namespace)) and time.monotonic() < deadline:
            time.sleep(self.period)
        if missing:
            raise RuntimeError(f"{deployment['metadata']['name']}: ContainerCreating, {missing} not found")
        started = [self._start(deployment, template, namespace, i) for i in range(replicas)]
        with self._lock:
            self.pods.extend(started)
        return started

    def _missing_sources(self, spec: JSON, namespace: str) -> str:
        for volume in spec.get("volumes") or []:
            for key, resource, name_field in (
                ("secret", "secrets", "secretName"),
                ("configMap", "configmaps", "name"),
            ):
                source = volume.get(key)
                if (
                    source
                    and not source.get("optional")
                    and self.read(resource, namespace, source[name_field]) is None
                ):
                    return f"{key} {source[name_field]}"
        return ""

    def _start(self, deployment: JSON, template: JSON, namespace: str, index: int) -> Pod:
        spec = template["spec"]
        (container,) = spec["containers"]  # the chart's pods have one container each
        _check_fields(deployment["metadata"]["name"], spec, container)
        name = f"{deployment['metadata']['name']}-{index}"
        root = self.workdir / name
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        ports = _loopback_ports(container)
        rewrite = _rewriter(root, self._mount_paths(spec, container, namespace), ports)
        env = self._env(container, namespace, name, rewrite)
        command = [rewrite(word) for word in self._command(container)]  # container paths, as args are
        argv = [sys.executable, "-m", "tests.support.pod_entrypoint", str(root), "--", *command]
        labels = dict(template["metadata"].get("labels") or {})
        pod = Pod(name, namespace, labels, root, ports, spec, root.parent / f"{name}.log")
        self._sync_volumes(pod)
        with open(pod.log_path, "ab") as log:
            pod.process = subprocess.Popen(
                argv, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        return pod

    def _command(self, container: JSON) -> list[str]:
        """ENTRYPOINT and CMD as a container runtime combines them with the container's command and args."""
        command = container.get("command") or self.image.entrypoint
        if "args" in container:
            return [*command, *container["args"]]
        return [*command, *([] if "command" in container else self.image.cmd)]

    def _mount_paths(self, spec: JSON, container: JSON, namespace: str) -> list[str]:
        paths = [m["mountPath"] for m in container.get("volumeMounts") or []]
        if self._automount(spec, namespace):
            paths.append(SERVICE_ACCOUNT_MOUNT)
        return paths

    def _automount(self, spec: JSON, namespace: str) -> bool:
        if "automountServiceAccountToken" in spec:
            return bool(spec["automountServiceAccountToken"])
        account = self.read("serviceaccounts", namespace, spec.get("serviceAccountName", "default")) or {}
        return bool(account.get("automountServiceAccountToken", True))

    def _env(
        self, container: JSON, namespace: str, pod: str, rewrite: Callable[[str], str]
    ) -> dict[str, str]:
        env = {k: v for k, v in child_env().items() if k in ("PATH", "NO_PROXY", "no_proxy", "LANG")}
        env.update(self.image.env)
        env.update(
            KUBERNETES_SERVICE_HOST=self.api[0],
            KUBERNETES_SERVICE_PORT=str(self.api[1]),
            PYTHONPATH=str(REPO),
            HOME=str(self.workdir / pod),
        )
        for item in container.get("env") or []:
            env[item["name"]] = rewrite(self._env_value(item, namespace, pod))
        return env

    def _env_value(self, item: JSON, namespace: str, pod: str) -> str:
        if "value" in item:
            return str(item["value"])
        source = item.get("valueFrom") or {}
        if "fieldRef" in source:
            return {"metadata.namespace": namespace, "metadata.name": pod}[source["fieldRef"]["fieldPath"]]
        for key, resource in (("secretKeyRef", "secrets"), ("configMapKeyRef", "configmaps")):
            if key in source:
                ref = source[key]
                data = _files(self.read(resource, namespace, ref["name"]) or {})
                return data[ref["key"]].decode()
        raise ValueError(f"env {item['name']}: a source the pod runner does not know: {source}")

    # -- volumes ------------------------------------------------------------------------------------

    def _sync_volumes(self, pod: Pod) -> None:
        """Write (or renew) every volume of ``pod`` under its root, as the kubelet does."""
        volumes = {v["name"]: v for v in pod.spec.get("volumes") or []}
        for mount in pod.container.get("volumeMounts") or []:
            volume = volumes[mount["name"]]
            target = pod.root / mount["mountPath"].lstrip("/")
            if "emptyDir" in volume:
                target.mkdir(parents=True, exist_ok=True)
            elif "secret" in volume:
                found = self.read("secrets", pod.namespace, volume["secret"]["secretName"])
                if found is not None:
                    _write_atomically(pod, mount["name"], target, _files(found))
            elif "configMap" in volume:
                found = self.read("configmaps", pod.namespace, volume["configMap"]["name"])
                if found is not None:
                    _write_atomically(pod, mount["name"], target, _files(found))
        if SERVICE_ACCOUNT_MOUNT not in pod.synced and self._automount(pod.spec, pod.namespace):
            account = pod.spec.get("serviceAccountName", "default")
            files = {
                "token": self.mint_token(pod.namespace, account).encode(),
                "ca.crt": self.ca_pem,
                "namespace": pod.namespace.encode(),
            }
            _write_atomically(pod, SERVICE_ACCOUNT_MOUNT, pod.root / SERVICE_ACCOUNT_MOUNT.lstrip("/"), files)

    def _sync_loop(self) -> None:
        while not self._stop.wait(self.period):
            with self._lock:
                pods = list(self.pods)
            for pod in pods:
                with contextlib.suppress(Exception):  # a backend mid-restart: the next pass retries
                    self._sync_volumes(pod)
                pod.ready = pod.probe()

    # -- what tests and Services read ---------------------------------------------------------------

    def wait_ready(self, pods: list[Pod], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not all(p.ready for p in pods):
            for pod in pods:
                if pod.process is not None and pod.process.poll() is not None:
                    raise RuntimeError(
                        f"pod {pod.name} exited with {pod.process.returncode}:\n{pod.log()[-3000:]}"
                    )
            if time.monotonic() > deadline:
                unready = [p for p in pods if not p.ready]
                names = [p.name for p in unready]
                raise TimeoutError(f"pods not ready after {timeout}s: {names}\n{unready[0].log()[-3000:]}")
            time.sleep(0.1)

    def endpoint(self, service: JSON, port: int) -> tuple[str, int] | None:
        """A ready pod's loopback address for ``port`` of ``service``, as kube-proxy picks one."""
        selector = (service.get("spec") or {}).get("selector") or {}
        entry = next((p for p in service["spec"].get("ports") or [] if int(p["port"]) == port), None)
        if entry is None or not selector:
            return None
        target = entry.get("targetPort", port)
        namespace = service["metadata"].get("namespace", "default")
        with self._lock:
            pods = list(self.pods)
        for pod in pods:
            labels_match = all(pod.labels.get(k) == v for k, v in selector.items())
            if pod.ready and pod.namespace == namespace and labels_match and target in pod.ports:
                return "127.0.0.1", pod.ports[target]
        return None

    def stop(self) -> None:
        """End every pod's process group: SIGTERM to all, SIGKILL after the grace period (at most 10 s)."""
        self._stop.set()
        with self._lock:
            pods, self.pods = list(self.pods), []
        running = [p for p in pods if p.process is not None and p.process.poll() is None]
        for pod in running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pod.process.pid, signal.SIGTERM)  # type: ignore[union-attr]
        deadline = time.monotonic() + min(
            [float(p.spec.get("terminationGracePeriodSeconds", 30)) for p in running] + [10.0]
        )
        for pod in running:
            assert pod.process is not None
            try:
                pod.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pod.process.pid, signal.SIGKILL)
                pod.process.wait(5)
        self._thread.join(5)


def _loopback_ports(container: JSON) -> dict[str | int, int]:
    """A free loopback port per container port, found by its number and by its name."""
    declared = container.get("ports") or []
    ports: dict[str | int, int] = {}
    for port, free in zip(declared, free_ports(len(declared)) if declared else [], strict=True):
        ports[port["containerPort"]] = free
        if port.get("name"):
            ports[port["name"]] = free
    return ports


def _check_fields(deployment: str, spec: JSON, container: JSON) -> None:
    unknown = sorted(set(spec) - POD_FIELDS - set(NOT_HONOURED)) + sorted(
        f"container {f}" for f in set(container) - CONTAINER_FIELDS - set(NOT_HONOURED)
    )
    if unknown:
        raise ValueError(f"{deployment}: the pod runner neither honours nor knows {', '.join(unknown)}")


def _files(obj: JSON) -> dict[str, bytes]:
    """A Secret's or ConfigMap's keys as file contents."""
    data = obj.get("data") or {}
    if obj.get("kind") == "ConfigMap":
        return {k: str(v).encode() for k, v in data.items()}
    return {k: base64.b64decode(v) for k, v in data.items()}


def _write_atomically(pod: Pod, volume: str, target: Path, files: Mapping[str, bytes]) -> None:
    """The kubelet's atomic writer: a new timestamped directory, then the ``..data`` link swapped to it,
    with each file a link through ``..data``; nothing is rewritten when the contents did not change."""
    digest = json.dumps({k: base64.b64encode(v).decode() for k, v in sorted(files.items())})
    if pod.synced.get(volume) == digest:
        return
    target.mkdir(parents=True, exist_ok=True)
    fresh = target / f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{time.monotonic_ns()}"
    fresh.mkdir()
    for name, data in files.items():
        (fresh / name).write_bytes(data)
    link = target / "..data_tmp"
    link.unlink(missing_ok=True)
    link.symlink_to(fresh.name)
    old = (target / "..data").resolve() if (target / "..data").is_symlink() else None
    link.replace(target / "..data")
    for name in files:
        if not (target / name).is_symlink():
            (target / name).symlink_to(f"..data/{name}")
    if old is not None and old != fresh:
        shutil.rmtree(old, ignore_errors=True)
    pod.synced[volume] = digest


def _rewriter(root: Path, mounts: list[str], ports: Mapping[str | int, int]) -> Callable[[str], str]:
    """Rewrite a container's path and bind address references to this machine's (see the module doc)."""
    # one pass, longest mount path first: a rewritten path is never rewritten again
    alternatives = "|".join(re.escape(m.rstrip("/")) for m in sorted(mounts, key=len, reverse=True))
    paths = re.compile(r"(?<![\w./-])(" + alternatives + r")(?=/|$|\s|,|:)") if mounts else None

    def rewrite(value: str) -> str:
        if paths is not None:
            value = paths.sub(lambda m: str(root) + m[1], value)
        return BIND.sub(lambda m: f"127.0.0.1:{ports[int(m[1])]}" if int(m[1]) in ports else m[0], value)

    return rewrite
