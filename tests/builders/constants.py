"""The one cluster and project the builders' objects belong to, unless a test says otherwise."""

from __future__ import annotations

PROJECT, REGION = "proj", "us-central1"
# metadata.uid of the kube-system Namespace: lbhc's cluster id (and its resources' names).
KUBE_SYSTEM_UID = "0b7c3c5e-1111-2222-3333-444455556666"
# data.uid of ConfigMap kube-system/ingress-uid: the cloud provider's node check's name.
CLOUD_PROVIDER_UID = "5e1d1b2c3a4f6789"
