"""Today's GCE load-balancer controllers, as the sandbox's "current" profile models them.

The cloud provider (kubernetes/cloud-provider-gcp providers/gce/): its names and resource
shapes (`names`, `shapes`), how it reads a Service (`services`) and Nodes (`nodes`), what it
would have made for the seeded cluster (`seed`), and what it does at run time: target pools
(`netlb`, `pool_hosts`), its own internal load balancers (`ilb`), over `compute`, `checks`,
`groups` and `addresses`. GKE's ingress-gce L4 controllers (kubernetes/ingress-gce), for the
backend-service load balancers the cloud provider leaves to them: `ingress_gce`."""
