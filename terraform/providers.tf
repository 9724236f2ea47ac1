provider "google" {
  project = var.project
  region  = var.region
  zone    = var.zone

  # Everything this module creates is findable (and billable) by one label.
  default_labels = {
    purpose     = "lbhc-e2e"
    name-prefix = var.name_prefix
  }
}
