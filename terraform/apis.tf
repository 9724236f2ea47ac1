locals {
  apis = concat(
    [
      "compute.googleapis.com",
      "iam.googleapis.com",
      # generateAccessToken: the suite's impersonated, short-lived credentials.
      "iamcredentials.googleapis.com",
      # Project IAM bindings go through it; new projects usually have it already.
      "cloudresourcemanager.googleapis.com",
    ],
    var.create_gke_cluster ? ["container.googleapis.com"] : [],
  )
}

resource "google_project_service" "api" {
  for_each = toset(local.apis)

  service = each.value
  # Leave APIs on at destroy: turning them off is slow, can fail on leftovers, and buys nothing
  # in a test project.
  disable_on_destroy = false
}
