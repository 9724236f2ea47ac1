# The controller's identity: a service account holding exactly the permissions lbhc's Compute
# adapter declares (lbhc/gce/permissions.py; tests/test_terraform.py keeps the two equal).
# No keys anywhere: Workload Identity in GKE, impersonation from a workstation.

resource "google_service_account" "controller" {
  account_id   = "${var.name_prefix}-lbhc"
  display_name = "lbhc controller (e2e)"
  description  = "lbhc's end-to-end suite runs the controller as this account."

  depends_on = [google_project_service.api]
}

# Deleted custom roles keep their ID reserved for up to 37 days; a fresh suffix per stack
# lets destroy-then-apply work at any time.
resource "random_id" "role_suffix" {
  byte_length = 3
}

resource "google_project_iam_custom_role" "controller" {
  role_id     = "${local.role_prefix}_lbhc_controller_${random_id.role_suffix.hex}"
  title       = "lbhc controller (${var.name_prefix})"
  description = "Exactly what lbhc's Compute adapter calls need (lbhc/gce/permissions.py)."
  permissions = jsondecode(file("${path.module}/controller-permissions.json"))

  depends_on = [google_project_service.api]
}

resource "google_project_iam_member" "controller" {
  project = var.project
  role    = google_project_iam_custom_role.controller.name
  member  = "serviceAccount:${google_service_account.controller.email}"
}

# The suite runs lbhc in-process as the controller, impersonating it from the runner's own
# ADC with short-lived tokens (tests/e2e/gcp.py). Granted with or without GKE: the suite
# drives lbhc from the workstation or CI either way, and GKE only adds an in-cluster install.
resource "google_service_account_iam_member" "suite_runner_impersonates_controller" {
  service_account_id = google_service_account.controller.name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = var.suite_runner
}

# With GKE, lbhc's Kubernetes service account (deploy/: lbhc-system/lbhc) is the controller.
resource "google_service_account_iam_member" "workload_identity" {
  count = var.create_gke_cluster ? 1 : 0

  service_account_id = google_service_account.controller.name
  role               = "roles/iam.workloadIdentityUser"
  member             = "serviceAccount:${var.project}.svc.id.goog[lbhc-system/lbhc]"

  # The identity pool exists only once a cluster with Workload Identity does.
  depends_on = [google_container_cluster.e2e]
}

# The suite marks a node "being deleted" through its instance metadata. It gets just that,
# on just these instances (instance-level bindings), and never through the controller's
# account, whose permissions must stay exactly lbhc's.
resource "google_project_iam_custom_role" "node_state_writer" {
  role_id     = "${local.role_prefix}_lbhc_e2e_node_state_${random_id.role_suffix.hex}"
  title       = "lbhc e2e node state writer (${var.name_prefix})"
  description = "Read an instance and set its metadata (the e2e suite's node-state flag)."
  permissions = [
    "compute.instances.get",
    "compute.instances.setMetadata",
  ]

  depends_on = [google_project_service.api]
}

resource "google_compute_instance_iam_member" "suite_runner_node_state" {
  count = var.node_count

  zone          = google_compute_instance.node[count.index].zone
  instance_name = google_compute_instance.node[count.index].name
  role          = google_project_iam_custom_role.node_state_writer.name
  member        = var.suite_runner
}

# setMetadata answers with a zone operation; waiting on it is a project-level permission
# (operations have no IAM of their own) and only reveals operation status.
resource "google_project_iam_custom_role" "zone_operation_reader" {
  role_id     = "${local.role_prefix}_lbhc_e2e_zone_ops_${random_id.role_suffix.hex}"
  title       = "lbhc e2e zone operation reader (${var.name_prefix})"
  description = "Wait for the e2e suite's own setMetadata operations."
  permissions = ["compute.zoneOperations.get"]

  depends_on = [google_project_service.api]
}

resource "google_project_iam_member" "suite_runner_zone_operations" {
  project = var.project
  role    = google_project_iam_custom_role.zone_operation_reader.name
  member  = var.suite_runner
}
