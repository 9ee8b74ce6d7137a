"""drift.py and managedfields.py, as pure functions: which fields differ, how they are named, who
set them, and the JSON patch that removes unwanted list items."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memcached_gitops.reconciler.decisions.drift import ATOMIC, MERGE_KEYS, Drift, compare, removal_patch
from memcached_gitops.reconciler.decisions.managedfields import describe_manager, owners_of
from memcached_gitops.schemas.list_rules import ListRules

ABSENT = compare({}, None)[0].live  # how a drift says "not there"
PORTS = (("f", "spec"), ("f", "template"), ("f", "spec"), ("f", "containers"), ("k", (("name", "memcached"),)), ("f", "ports"))


def deployment(ports: list[dict] | None = None, containers: list[dict] | None = None, managed: list | None = None) -> dict:
    ports = [{"containerPort": 11211, "protocol": "TCP", "name": "memcached"}] if ports is None else ports
    containers = [{"name": "memcached", "image": "memcached:1", "ports": ports}] if containers is None else containers
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "m", "namespace": "default", **({"managedFields": managed} if managed else {})},
            "spec": {"replicas": 1, "template": {"spec": {"containers": containers}}}}


def test_a_missing_deployment_is_one_drift_of_the_whole_object() -> None:
    [d] = compare({"spec": {}}, None)
    assert (d.path, d.desired, d.managers, d.unwanted) == ((), "<the whole object>", (), False)
    assert d.describe() == ': live <absent>, desired "<the whole object>" (set by no field manager)'


def test_describe_names_values_compactly_and_the_managers() -> None:
    d = Drift((("f", "spec"), ("f", "template")), {"a": [1, 2], "b": "x"}, {"a": 1, "c": 2}, ("kubectl (scale)", "kubectl-edit"))
    assert d.describe() == '.spec.template: live {"a":[1,2],"b":"x"}, desired {"a":1,"c":2} (set by kubectl (scale), kubectl-edit)'
    assert Drift((("f", "x"),), ABSENT, 1, ()).describe() == ".x: live <absent>, desired 1 (set by no field manager)"
    assert Drift((("f", "x"),), 1, ABSENT, ("a",)).describe() == ".x: live 1, desired <absent> (set by a)"


def test_name_and_namespace_of_the_object_are_not_compared_but_a_label_called_name_is() -> None:
    desired = {"metadata": {"name": "m", "namespace": "a", "labels": {"name": "x", "namespace": "y"}}}
    live = {"metadata": {"name": "m", "labels": {"name": "z", "namespace": "y"}}}
    assert [(d.field, d.live, d.desired) for d in compare(desired, live)] == [(".metadata.labels.name", "z", "x")]


def test_a_desired_null_differs_from_an_absent_field() -> None:
    [d] = compare({"spec": {"paused": None}}, {"spec": {}})
    assert d.field == ".spec.paused" and d.live is ABSENT and d.desired is None


def test_a_map_replaced_by_a_scalar_is_one_drift() -> None:
    [d] = compare({"spec": {"strategy": {"type": "Recreate"}}}, {"spec": {"strategy": "x"}})
    assert (d.field, d.live, d.desired) == (".spec.strategy", "x", {"type": "Recreate"})


def test_a_renamed_container_is_drift_owned_by_who_renamed_it_and_by_the_list_owner() -> None:
    containers = (("f", "spec"), ("f", "template"), ("f", "spec"), ("f", "containers"))
    managed = [
        {"manager": "atomic-owner", "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {}}}}}},
        {"manager": "kubectl-edit",
         "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"old"}': {"f:image": {}}}}}}}},
        {"manager": "bystander", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
    ]
    live = deployment(containers=[{"name": "old", "image": "memcached:1"}, "not a container"], managed=managed)
    [d] = compare(deployment(), live)
    assert d.path == containers + (("k", (("name", "memcached"),)),)
    assert d.field == '.spec.template.spec.containers[name="memcached"]' and d.live is ABSENT
    assert d.managers == ("atomic-owner", "kubectl-edit")


def test_the_culprits_of_a_missing_item_are_the_owners_of_unexpected_items_only() -> None:
    def container(name: str) -> dict:
        return {"name": name, "image": "memcached:1"}

    def owner(manager: str, name: str) -> dict:
        return {"manager": manager, "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {f'k:{{"name":"{name}"}}': {}}}}}}}

    desired = deployment(containers=[container("memcached"), container("sidecar")])
    live = deployment(containers=[container("sidecar"), container("old")], managed=[owner("mesh", "sidecar"), owner("kubectl-edit", "old")])
    [d] = compare(desired, live)
    assert d.field == '.spec.template.spec.containers[name="memcached"]' and d.managers == ("kubectl-edit",)


def test_an_owner_reference_is_compared_whole() -> None:
    ref = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "m", "uid": "u", "controller": True,
           "blockOwnerDeletion": True}
    desired = {"metadata": {"ownerReferences": [ref]}}
    [d] = compare(desired, {"metadata": {"ownerReferences": [{**ref, "blockOwnerDeletion": False}]}})
    assert d.field == '.metadata.ownerReferences[uid="u"]' and d.live == {**ref, "blockOwnerDeletion": False}
    assert compare(desired, {"metadata": {"ownerReferences": [{**ref, "extra": 1}]}}) != []
    assert compare(desired, {"metadata": {"ownerReferences": [ref, {**ref, "uid": "v", "controller": False}]}}) == []


def test_unwanted_ports_are_removed_last_index_first_each_guarded_by_a_test() -> None:
    ours = {"containerPort": 11211, "protocol": "TCP", "name": "memcached"}
    live_ports = [ours] + [{"containerPort": 9000 + i, "protocol": "TCP"} for i in range(1, 11)]
    live = deployment(ports=live_ports)
    desired = deployment(ports=[ours])
    drifts = compare(desired, deployment(ports=[ours, live_ports[2], live_ports[10]]))
    assert [d.field for d in drifts] == [
        '.spec.template.spec.containers[name="memcached"].ports[containerPort=9002,protocol="TCP"]',
        '.spec.template.spec.containers[name="memcached"].ports[containerPort=9010,protocol="TCP"]']
    assert all(d.unwanted and d.desired is ABSENT for d in drifts)
    base = "/spec/template/spec/containers/0/ports/"
    assert removal_patch(live, drifts) == [
        {"op": "test", "path": base + "10", "value": live_ports[10]}, {"op": "remove", "path": base + "10"},
        {"op": "test", "path": base + "2", "value": live_ports[2]}, {"op": "remove", "path": base + "2"},
    ]


def test_removal_patch_escapes_json_pointer_characters() -> None:
    drift = Drift((("f", "a/b~c"), ("k", (("name", "x"),))), {"name": "x"}, ABSENT, ())
    assert removal_patch({"a/b~c": [{"name": "y"}, {"name": "x"}]}, [drift]) == [
        {"op": "test", "path": "/a~1b~0c/1", "value": {"name": "x"}}, {"op": "remove", "path": "/a~1b~0c/1"}]
    assert removal_patch({}, [Drift((("f", "a"),), 1, 2, ())]) == [], "only unwanted items are removed"


def test_merge_keys_in_managed_fields_are_json_with_sorted_keys() -> None:
    """fieldsV1 spells an item's key as JSON with sorted keys (``k:{"containerPort":11211,"protocol":"TCP"}``)."""
    managed = [{"manager": "kubectl-patch", "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"memcached"}': {
        "f:ports": {'k:{"containerPort":11211,"protocol":"TCP"}': {"f:name": {}}}}}}}}}}]
    assert owners_of(managed, PORTS + (("k", (("protocol", "TCP"), ("containerPort", 11211))), ("f", "name"))) == ("kubectl-patch",)
    assert owners_of(managed, PORTS + (("k", (("protocol", "TCP"), ("containerPort", 11212))),)) == ()
    assert owners_of(managed, ()) == ()


def test_describe_manager() -> None:
    assert describe_manager({"manager": "kubectl", "subresource": "scale"}) == "kubectl (scale)"
    assert describe_manager({"manager": "kubectl-set"}) == "kubectl-set"
    assert describe_manager({}) == "?"


def test_absent_reads_as_absent_in_a_drifts_repr() -> None:
    assert repr(ABSENT) == "<absent>" and "live=<absent>" in repr(compare({}, None)[0])


def test_who_added_or_replaced_a_port_is_named_on_its_drift() -> None:
    """A container port nobody asked for, and a missing one, are attributed to the manager whose
    fieldsV1 hold the keyed item (``k:{"containerPort":...,"protocol":...}``): the fight detector and
    the Event name that manager."""

    def deployment(*ports: int) -> dict:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"},
                "spec": {"template": {"spec": {"containers": [{"name": "memcached", "ports": [
                    {"containerPort": p, "protocol": "TCP"} for p in ports]}]}}}}

    def edited(*ports: int) -> dict:
        live = deployment(*ports)
        owned = {f'k:{{"containerPort":{p},"protocol":"TCP"}}': {".": {}, "f:containerPort": {}, "f:protocol": {}} for p in ports}
        live["metadata"]["managedFields"] = [{"manager": "kubectl-edit", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {
            "f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"memcached"}': {"f:ports": owned}}}}}}}]
        return live

    [added] = [d for d in compare(deployment(11211), edited(11211, 9150)) if "9150" in d.field]
    assert any("kubectl-edit" in m for m in added.managers), added
    [missing] = [d for d in compare(deployment(11211), edited(9150)) if "11211" in d.field]
    assert any("kubectl-edit" in m for m in missing.managers), missing


def test_a_port_switched_to_another_protocol_is_ours_missing_and_theirs_unwanted() -> None:
    """A port's key is its number and protocol, TCP when unsaid (the API server's default): a port a
    person switched to UDP is another item, so ours is missing and theirs is removed, not one field of
    ours changed (an apply alone would leave the UDP port beside ours)."""
    desired = deployment([{"containerPort": 11211, "name": "memcached"}])  # rendered without protocol: TCP
    live = deployment([{"containerPort": 11211, "protocol": "UDP", "name": "memcached"}])
    found = {(d.field, d.live is ABSENT, d.desired is ABSENT) for d in compare(desired, live)}
    assert found == {('.spec.template.spec.containers[name="memcached"].ports[containerPort=11211,protocol="TCP"]', True, False),
                     ('.spec.template.spec.containers[name="memcached"].ports[containerPort=11211,protocol="UDP"]', False, True)}, found


# ---- properties: a field on either side only, at any depth, under any name
_NAMES = ("metadata", "name", "namespace", "kind", "apiVersion", "image", "x")
_SCALARS = st.one_of(st.integers(0, 2), st.sampled_from(("a", "b", "")), st.none(), st.lists(st.integers(0, 1), max_size=2))


#: Whether an item someone else adds to each associative list is drift: the lists we own whole inside
#: our container (a second port or env entry beside ours: a port renamed by hand keeps the old name, a
#: duplicate the API server rejects, and an env entry changes what memcached runs with), or someone
#: else's (a sidecar container, another owner).
EXTRA_ITEM_IS_DRIFT = {
    ("spec", "template", "spec", "containers"): False,
    ("spec", "template", "spec", "containers", "ports"): True,
    ("spec", "template", "spec", "containers", "env"): True,
    ("metadata", "ownerReferences"): False,
}


def _at(path: tuple[str, ...], leaf: object) -> dict:
    """An object holding ``leaf`` at ``path``, each associative list on the way one item of ours."""
    obj: object = leaf
    for i in range(len(path) - 1, -1, -1):
        if path[:i + 1] in MERGE_KEYS and i + 1 < len(path):
            obj = [{**{k: "ours" for k in MERGE_KEYS[path[:i + 1]]}, **obj}]
        obj = {path[i]: obj}
    return obj


@pytest.mark.parametrize("path", sorted(MERGE_KEYS), ids=lambda p: ".".join(p))
def test_an_item_someone_adds_is_drift_only_in_the_lists_we_own_whole(path: tuple[str, ...]) -> None:
    """Each associative list of the table, matched by its merge keys: an item under keys of its own
    beside ours is taken off (an unwanted drift, removed before the apply) in a list we own whole, and
    left to its owner in the others."""
    assert set(EXTRA_ITEM_IS_DRIFT) == set(MERGE_KEYS), "a list added to the table says here whether it is ours whole"
    ours = {k: "ours" for k in MERGE_KEYS[path]}
    theirs = {k: "theirs" for k in MERGE_KEYS[path]}
    drifts = compare(_at(path, [ours]), _at(path, [theirs, ours]))
    if EXTRA_ITEM_IS_DRIFT[path]:
        assert [(d.unwanted, d.live) for d in drifts] == [(True, theirs)], drifts
    else:
        assert drifts == [], drifts


def test_an_env_entry_is_matched_by_its_name_wherever_it_stands() -> None:
    """apps/v1 keys a container's env by name: a value changed by hand is drift of that entry's value,
    named by the entry's name (what the log and the Event show), wherever the entry moved; an entry
    someone added is drift too."""
    desired = deployment()
    desired["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    live = deployment()
    live["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "C", "value": "3"}, {"name": "B", "value": "2"},
                                                                {"name": "A", "value": "9"}]
    env = '.spec.template.spec.containers[name="memcached"].env'
    assert sorted((d.field, d.live, d.desired) for d in compare(desired, live)) == [
        (f'{env}[name="A"].value', "9", "1"), (f'{env}[name="C"]', {"name": "C", "value": "3"}, ABSENT)]


#: The maps and structs apps/v1 owns whole (+mapType=atomic, +structType=atomic), by the field the
#: reconciler names: a key someone adds beside ours changes what the object does (a Pod pinned to other
#: nodes, a selector that picks other Pods), so it is drift though we never set that key.
ATOMIC_MAPS = {".spec.template.spec.nodeSelector": {"disktype": "ssd"}, ".spec.selector": {"matchLabels": {"app": "a"}}}


@pytest.mark.parametrize("field", sorted(ATOMIC_MAPS))
def test_a_key_added_to_an_atomic_map_is_drift_of_the_whole_map(field: str) -> None:
    path = tuple(field.strip(".").split("."))
    ours = ATOMIC_MAPS[field]
    theirs = {**ours, "zone": "b"} if "matchLabels" not in ours else {"matchLabels": {**ours["matchLabels"], "tier": "x"}}
    assert [(d.field, d.live, d.desired) for d in compare(_at(path, ours), _at(path, theirs))] == [(field, theirs, ours)]
    assert {"." + ".".join(p) for p in ATOMIC if p[-1] != "item"} == set(ATOMIC_MAPS), "each atomic map of the table is checked here"


def _maps(depth: int) -> st.SearchStrategy:
    value = _SCALARS if depth == 0 else st.one_of(_SCALARS, _maps(depth - 1))
    return st.dictionaries(st.sampled_from(_NAMES), value, min_size=1, max_size=3)


@st.composite
def _desired_and_live(draw: st.DrawFn, desired: dict, top: bool = False) -> dict:
    """A live object from a desired one: each field kept, changed, dropped or replaced by a scalar,
    and fields of others added beside them (the object's metadata stays a map, as every object's is)."""
    live: dict = {}
    for k, v in desired.items():
        move = "keep" if top and k == "metadata" else draw(st.sampled_from(("keep", "keep", "change", "drop")))
        if move == "keep":
            live[k] = draw(_desired_and_live(v)) if isinstance(v, dict) else v
        elif move == "change":
            live[k] = draw(st.one_of(_SCALARS, _maps(0)))
    for k, v in draw(st.dictionaries(st.sampled_from(("y", "z", "status")), _SCALARS, max_size=2)).items():
        live.setdefault(k, v)
    return live


def _lookup(obj: object, path: tuple[str, ...]) -> tuple[bool, object]:
    for step in path:
        if not isinstance(obj, dict) or step not in obj:
            return False, None
        obj = obj[step]
    return True, obj


def _differences(desired: dict, live: dict) -> set[tuple[str, ...]]:
    """The oracle, from the definition: each leaf the desired object sets, read at the same path of the
    live one; the drift is named at the shallowest step where the live object stops being a map
    (or has nothing), else at the leaf when the values differ. Never the object's own apiVersion,
    kind, metadata.name or metadata.namespace."""

    def leaves(obj: dict, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
        return [leaf for k, v in obj.items() for leaf in (leaves(v, path + (k,)) if isinstance(v, dict) else [(path + (k,), v)])]

    found = set()
    for path, value in leaves(desired):
        if path[:1] in (("apiVersion",), ("kind",)) or path[:2] in (("metadata", "name"), ("metadata", "namespace")):
            continue
        for n in range(1, len(path) + 1):
            present, live_value = _lookup(live, path[:n])
            if n < len(path) and not (present and isinstance(live_value, dict)):
                found.add(path[:n])
                break
            if n == len(path) and (not present or live_value != value or type(live_value) is not type(value)):
                found.add(path)
    return found


@settings(max_examples=100, deadline=None)
@given(st.fixed_dictionaries({"apiVersion": st.just("apps/v1"), "kind": st.just("Deployment"), "metadata": _maps(1), "spec": _maps(2)})
       .flatmap(lambda d: st.tuples(st.just(d), _desired_and_live(d, top=True))))
def test_drift_is_every_field_we_set_that_the_live_object_lacks_or_differs_on_and_nothing_else(pair: tuple) -> None:
    """Server-side apply semantics: a field only the desired object has is drift, a field only the live
    object has (another manager's) is not, a map replaced by a scalar is one drift, and a field called
    ``name`` or ``kind`` is compared like any other except the object's own identity."""
    desired, live = pair
    drifts = compare(desired, live, ListRules({}, frozenset(), frozenset()))
    assert {tuple(v for _, v in d.path) for d in drifts} == _differences(desired, live)
    assert len(drifts) == len({d.path for d in drifts}), "each field once"


# ---- property: who owns a path, for several managers whose trees overlap
_STEPS = (("f", "spec"), ("f", "template"), ("f", "ports"), ("f", "name"),
          ("k", (("containerPort", 80), ("protocol", "TCP"))), ("k", (("protocol", "TCP"), ("containerPort", 80))),
          ("k", (("containerPort", 81), ("protocol", "TCP"))))
_PATHS = st.lists(st.sampled_from(_STEPS), min_size=1, max_size=4).map(tuple)


def _same_step(a: tuple, b: tuple) -> bool:
    """A keyed item is one item whatever the order its key fields are listed in."""
    return a[0] == b[0] and (a[1] == b[1] if a[0] == "f" else dict(a[1]) == dict(b[1]))


def _fields_v1(paths: list[tuple]) -> dict:
    """fieldsV1 as the API server writes it (Kubernetes docs, Server-Side Apply): ``f:<name>`` and
    ``k:<the item's key as JSON, keys sorted>``, an empty object at each owned leaf."""
    tree: dict = {}
    for path in paths:
        node = tree
        for kind, value in path:
            node = node.setdefault(f"f:{value}" if kind == "f" else "k:" + json.dumps(dict(sorted(value)), separators=(",", ":")), {})
    return tree


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(("kubectl", "kubectl-edit", "hpa")), st.sampled_from(("", "scale")),
                          st.lists(_PATHS, max_size=3)), max_size=4), _PATHS)
def test_a_path_is_owned_by_every_manager_whose_fields_reach_it_or_an_atomic_parent(entries: list, path: tuple) -> None:
    """A manager owns a path when its fieldsV1 reach it, or reach one of its ancestors as a leaf (a value
    owned whole); every such manager is named, in managedFields order, each with its subresource."""
    managed = [{"manager": m, **({"subresource": sub} if sub else {}), "fieldsV1": _fields_v1(paths)} for m, sub, paths in entries]

    def owns(paths: list[tuple]) -> bool:
        leaves = [p for p in paths if not any(len(q) > len(p) and all(map(_same_step, p, q[:len(p)])) for q in paths)]
        return any(all(map(_same_step, path[:len(p)], p)) and len(p) <= len(path) for p in leaves) or any(
            len(p) >= len(path) and all(map(_same_step, path, p[:len(path)])) for p in paths)

    expected = tuple(f"{m} ({sub})" if sub else m for m, sub, paths in entries if owns(paths))
    assert owners_of(managed, path) == expected
