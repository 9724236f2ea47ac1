"""Active probes of each node's kube-proxy health port, from the controller (optional)."""
