"""The fake API server, the kubernetes client and KubeReader for the adapter's tests."""

from tests.kube_fixtures import api_client, kube_fake, kube_server, reader

__all__ = ["api_client", "kube_fake", "kube_server", "reader"]
