"""The Kubernetes client side: HTTP requests (api), the informer (LIST then WATCH), the work queue,
Events, Leases for leader election and for shards.
"""
