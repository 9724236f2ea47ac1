"""Names GCE resources get, derived the way upstream derives them."""

from __future__ import annotations

import hashlib
import re

# RFC 1035 labels of at most 63 characters: what GCE accepts as a resource name or network tag.
GCE_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


def is_valid_gce_name(name: str) -> bool:
    return bool(GCE_NAME.match(name))


def target_pool_name(service_uid: str) -> str:
    """The cloud provider's LB name: "a" + UID without dashes, cut to 32 characters."""
    return ("a" + service_uid.replace("-", ""))[:32]


def cluster_id_from_uid(kube_system_uid: str) -> str:
    """Short and stable: the kube-system namespace lives as long as the cluster does."""
    return hashlib.sha256(kube_system_uid.encode()).hexdigest()[:8]


def shared_resource_name(base_name: str, cluster_id: str) -> str:
    return f"{base_name}-{cluster_id}"
