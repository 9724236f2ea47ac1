"""GKE's ingress-gce L4 controllers, as the sandbox's "current" profile models them from
kubernetes/ingress-gce: the backend-service load balancers the cloud provider leaves to it
(RBS external Services; internal ones under GKE subsetting). Names (`names`), node filters
and sync triggers (`nodes`), NEG subsets (`subsets`), resource shapes (`shapes`), backends
and their links (`backends`), and the controllers' passes (`controller`)."""
