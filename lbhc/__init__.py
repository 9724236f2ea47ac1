"""lbhc: shared kube-proxy health check for GCE target pools."""
