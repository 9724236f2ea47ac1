# lbhc's end-to-end test project: VMs that answer like kube-proxy, target pools named like a
# cluster's LoadBalancer Services, and the controller's least-privilege identity. lbhc itself
# creates the shared health check and its firewall; the suite asserts it does, so neither is
# here.

locals {
  # The suite flips this instance metadata attribute to "deleting" to make a node's /healthz
  # fail, standing in for the ToBeDeletedByClusterAutoscaler taint on a real Node.
  node_state_metadata_key = "lbhc-e2e-node-state"

  # What GKE would put on cluster nodes; lbhc's firewall targets it.
  node_tag = "${var.name_prefix}-node"

  # kube-proxy's healthz port, which lbhc's shared check probes.
  kube_proxy_health_port = 10256

  # Two imitation LoadBalancer Services, one per externalTrafficPolicy.
  services = {
    cluster = { namespace = "lbhc-e2e", name = "etp-cluster" }
    local   = { namespace = "lbhc-e2e", name = "etp-local" }
  }

  # Custom role IDs allow no hyphens.
  role_prefix = replace(var.name_prefix, "-", "_")

  subnet_cidr      = "10.20.0.0/24"
  gke_pods_cidr    = "10.24.0.0/20"
  gke_svc_cidr     = "10.28.0.0/24"
  gke_master_cidr  = "172.16.0.16/28"
  google_iap_range = "35.235.240.0/20"
}
