"""drift.py and managedfields.py, as pure functions: which fields differ, how they are named, who
set them, and the JSON patch that removes unwanted list items."""

from __future__ import annotations

from memcached_gitops.reconciler.decisions.drift import Drift, compare, removal_patch
from memcached_gitops.reconciler.decisions.managedfields import describe_manager, owners_of

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
