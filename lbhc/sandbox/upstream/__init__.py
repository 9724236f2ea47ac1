"""Today's GCE cloud provider for target-pool load balancers, as the sandbox's "current"
profile models it from kubernetes/cloud-provider-gcp (providers/gce/): its names and resource
shapes (`names`, `shapes`), how it reads a Service (`services`), what it would have made for
the seeded cluster (`seed`) and what it does at run time (`netlb`, over `compute`)."""
