"""memcached-gitops: the command line and the pipeline shared by its front ends."""

__version__ = "0.1.0"
