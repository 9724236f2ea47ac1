"""The Kubernetes adapter: every Kubernetes API call lbhc makes lives in lbhc.kube.client."""
