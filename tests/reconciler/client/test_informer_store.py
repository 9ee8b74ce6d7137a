"""The informer's store (reconciler/client/informer.py Store): what a re-LIST after a 410 reports, and the
write-through after our own writes. A relist that reported a change wrongly would make the
controller miss a CR or act on a stale one (client-go's DeltaFIFO Replace, and its MutationCache
comparing resourceVersions as integers)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from memcached_gitops.reconciler.client.informer import Store


def obj(name: str, rv: str, ns: str = "default", **extra) -> dict:
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": rv}, **extra}


def test_a_relist_reports_exactly_what_changed_and_replaces_the_store() -> None:
    store = Store()
    kept, changed, gone = obj("kept", "5"), obj("changed", "6"), obj("gone", "7")
    for o in (kept, changed, gone):
        assert store.put(o) is None
    changed2, new, other_ns = obj("changed", "9", spec={"size": 2}), obj("new", "10"), obj("kept", "11", ns="shop")
    events = store.replace([obj("kept", "5"), changed2, new, other_ns])
    assert sorted((t, o["metadata"]["namespace"], o["metadata"]["name"], (old or {}).get("metadata", {}).get("resourceVersion"))
                  for t, o, old in events) == [
        ("ADDED", "default", "new", None),
        ("ADDED", "shop", "kept", None),
        ("DELETED", "default", "gone", "7"),
        ("MODIFIED", "default", "changed", "6"),
    ], "an unchanged object (same resourceVersion) is no event; a deleted one carries its last state"
    assert [o is changed2 for t, o, _ in events if t == "MODIFIED"] == [True]
    assert [(o, old) == (gone, gone) for t, o, old in events if t == "DELETED"] == [True]
    assert sorted(store.keys()) == [("default", "changed"), ("default", "kept"), ("default", "new"), ("shop", "kept")]
    assert store.get(("default", "changed")) is changed2 and store.get(("default", "gone")) is None
    assert len(store) == 4 and sorted(o["metadata"]["resourceVersion"] for o in store.values()) == ["10", "11", "5", "9"]


def test_a_relist_into_an_empty_store_adds_everything_and_an_empty_relist_deletes_everything() -> None:
    store = Store()
    assert [t for t, _, _ in store.replace([obj("a", "1"), obj("b", "2")])] == ["ADDED", "ADDED"]
    assert sorted((t, o["metadata"]["name"]) for t, o, _ in store.replace([])) == [("DELETED", "a"), ("DELETED", "b")]
    assert len(store) == 0


def test_put_and_remove_answer_the_previous_object() -> None:
    store = Store()
    first, second = obj("a", "1"), obj("a", "2")
    assert store.put(first) is None and store.put(second) is first
    assert store.remove(("default", "a")) is second and store.remove(("default", "a")) is None


def test_our_write_goes_through_only_when_newer_compared_as_integers() -> None:
    store = Store()
    store.put(obj("a", "9"))
    assert not store.put_if_newer(obj("a", "9")), "the same version is not newer"
    assert not store.put_if_newer(obj("a", "8")), "an older answer never overwrites the cache"
    assert store.put_if_newer(obj("a", "10")), "10 > 9 as integers, though '10' < '9' as strings"
    assert store.get(("default", "a"))["metadata"]["resourceVersion"] == "10"
    assert not store.put_if_newer(obj("a", "")), "an answer without a version is not newer"
    assert store.put_if_newer(obj("b", "1")), "nothing stored: kept"
    store.put(obj("c", "x"))
    assert store.put_if_newer(obj("c", "3")), "a stored version that is not a number never blocks a write-through"
    for other in ("\u00b2", "\u0663", "\uff13"):  # digits to str.isdigit, none the API server's decimal
        store.put(obj("d", other))
        assert store.put_if_newer(obj("d", "3")), f"a stored version {other!r} is not a number: it never blocks"


# ---- the shared subtrees of the cache (compact), and the informer's backoff
def test_equal_pod_specs_are_one_object_in_the_cache_whatever_their_key_order(monkeypatch) -> None:
    from memcached_gitops.reconciler.client import informer

    monkeypatch.setattr(informer, "_SHARED", {})
    spec_a = {"containers": [{"name": "memcached", "image": "m:1"}], "securityContext": {"runAsNonRoot": True}}
    spec_b = {"securityContext": {"runAsNonRoot": True}, "containers": [{"image": "m:1", "name": "memcached"}]}
    one = informer.compact({"spec": {"template": {"spec": spec_a}}})
    two = informer.compact({"spec": {"template": {"spec": spec_b}}})
    assert one["spec"]["template"]["spec"] is two["spec"]["template"]["spec"]
    other = informer.compact({"spec": {"template": {"spec": {"containers": [{"name": "memcached", "image": "m:2"}]}}}})
    assert other["spec"]["template"]["spec"] == {"containers": [{"name": "memcached", "image": "m:2"}]}, "a different one keeps its value"


def test_the_shared_table_is_bounded(monkeypatch) -> None:
    from memcached_gitops.reconciler.client import informer

    monkeypatch.setattr(informer, "_SHARED", {})
    monkeypatch.setattr(informer, "_SHARED_MAX", 2)
    for n in range(3):
        spec = {"containers": [{"name": "memcached", "image": f"m:{n}"}]}
        assert informer.compact({"spec": {"template": {"spec": spec}}}) == {"spec": {"template": {"spec": spec}}}
    assert len(informer._SHARED) == 2, "a cluster of all-different objects cannot grow it past its bound"
    again = {"containers": [{"name": "memcached", "image": "m:2"}]}
    first = informer.compact({"spec": {"template": {"spec": again}}})["spec"]["template"]["spec"]
    assert informer.compact({"spec": {"template": {"spec": again}}})["spec"]["template"]["spec"] is not first, \
        "past the bound a subtree is compacted but not kept"


def test_a_subtree_found_in_the_shared_table_is_not_walked_again(monkeypatch) -> None:
    """Each watch event is compacted before it is handed on: a pod spec or a manager's f:spec that
    the table holds is looked up by its JSON and returned, without walking it."""
    from memcached_gitops.reconciler.client import informer

    monkeypatch.setattr(informer, "_SHARED", {})
    spec = {"containers": [{"name": "memcached", "image": "m:1", "ports": [{"containerPort": 11211}]}]}
    fields = {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {}}}}

    def deployment() -> dict:
        return {"metadata": {"name": "c", "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": dict(fields)}}]},
                "spec": {"replicas": 1, "template": {"spec": dict(spec)}}}

    first = informer.compact(deployment())
    walked: list[object] = []
    intern = informer._intern
    monkeypatch.setattr(informer, "_intern", lambda value, like=None: walked.append(value) or intern(value))
    second = informer.compact(deployment())
    assert second == deployment() and second["spec"]["template"]["spec"] is first["spec"]["template"]["spec"]
    assert second["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"] is first["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]
    assert walked == ["c", "m", 1], "only the values off the paths to the shared subtrees"


def test_compaction_interns_every_key_and_the_short_strings_at_any_depth(monkeypatch) -> None:
    from memcached_gitops.reconciler.client import informer

    monkeypatch.setattr(informer, "_SHARED", {})
    long = "x" * 65

    def fresh(text: str) -> str:
        return "".join(list(text))  # an equal string that is not the interned one

    obj = {"status": {"conditions": [{fresh("type"): fresh("Available"), "message": fresh(long)}]},
           "metadata": {"labels": {fresh("app"): fresh("memcached")}}}
    out = informer.compact(obj)
    condition = out["status"]["conditions"][0]
    assert out == obj and [k for k in condition][0] is "type" and condition["type"] is "Available"  # noqa: F632
    assert list(out["metadata"]["labels"])[0] is "app" and out["metadata"]["labels"]["app"] is "memcached"  # noqa: F632
    assert informer._intern(fresh(long)) is not informer._intern(fresh(long)), "a string over 64 characters is kept as it is"


def test_backoff_doubles_from_its_base_to_its_cap_with_jitter_and_names_the_kind(monkeypatch, caplog) -> None:
    from memcached_gitops.reconciler.client import informer
    from memcached_gitops.reconciler.client.informer import Informer, Kind

    waits: list[float] = []
    low_high = iter([0.5, 1.5] * 10)
    monkeypatch.setattr(informer.random, "uniform", lambda a, b: (a, b) == (0.5, 1.5) and next(low_high))
    watcher = Informer(None, Kind("Deployment", "apps", "v1", "deployments"), lambda *a: None,  # type: ignore[arg-type]
                       backoff_base=1.0, backoff_cap=5.0)
    monkeypatch.setattr(watcher.stop, "wait", lambda delay: waits.append(delay))
    for _ in range(5):
        watcher._backoff(RuntimeError("connection refused"))
    assert waits == [0.5, 3.0, 2.0, 7.5, 2.5], "1, 2, 4, then the cap of 5 (not 8): each times a factor in [0.5, 1.5]"
    assert "deployments: connection refused; retrying in 0.50s" in caplog.text


_keys = st.tuples(st.sampled_from(("default", "shop")), st.sampled_from(("a", "b", "c", "d")))
_listed = st.dictionaries(_keys, st.integers(1, 4), max_size=8)


_outside = st.sampled_from((None, "a", "default"))


@settings(max_examples=100, deadline=None)
@given(_listed, _listed, _outside, _outside)
def test_a_relist_reports_each_object_by_what_the_store_held_and_what_the_list_keeps(
        held: dict, listed: dict, outside_then: str | None, outside_now: str | None) -> None:
    """Whatever the store held and the LIST brings (the same names in two namespaces, versions moved or
    not, and with a share that may have changed in between: objects outside it): an object kept that the
    store lacked is ADDED, one whose resourceVersion moved MODIFIED with the held one, and every object the
    store held that the list no longer keeps (gone from the cluster, or gone out of the share) DELETED with
    its last state; the store is then the objects kept, and nothing else is told."""
    share = [outside_then]

    def keeps(o: dict) -> bool:
        return share[0] not in (o["metadata"]["name"], o["metadata"]["namespace"])

    store = Store(None if outside_then is None and outside_now is None else keeps)
    for (ns, name), rv in held.items():
        store.put(obj(name, str(rv), ns))
    before = {k: store.get(k) for k in store.keys()}
    share[0] = outside_now
    objects = [obj(name, str(rv), ns) for (ns, name), rv in listed.items()]
    kept = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects if store.keep is None or keeps(o)}
    expected = sorted([("ADDED", k, None) for k in kept if k not in before]
                      + [("MODIFIED", k, before[k]["metadata"]["resourceVersion"]) for k in kept
                         if k in before and before[k]["metadata"]["resourceVersion"] != kept[k]["metadata"]["resourceVersion"]]
                      + [("DELETED", k, before[k]["metadata"]["resourceVersion"]) for k in before if k not in kept])
    events = store.replace(objects)
    assert sorted((t, (o["metadata"]["namespace"], o["metadata"]["name"]), old and old["metadata"]["resourceVersion"])
                  for t, o, old in events) == expected
    assert {k: store.get(k) for k in store.keys()} == kept
