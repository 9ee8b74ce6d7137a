#!/bin/sh
# kustomize's exec functions take a path, not arguments.
exec memcached-gitops krm "$@"
