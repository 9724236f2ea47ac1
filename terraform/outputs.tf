# Read by the end-to-end suite from `terraform output -json` (file named by LBHC_E2E_OUTPUTS).
# Names and shapes are a contract with tests/e2e: change both together.

output "project_id" {
  description = "Project the stack lives in."
  value       = var.project
}

output "region" {
  description = "Region of the target pools and forwarding rules."
  value       = var.region
}

output "zone" {
  description = "Zone of the node instances."
  value       = var.zone
}

output "network" {
  description = "Name of the VPC network (lbhc's firewall goes here)."
  value       = google_compute_network.e2e.name
}

output "node_tag" {
  description = "Network tag on every node instance (lbhc's firewall targets it)."
  value       = local.node_tag
}

output "nodes" {
  description = "The node instances: [{name, zone, internal_ip}]."
  value = [
    for n in google_compute_instance.node : {
      name        = n.name
      zone        = n.zone
      internal_ip = n.network_interface[0].network_ip
    }
  ]
}

output "cluster_service" {
  description = "The imitated externalTrafficPolicy=Cluster Service and its load balancer."
  value = {
    namespace       = local.services.cluster.namespace
    name            = local.services.cluster.name
    uid             = random_uuid.service_uid["cluster"].result
    target_pool     = google_compute_target_pool.service["cluster"].name
    forwarding_rule = google_compute_forwarding_rule.service["cluster"].name
  }
}

output "local_service" {
  description = "The imitated externalTrafficPolicy=Local Service and its load balancer."
  value = {
    namespace       = local.services.local.namespace
    name            = local.services.local.name
    uid             = random_uuid.service_uid["local"].result
    target_pool     = google_compute_target_pool.service["local"].name
    forwarding_rule = google_compute_forwarding_rule.service["local"].name
  }
}

output "controller_service_account" {
  description = "Email of lbhc's Google service account (impersonate it, or annotate the KSA)."
  value       = google_service_account.controller.email
}

output "node_state_metadata_key" {
  description = "Instance metadata attribute that marks a node as being deleted (value \"deleting\")."
  value       = local.node_state_metadata_key
}
