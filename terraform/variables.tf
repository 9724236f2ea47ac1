variable "project" {
  description = "ID of the (disposable) project to create the test resources in."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project))
    error_message = "project must be a project ID (6-30 lowercase letters, digits, hyphens), not a name or number."
  }
}

variable "region" {
  description = "Region of the target pools and forwarding rules, e.g. us-central1."
  type        = string
  default     = "us-central1"

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+$", var.region))
    error_message = "region must look like us-central1."
  }
}

variable "zone" {
  description = "Zone of the node instances (and of the GKE cluster, if any); must be in region."
  type        = string
  default     = "us-central1-a"

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+-[a-z]$", var.zone))
    error_message = "zone must look like us-central1-a."
  }
}

variable "name_prefix" {
  description = "Prefix of every resource name, so several test stacks can share a project."
  type        = string
  default     = "lbhc-e2e"

  validation {
    # Short, because it ends up inside a 30-character service account ID.
    condition     = can(regex("^[a-z][a-z0-9-]{0,10}[a-z0-9]$", var.name_prefix))
    error_message = "name_prefix must be 2-12 lowercase letters, digits or hyphens, start with a letter and not end with a hyphen."
  }
}

variable "node_count" {
  description = "How many VM instances imitate cluster nodes behind the target pools."
  type        = number
  default     = 3

  validation {
    # Two at least, so one can be drained while another still serves.
    condition     = var.node_count >= 2 && var.node_count <= 10 && floor(var.node_count) == var.node_count
    error_message = "node_count must be a whole number from 2 to 10."
  }
}

variable "machine_type" {
  description = "Machine type of the node instances; they only run a tiny Python HTTP server."
  type        = string
  default     = "e2-micro"

  validation {
    condition     = can(regex("^[a-z0-9]+-[a-z0-9-]+$", var.machine_type))
    error_message = "machine_type must be a machine type name such as e2-micro."
  }
}

variable "suite_runner" {
  description = <<-EOT
    IAM principal that runs the end-to-end suite (a person or the CI identity), e.g.
    "user:alice@example.com", "serviceAccount:ci@p.iam.gserviceaccount.com" or a
    "principal://..." workload identity federation subject. It may flip the node instances'
    state metadata and impersonate the controller's service account.
  EOT
  type        = string

  validation {
    condition     = can(regex("^(user:|serviceAccount:|group:|principal://|principalSet://)\\S+$", var.suite_runner))
    error_message = "suite_runner must be an IAM member such as user:alice@example.com."
  }
}

variable "create_gke_cluster" {
  description = "Also create a small GKE cluster where lbhc runs with Workload Identity (costs more)."
  type        = bool
  default     = false
}

variable "gke_machine_type" {
  description = "Machine type of the GKE cluster's single node (only with create_gke_cluster)."
  type        = string
  default     = "e2-medium"

  validation {
    condition     = can(regex("^[a-z0-9]+-[a-z0-9-]+$", var.gke_machine_type))
    error_message = "gke_machine_type must be a machine type name such as e2-medium."
  }
}

variable "gke_authorized_networks" {
  description = "CIDR ranges allowed to reach the GKE control plane, e.g. your workstation's /32."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.gke_authorized_networks : can(cidrhost(c, 0))])
    error_message = "gke_authorized_networks must be a list of CIDR ranges."
  }
}

variable "allow_iap_ssh" {
  description = "Allow SSH to the node instances through IAP (no external IPs), for debugging."
  type        = bool
  default     = true
}
