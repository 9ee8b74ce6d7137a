"""The name indexes (client/caches.py ``Caches.absent``): a name is known to be free only when the
index of its kind and namespace has synced without error and does not hold it. Anything less (not yet
synced, the LIST refused, a namespace out of scope) answers "not known", and the reconcile GETs the
name before creating it, so that a foreign object is never taken over by its name."""

from __future__ import annotations

from memcached_gitops.reconciler.client.caches import Caches, names_kind, watched_kinds
from memcached_gitops.reconciler.client.informer import Kind
from memcached_gitops.reconciler.decisions.vocabulary import DEPLOYMENTS, SERVICES

from fakeapi.server import FakeAPIServer, Fault
from tests.support.controller import client, wait_for
from tests.support.fakecluster import foreign_service


def _caches(cluster: FakeAPIServer, scopes: tuple[str | None, ...]) -> Caches:
    kinds = {k: v for k, v in watched_kinds(Kind("Memcached", "cache.example.com", "v1alpha1", "memcacheds")).items()
             if k in (names_kind(SERVICES), names_kind(DEPLOYMENTS))}
    return Caches(client(cluster), kinds, lambda *event: None, scopes)


def _synced(caches: Caches) -> None:
    for informer in caches.all():
        informer.start()
    for informer in caches.all():
        assert informer.synced.wait(10), informer.kind.plural


def _stop(caches: Caches) -> None:
    for informer in caches.all():
        informer.stop.set()


def test_a_name_is_free_only_once_its_index_has_synced_and_lacks_it(cluster: FakeAPIServer) -> None:
    foreign_service(cluster, "taken", "default")
    caches = _caches(cluster, (None,))
    assert not caches.absent(SERVICES, "default", "free"), "not synced yet: not known"
    _synced(caches)
    try:
        assert caches.absent(SERVICES, "default", "free")
        assert not caches.absent(SERVICES, "default", "taken"), "a foreign Service, labelled or not"
        assert caches.absent(SERVICES, "shop", "taken"), "by namespace"
        assert caches.absent(DEPLOYMENTS, "default", "taken"), "by kind"
        foreign_service(cluster, "later", "default")
        wait_for(lambda: not caches.absent(SERVICES, "default", "later"), what="the watch's ADDED")
    finally:
        _stop(caches)


def test_an_index_that_cannot_list_knows_nothing(cluster: FakeAPIServer) -> None:
    cluster.faults.append(Fault(method="GET", path_contains="/services", status=404, times=100))
    caches = _caches(cluster, (None,))
    _synced(caches)  # a refused LIST ends the informer with its error (it never waits forever)
    try:
        services = caches.informers[names_kind(SERVICES)][0]
        assert services.error, "the LIST was refused"
        assert not caches.absent(SERVICES, "default", "free"), "an empty store after an error says nothing"
        assert caches.absent(DEPLOYMENTS, "default", "free")
    finally:
        _stop(caches)


def test_a_namespace_out_of_scope_is_not_known(cluster: FakeAPIServer) -> None:
    caches = _caches(cluster, ("default",))
    _synced(caches)
    try:
        assert caches.absent(SERVICES, "default", "free")
        assert not caches.absent(SERVICES, "shop", "free"), "no index watches shop"
    finally:
        _stop(caches)
