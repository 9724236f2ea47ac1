"""The real-project side of the e2e suite: the Terraform outputs it reads, the credentials it
runs with, the Kubernetes objects that describe the project's VMs as a cluster, and the
switch that makes one VM's emulated kube-proxy fail /healthz.

Nothing here prints, logs or stores a credential or token: credentials objects are passed
to the clients and never formatted.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

from lbhc.sandbox.seed import LB_CLEANUP_FINALIZER, daemonset, kube_proxy_pod, namespace
from tests.builders import kube

OUTPUTS_ENV = "LBHC_E2E_OUTPUTS"
IMPERSONATE_ENV = "LBHC_E2E_IMPERSONATE"  # "0": run lbhc with ADC as is
COMPUTE_SCOPE = "https://www.googleapis.com/auth/compute"
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
# The IAM Service Account Credentials call impersonation makes (google-auth's own path).
GENERATE_ACCESS_TOKEN_PATH = "/v1/projects/-/serviceAccounts/{}:generateAccessToken"
NODE_STATE_DELETING = "deleting"  # the VMs' /healthz turns 503 on this metadata value

Object = dict[str, Any]


class OutputsError(ValueError):
    """The outputs file is readable JSON but does not hold what terraform/ promises."""


@dataclass(frozen=True)
class VmNode:
    name: str
    zone: str
    internal_ip: str


@dataclass(frozen=True)
class LoadBalancedService:
    namespace: str
    name: str
    uid: str
    target_pool: str
    forwarding_rule: str


@dataclass(frozen=True)
class Outputs:
    """`terraform output -json` of terraform/ (each value under {"name": {"value": ...}})."""

    project_id: str
    region: str
    zone: str
    network: str
    node_tag: str
    nodes: tuple[VmNode, ...]
    cluster_service: LoadBalancedService
    local_service: LoadBalancedService
    controller_service_account: str
    node_state_metadata_key: str

    @classmethod
    def from_json(cls, document: Any, source: str = "<outputs>") -> Outputs:
        if not isinstance(document, dict):
            raise OutputsError(f"{source}: expected `terraform output -json` (an object)")

        def value(name: str) -> Any:
            entry = document.get(name)
            if not isinstance(entry, dict) or "value" not in entry:
                raise OutputsError(f"{source}: output {name!r} is missing (terraform/ outputs)")
            return entry["value"]

        def text(name: str, raw: Any = None) -> str:
            got = value(name) if raw is None else raw
            if not isinstance(got, str) or not got:
                raise OutputsError(f"{source}: {name}: expected a non-empty string, got {got!r}")
            return got

        def fields(name: str, raw: Any, keys: tuple[str, ...]) -> dict[str, str]:
            if not isinstance(raw, dict):
                raise OutputsError(f"{source}: {name}: expected an object with {keys}")
            return {key: text(f"{name}.{key}", raw.get(key, "")) for key in keys}

        raw_nodes = value("nodes")
        if not isinstance(raw_nodes, list) or not raw_nodes:
            raise OutputsError(f"{source}: nodes: expected a non-empty list")
        nodes = tuple(
            VmNode(**fields(f"nodes[{i}]", n, ("name", "zone", "internal_ip")))
            for i, n in enumerate(raw_nodes)
        )
        service_keys = ("namespace", "name", "uid", "target_pool", "forwarding_rule")
        services = [
            LoadBalancedService(**fields(name, value(name), service_keys))
            for name in ("cluster_service", "local_service")
        ]
        return cls(
            project_id=text("project_id"),
            region=text("region"),
            zone=text("zone"),
            network=text("network"),
            node_tag=text("node_tag"),
            nodes=nodes,
            cluster_service=services[0],
            local_service=services[1],
            controller_service_account=text("controller_service_account"),
            node_state_metadata_key=text("node_state_metadata_key"),
        )


def locate_outputs(environ: dict[str, str] | None = None) -> tuple[Any, str] | str:
    """(parsed JSON, path) when `LBHC_E2E_OUTPUTS` names a readable JSON file; otherwise the
    one-line reason the gcp environment is skipped."""
    environ = dict(os.environ) if environ is None else environ
    path = environ.get(OUTPUTS_ENV, "")
    if not path:
        return f"gcp: {OUTPUTS_ENV} is not set (a file of `terraform output -json` from terraform/)"
    try:
        return json.loads(Path(path).read_text(encoding="utf-8")), path
    except OSError as exc:
        return f"gcp: {OUTPUTS_ENV}={path} is not readable ({exc.strerror})"
    except json.JSONDecodeError as exc:
        return f"gcp: {OUTPUTS_ENV}={path} is not JSON (line {exc.lineno}: {exc.msg})"


def default_credentials() -> Any | str:
    """Application Default Credentials, or the one-line reason there are none."""
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        credentials, _ = google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
    except DefaultCredentialsError as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"gcp: no Application Default Credentials ({first_line})"
    return credentials


def controller_credentials(adc: Any, service_account: str, iam_endpoint: str | None = None) -> Any:
    """The credentials lbhc runs with: the controller's service account, impersonated from
    ADC with short-lived tokens, so the custom role terraform/ grants it is what is tested.
    ADC as is when it already is that account or `LBHC_E2E_IMPERSONATE=0`. `iam_endpoint`
    replaces https://iamcredentials.googleapis.com (for tests; None in real runs)."""
    if os.environ.get(IMPERSONATE_ENV, "1") == "0":
        return adc
    if getattr(adc, "service_account_email", None) == service_account:
        return adc
    from google.auth import impersonated_credentials
    from google.auth.transport.requests import Request

    override = None
    if iam_endpoint is not None:
        override = iam_endpoint.rstrip("/") + GENERATE_ACCESS_TOKEN_PATH.format(service_account)
    credentials = impersonated_credentials.Credentials(
        source_credentials=adc,
        target_principal=service_account,
        target_scopes=[COMPUTE_SCOPE],
        lifetime=3600,
        iam_endpoint_override=override,
    )
    try:
        credentials.refresh(Request())
    except Exception as exc:  # the message names the account and the missing permission
        raise RuntimeError(
            f"cannot impersonate {service_account} from Application Default Credentials "
            f"({type(exc).__name__}); grant roles/iam.serviceAccountTokenCreator on it, or set "
            f"{IMPERSONATE_ENV}=0 to run lbhc with ADC as is"
        ) from None
    return credentials


@contextmanager
def lbhc_runs_as(credentials: Any, project: str) -> Iterator[None]:
    """lbhc finds its credentials with google.auth.default() (ADC, as in a Pod with Workload
    Identity); for the duration of one in-process lbhc command, that answers `credentials`."""

    def default(*args: Any, **kwargs: Any) -> tuple[Any, str]:
        return credentials, project

    with mock.patch("google.auth.default", default):
        yield


# -- the cluster that describes the project's VMs -------------------------------------------


def node_object(name: str, project: str, zone: str, internal_ip: str, version: str) -> Object:
    """A Node as a GKE-like cluster would show the VM (providerID names the instance)."""
    return kube.node(
        name,
        kube.with_uid(str(uuid.uuid5(uuid.NAMESPACE_DNS, f"lbhc-e2e/{project}/{zone}/{name}"))),
        kube.only_labels(
            {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": zone,
            }
        ),
        kube.with_provider_id(f"gce://{project}/{zone}/{name}"),
        kube.with_internal_ip(internal_ip),
        kube.with_address("Hostname", name),
        kubelet=version,
        kube_proxy_field="",
    )


def service_object(service: LoadBalancedService, policy: str) -> Object:
    """The LoadBalancer Service the cloud provider made the pool and rule for. It carries
    the cloud provider's cleanup finalizer, so deleting it only marks it (nobody releases it
    here: terraform owns the load balancer)."""
    return kube.service(
        service.name,
        kube.with_finalizers(LB_CLEANUP_FINALIZER),
        namespace=service.namespace,
        uid=service.uid,
        policy=policy,
    )


def cluster_objects(outputs: Outputs, kube_system_uid: str, version: str) -> list[Object]:
    """Namespaces (kube-system with its UID), the kube-proxy DaemonSet and one Pod per VM,
    a Node per VM, and the two Services."""
    namespaces = sorted({outputs.cluster_service.namespace, outputs.local_service.namespace})
    objects: list[Object] = [namespace("kube-system", kube_system_uid), daemonset((version,))]
    objects += [namespace(name, str(uuid.uuid4())) for name in namespaces]
    for vm in outputs.nodes:
        objects.append(node_object(vm.name, outputs.project_id, vm.zone, vm.internal_ip, version))
        objects.append(kube_proxy_pod(vm.name, version, "/livez"))
    objects.append(service_object(outputs.cluster_service, "Cluster"))
    objects.append(service_object(outputs.local_service, "Local"))
    return objects


# -- the VM switch: /healthz 503 while the metadata attribute says "deleting" ----------------


class NodeStateSwitch:
    """Sets or removes one instance metadata attribute, respecting the fingerprint (a
    concurrent change makes setMetadata fail with 412: read again and retry). `endpoint`
    points the clients at another Compute API (the Compute fake's server); None is Google's."""

    def __init__(
        self, credentials: Any, project: str, key: str, endpoint: str | None = None
    ) -> None:
        from google.cloud import compute_v1

        options: dict[str, Any] = {"credentials": credentials}
        if endpoint is not None:
            options["client_options"] = {"api_endpoint": endpoint}
        self._compute = compute_v1
        self._instances = compute_v1.InstancesClient(**options)
        self._operations = compute_v1.ZoneOperationsClient(**options)
        self._project, self._key = project, key

    def get(self, vm: VmNode) -> str | None:
        instance = self._instances.get(project=self._project, zone=vm.zone, instance=vm.name)
        for item in instance.metadata.items:
            if item.key == self._key:
                return str(item.value)
        return None

    def set(self, vm: VmNode, value: str | None, timeout: float = 180.0) -> None:
        from google.api_core.exceptions import PreconditionFailed

        compute = self._compute
        deadline = time.monotonic() + timeout
        while True:
            instance = self._instances.get(project=self._project, zone=vm.zone, instance=vm.name)
            metadata = instance.metadata
            items = [compute.Items(key=i.key, value=i.value) for i in metadata.items]
            items = [i for i in items if i.key != self._key]
            if value is not None:
                items.append(compute.Items(key=self._key, value=value))
            elif len(items) == len(metadata.items):
                return  # not set: nothing to remove
            resource = compute.Metadata(fingerprint=metadata.fingerprint, items=items)
            try:
                operation = self._instances.set_metadata_unary(
                    project=self._project,
                    zone=vm.zone,
                    instance=vm.name,
                    metadata_resource=resource,
                )
            except PreconditionFailed:
                if time.monotonic() > deadline:
                    raise
                continue  # the fingerprint moved under us
            self._wait(operation, vm.zone, deadline)
            return

    def _wait(self, operation: Any, zone: str, deadline: float) -> None:
        done = self._compute.Operation.Status.DONE
        while operation.status != done:
            if time.monotonic() > deadline:
                raise TimeoutError(f"setMetadata operation {operation.name} not DONE in time")
            operation = self._operations.wait(
                project=self._project, zone=zone, operation=operation.name, timeout=60
            )
        errors = list(operation.error.errors) if operation.error else []
        if errors or operation.http_error_status_code >= 400:
            detail = "; ".join(f"{e.code}: {e.message}" for e in errors)
            raise RuntimeError(
                f"setMetadata on {operation.target_link} failed: "
                f"{operation.http_error_status_code} {operation.http_error_message} {detail}"
            )
