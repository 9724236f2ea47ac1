"""The emulated controllers' writes to the Compute fake, over HTTP like any client's, so
they are journaled and go through the fake's rules (operations, in-use refusals, faults).
They carry no x-lbhc-client-id and a User-Agent of their own (`USER_AGENT` for the cloud
provider, `INGRESS_GCE_USER_AGENT` for ingress-gce): the journal tells them from lbhc's
(which carry its identity) and from the lbhc CLI's. Reads come from the fake itself and leave
no journal entry: the emulators poll, and their reads would drown the journal.

Collections are named as in the API's paths; `regionHealthChecks` is the regional
`healthChecks`, and a zonal collection (instanceGroups, networkEndpointGroups) needs `zone`."""

from __future__ import annotations

from typing import Any

import requests

USER_AGENT = "lbhc-sandbox-cloud-provider"
INGRESS_GCE_USER_AGENT = "lbhc-sandbox-ingress-gce"
_REGIONAL = frozenset({"targetPools", "forwardingRules", "backendServices"})
_IN_USE = frozenset({"resourceInUseByAnotherResource", "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE"})


class ComputeRequestError(RuntimeError):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"HTTP {status} {reason}: {message}")
        self.status, self.reason = status, reason

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def in_use(self) -> bool:
        return self.reason in _IN_USE

    @property
    def already_exists(self) -> bool:
        return self.status == 409


class ComputeWriter:
    def __init__(
        self, compute_url: str, project: str, region: str, user_agent: str = USER_AGENT
    ) -> None:
        self._project_url = f"{compute_url}/compute/v1/projects/{project}"
        self._region_url = f"{self._project_url}/regions/{region}"
        self._session = requests.Session()
        self._session.headers["User-Agent"] = user_agent

    def close(self) -> None:
        self._session.close()

    def _collection(self, collection: str, zone: str | None = None) -> str:
        if zone is not None:
            return f"{self._project_url}/zones/{zone}/{collection}"
        if collection == "regionHealthChecks":
            return f"{self._region_url}/healthChecks"
        regional = collection in _REGIONAL
        return f"{self._region_url if regional else self._project_url + '/global'}/{collection}"

    def insert(self, collection: str, body: dict[str, Any], zone: str | None = None) -> None:
        self._call("POST", self._collection(collection, zone), body)

    def update(self, collection: str, name: str, body: dict[str, Any]) -> None:
        self._call("PUT", f"{self._collection(collection)}/{name}", body)

    def patch(self, collection: str, name: str, body: dict[str, Any]) -> None:
        self._call("PATCH", f"{self._collection(collection)}/{name}", body)

    def call(
        self, collection: str, name: str, verb: str, body: dict[str, Any], zone: str | None = None
    ) -> None:
        """A custom verb: instanceGroups.addInstances, networkEndpointGroups
        .attachNetworkEndpoints, ..."""
        self._call("POST", f"{self._collection(collection, zone)}/{name}/{verb}", body)

    def add_instances(self, pool: str, instances: list[str]) -> None:
        """gce_targetpool.go AddInstancesToTargetPool: targetPools.addInstance."""
        self._membership(pool, "addInstance", instances)

    def remove_instances(self, pool: str, instances: list[str]) -> None:
        """gce_targetpool.go RemoveInstancesFromTargetPool: targetPools.removeInstance."""
        self._membership(pool, "removeInstance", instances)

    def _membership(self, pool: str, verb: str, instances: list[str]) -> None:
        body = {"instances": [{"instance": url} for url in instances]}
        self._call("POST", f"{self._collection('targetPools')}/{pool}/{verb}", body)

    def delete(self, collection: str, name: str, zone: str | None = None) -> bool:
        """True if deleted, False if there was nothing to delete (404); in-use refusals and
        other failures raise ComputeRequestError."""
        try:
            self._call("DELETE", f"{self._collection(collection, zone)}/{name}")
        except ComputeRequestError as exc:
            if exc.not_found:
                return False
            raise
        return True

    def _call(self, method: str, url: str, body: dict[str, Any] | None = None) -> None:
        response = self._session.request(method, url, json=body, timeout=30)
        payload = _json(response)
        if response.status_code >= 400:
            error = payload.get("error") or {}
            reason = ((error.get("errors") or [{}])[0]).get("reason", "")
            raise ComputeRequestError(response.status_code, reason, error.get("message", ""))
        self._wait(payload, url)

    def _wait(self, operation: dict[str, Any], url: str) -> None:
        scope = f"{self._project_url}/global"
        for kind in ("regions", "zones"):
            if f"/{kind}/" in url:
                where = url.split(f"/{kind}/", 1)[1].split("/", 1)[0]
                scope = f"{self._project_url}/{kind}/{where}"
        while operation.get("status") != "DONE":
            response = self._session.post(
                f"{scope}/operations/{operation['name']}/wait", timeout=60
            )
            if response.status_code >= 400:
                raise ComputeRequestError(response.status_code, "", response.text)
            operation = _json(response)
        errors = (operation.get("error") or {}).get("errors") or []
        if errors:
            status = int(operation.get("httpErrorStatusCode") or 400)
            raise ComputeRequestError(
                status, errors[0].get("code", ""), errors[0].get("message", "")
            )


def _json(response: requests.Response) -> dict[str, Any]:
    try:
        value = response.json()
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
