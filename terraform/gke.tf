# Optional (create_gke_cluster): a small private GKE cluster to run lbhc in-cluster with
# Workload Identity, the way users deploy it. The suite's node instances are not its nodes.

resource "google_service_account" "gke_nodes" {
  count = var.create_gke_cluster ? 1 : 0

  account_id   = "${var.name_prefix}-gke-node"
  display_name = "lbhc e2e GKE nodes"
  description  = "Least-privilege node identity instead of the Compute default account."

  depends_on = [google_project_service.api]
}

resource "google_project_iam_member" "gke_nodes" {
  count = var.create_gke_cluster ? 1 : 0

  project = var.project
  # Google's minimal node role: logs, metrics, resource metadata.
  role   = "roles/container.defaultNodeServiceAccount"
  member = "serviceAccount:${google_service_account.gke_nodes[0].email}"
}

resource "google_container_cluster" "e2e" {
  #checkov:skip=CKV_GCP_12:Dataplane V2 enforces NetworkPolicy itself; the legacy network_policy addon must stay off with it.
  #checkov:skip=CKV_GCP_24:PodSecurityPolicy was removed in Kubernetes 1.25.
  #checkov:skip=CKV_GCP_61:Intranode visibility means flow logs, a cost with no reader in a test cluster.
  #checkov:skip=CKV_GCP_66:Binary Authorization needs a policy and attestors; out of scope for a throwaway cluster.
  #checkov:skip=CKV_GCP_65:Google Groups for RBAC needs a Workspace domain the suite does not assume.
  #checkov:skip=CKV_GCP_69:The cluster's own node_config is only the bootstrap pool, removed at creation; the node pool below sets GKE_METADATA.
  count = var.create_gke_cluster ? 1 : 0

  name     = "${var.name_prefix}-gke"
  location = var.zone # zonal: one free-tier control plane, and the suite's zone
  # Disposable: `terraform destroy` must be able to delete it.
  deletion_protection = false

  network    = google_compute_network.e2e.id
  subnetwork = google_compute_subnetwork.nodes.id

  # The node pool below is managed separately; the default one is only a bootstrap.
  remove_default_node_pool = true
  initial_node_count       = 1

  release_channel {
    channel = "REGULAR"
  }

  workload_identity_config {
    workload_pool = "${var.project}.svc.id.goog"
  }

  ip_allocation_policy {
    cluster_secondary_range_name  = "pods"
    services_secondary_range_name = "services"
  }

  datapath_provider = "ADVANCED_DATAPATH"

  private_cluster_config {
    enable_private_nodes    = true
    enable_private_endpoint = false
    master_ipv4_cidr_block  = local.gke_master_cidr
  }

  # The control plane's public endpoint answers only these ranges (and the VPC).
  master_authorized_networks_config {
    dynamic "cidr_blocks" {
      for_each = var.gke_authorized_networks
      content {
        cidr_block   = cidr_blocks.value
        display_name = "authorized-${cidr_blocks.key}"
      }
    }
  }

  master_auth {
    client_certificate_config {
      issue_client_certificate = false
    }
  }

  enable_shielded_nodes = true
  enable_legacy_abac    = false

  resource_labels = {
    purpose = "lbhc-e2e"
  }

  depends_on = [google_project_service.api, google_compute_router_nat.nat]
}

resource "google_container_node_pool" "e2e" {
  count = var.create_gke_cluster ? 1 : 0

  name       = "default"
  cluster    = google_container_cluster.e2e[0].id
  location   = var.zone
  node_count = 1

  management {
    auto_repair  = true
    auto_upgrade = true
  }

  node_config {
    machine_type    = var.gke_machine_type
    image_type      = "COS_CONTAINERD"
    disk_size_gb    = 30
    service_account = google_service_account.gke_nodes[0].email
    oauth_scopes    = ["https://www.googleapis.com/auth/cloud-platform"]

    # Pods see the GKE metadata server, which is what makes Workload Identity work.
    workload_metadata_config {
      mode = "GKE_METADATA"
    }

    shielded_instance_config {
      enable_secure_boot          = true
      enable_integrity_monitoring = true
    }

    metadata = {
      disable-legacy-endpoints = "true"
    }
  }
}
