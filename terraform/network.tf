resource "google_compute_network" "e2e" {
  name                    = "${var.name_prefix}-net"
  auto_create_subnetworks = false
  routing_mode            = "REGIONAL"

  depends_on = [google_project_service.api]

  lifecycle {
    precondition {
      condition     = startswith(var.zone, "${var.region}-")
      error_message = "zone ${var.zone} is not in region ${var.region}."
    }
  }
}

resource "google_compute_subnetwork" "nodes" {
  #checkov:skip=CKV_GCP_26:Flow logs cost money and nobody reads them in a throwaway test project.
  name          = "${var.name_prefix}-nodes"
  network       = google_compute_network.e2e.id
  region        = var.region
  ip_cidr_range = local.subnet_cidr
  # Google APIs (and GKE's image registry) without external IPs or NAT.
  private_ip_google_access = true

  # Unused unless create_gke_cluster; declared always because they cost nothing.
  secondary_ip_range {
    range_name    = "pods"
    ip_cidr_range = local.gke_pods_cidr
  }
  secondary_ip_range {
    range_name    = "services"
    ip_cidr_range = local.gke_svc_cidr
  }
}

# SSH from Google's IAP TCP forwarding range only: `gcloud compute ssh --tunnel-through-iap`.
resource "google_compute_firewall" "iap_ssh" {
  count = var.allow_iap_ssh ? 1 : 0

  name          = "${var.name_prefix}-allow-iap-ssh"
  network       = google_compute_network.e2e.id
  direction     = "INGRESS"
  source_ranges = [local.google_iap_range]
  target_tags   = [local.node_tag]

  allow {
    protocol = "tcp"
    ports    = ["22"]
  }
}

# GKE's private nodes pull lbhc's image from a public registry (ghcr.io), so they need NAT.
# The node instances do not: they need only the image's python3.
resource "google_compute_router" "nat" {
  count = var.create_gke_cluster ? 1 : 0

  name    = "${var.name_prefix}-nat"
  network = google_compute_network.e2e.id
  region  = var.region
}

resource "google_compute_router_nat" "nat" {
  count = var.create_gke_cluster ? 1 : 0

  name                               = "${var.name_prefix}-nat"
  router                             = google_compute_router.nat[0].name
  region                             = var.region
  nat_ip_allocate_option             = "AUTO_ONLY"
  source_subnetwork_ip_ranges_to_nat = "ALL_SUBNETWORKS_ALL_IP_RANGES"

  log_config {
    enable = true
    filter = "ERRORS_ONLY"
  }
}
