# VMs standing in for cluster nodes: each answers on kube-proxy's health port like kube-proxy
# 1.31 does, and its /healthz fails while its state metadata says "deleting".
resource "google_compute_instance" "node" {
  #checkov:skip=CKV_GCP_38:A customer-supplied key on a throwaway test disk that holds nothing protects nothing.
  count = var.node_count

  name         = "${var.name_prefix}-node-${count.index}"
  machine_type = var.machine_type
  zone         = var.zone
  tags         = [local.node_tag]

  boot_disk {
    initialize_params {
      image = "debian-cloud/debian-12"
      size  = 10
      type  = "pd-balanced"
    }
  }

  # No access_config: no external IP. Google's health checkers reach internal addresses.
  network_interface {
    subnetwork = google_compute_subnetwork.nodes.id
  }

  shielded_instance_config {
    enable_secure_boot          = true
    enable_vtpm                 = true
    enable_integrity_monitoring = true
  }

  # No service_account block: the server calls no Google API (the metadata server needs no
  # identity), and without one, setting metadata does not also need actAs on an account.

  metadata = {
    block-project-ssh-keys = "true"
    enable-oslogin         = "TRUE"
    # Initial state; the suite changes it, Terraform leaves it alone (ignore_changes below).
    (local.node_state_metadata_key) = "serving"
  }

  # metadata_startup_script (not metadata["startup-script"]) replaces the instance when the
  # script changes: a startup script runs only at boot, so an in-place edit would not apply.
  metadata_startup_script = templatefile("${path.module}/node-startup.sh.tftpl", {
    server_py    = file("${path.module}/kube-proxy-health.py")
    port         = local.kube_proxy_health_port
    metadata_key = local.node_state_metadata_key
  })

  lifecycle {
    # The suite flips it mid-run; a later apply must not undo that.
    ignore_changes = [metadata["lbhc-e2e-node-state"]]
  }
}
