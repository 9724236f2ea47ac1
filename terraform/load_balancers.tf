# Target pools and forwarding rules exactly as the GCE cloud provider makes them for a
# LoadBalancer Service: named "a" + the Service UID without dashes, cut to 32 characters, and
# described with the Service's namespace/name. No Kubernetes Service exists; the suite's
# cluster snapshot describes one with the same UID.

# A stand-in for each Service's metadata.uid, stable for the life of the stack.
resource "random_uuid" "service_uid" {
  for_each = local.services
}

locals {
  lb_names = {
    for k, uid in random_uuid.service_uid : k => substr("a${replace(uid.result, "-", "")}", 0, 32)
  }
  lb_descriptions = {
    for k, s in local.services : k => jsonencode({ "kubernetes.io/service-name" = "${s.namespace}/${s.name}" })
  }
}

resource "google_compute_target_pool" "service" {
  for_each = local.services

  name        = local.lb_names[each.key]
  description = local.lb_descriptions[each.key]
  region      = var.region
  instances   = [for n in google_compute_instance.node : "${n.zone}/${n.name}"]

  lifecycle {
    # No health check here: attaching (and detaching) the shared one is lbhc's job, and a
    # later apply must not take it away in the middle of a run.
    ignore_changes = [health_checks]
  }
}

resource "google_compute_forwarding_rule" "service" {
  for_each = local.services

  name                  = local.lb_names[each.key]
  description           = local.lb_descriptions[each.key]
  region                = var.region
  target                = google_compute_target_pool.service[each.key].self_link
  load_balancing_scheme = "EXTERNAL"
  ip_protocol           = "TCP"
  # Nothing listens on 80; only the health checks matter to the suite.
  port_range = "80"
}
