"""Random Memcached CR *texts*, written the ways people write YAML, for differential testing.

The texts are built from a small YAML tree (``Scalar``, ``Map``, ``Seq``, ``Alias``) rendered in
block or flow style, so one strategy covers what kubectl's reader (go-yaml v2 through
sigs.k8s.io/yaml) has to decide: YAML 1.1 booleans, nulls and empty values, octal/hex/binary
integers, floats where integers are declared, huge numbers, quoted numbers, explicit tags,
duplicate keys, anchors, aliases and merge keys, flow style, several documents. The values aim at
the rules the API server applies to a Memcached: the CRD schema (types, int32 bounds, minimum and
maximum, defaults, nulls, unknown fields at every level), ObjectMeta (name, generateName,
namespace, labels, annotations, finalizers, ownerReferences and the server-set fields),
``status`` under the status subresource, apiVersion and kind.

``tests/real_cluster/test_validator_real_apiserver.py`` and ``bench/validator_differential.py`` feed these
texts to a real kube-apiserver and to the validator and compare the verdicts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from hypothesis import strategies as st

#: Namespaces a generated CR may name that are valid DNS-1123 labels; the oracle creates them, so a
#: verdict never depends on whether a namespace happens to exist. "yes" is YAML 1.1's true when plain
#: (a type error), but a valid name when quoted or in JSON, so it must exist too (seed 35 drew it).
NAMESPACES = ("default", "kube-public", "team-a", "a" * 63, "yes")


@dataclass
class Scalar:
    text: str  # YAML source text, as written: 'x', "2", !!int 3, 0x1F, ~ ...
    anchor: str | None = None


@dataclass
class Map:
    items: list[tuple[str, Node]] = field(default_factory=list)
    flow: bool = False
    anchor: str | None = None
    tag: str | None = None  # written before the anchor: !!map, !custom ... (go-yaml ignores a collection's tag)


@dataclass
class Seq:
    items: list[Node] = field(default_factory=list)
    flow: bool = False
    anchor: str | None = None
    tag: str | None = None


@dataclass
class Alias:
    name: str


Node = Scalar | Map | Seq | Alias


def _anchor(node: Node) -> str:
    """What precedes a node's content: its tag, then its anchor, each followed by a space."""
    name, tag = getattr(node, "anchor", None), getattr(node, "tag", None)
    return (f"{tag} " if tag else "") + (f"&{name} " if name else "")


def _flow(node: Node) -> str:
    if isinstance(node, Alias):
        return f"*{node.name}"
    if isinstance(node, Scalar):
        return _anchor(node) + node.text
    if isinstance(node, Seq):
        return _anchor(node) + "[" + ", ".join(_flow(i) for i in node.items) + "]"
    return _anchor(node) + "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in node.items) + "}"


def _block(node: Node, indent: int) -> list[str]:
    """Lines of ``node`` as the value of a block map entry or sequence item at ``indent``."""
    pad = " " * indent
    if isinstance(node, Map) and not node.flow and node.items:
        lines = [f"{pad}{k}:{_after_key(v, indent)}" for k, v in node.items]
        return [line for entry in lines for line in entry.split("\n")]
    if isinstance(node, Seq) and not node.flow and node.items:
        out = []
        for item in node.items:
            if isinstance(item, Map) and not item.flow and item.items and not item.anchor and not item.tag:
                inner = _block(item, indent + 2)
                out.append(f"{pad}- {inner[0].lstrip()}")
                out += inner[1:]
            else:
                out.append(f"{pad}-{_after_key(item, indent)}")
        return out
    return [pad + _flow(node)]


def _after_key(node: Node, indent: int) -> str:
    """What follows ``key:`` (or ``-``): an inline scalar/flow value, or an indented block."""
    if isinstance(node, (Map, Seq)) and not node.flow and node.items:
        head = f" {_anchor(node).strip()}" if node.anchor or node.tag else ""
        return head + "\n" + "\n".join(_block(node, indent + 2))
    text = _flow(node)
    return f" {text}" if text else ""


def render_document(root: Map) -> str:
    if root.flow:
        return _flow(root) + "\n"
    head = _anchor(root).strip()  # a tagged block root: the tag on a line of its own
    return (head + "\n" if head else "") + "\n".join(_block(root, 0)) + "\n"


# ---- scalars


def _quoted(text: str) -> st.SearchStrategy[str]:
    return st.sampled_from([json.dumps(text), "'" + text.replace("'", "''") + "'"])


INTEGER_TEXTS = (
    "1", "2", "3", "0", "-1", "4", "80", "11211", "65535", "65536", "2147483647", "2147483648", "-2147483648",
    "-2147483649", "4294967296", "9223372036854775807", "9223372036854775808", "18446744073709551615",
    "18446744073709551616", "99999999999999999999999999", "-9223372036854775808", "-9223372036854775809",
    "1.0", "2.0", "3.0", "1e2", "1E2", "1e0", "2e0", "1.5", "2.5", "0.5", "3.0000000000000001", "1e400", "-0", "0.0",
    "-0.0", ".5", "2.", "1e-1", "1.e1", "+1", "+2", "0x3", "0X2", "0x1F", "0o3", "0O2", "03", "02", "010", "08", "09",
    "0b11", "0B10", "1_0", "1__1", "_1", "1_", "0x_3", "11_211", ".inf", "-.inf", ".nan", "1e3", "1e9", "1e10",
    "0x7fffffff", "0x80000000", "0xffffffffffffffff", "0x10000000000000000", "6.5535e4", "65535.0", "65535.5",
    "yes", "no", "on", "off", "y", "n", "Y", "N", "true", "false", "True", "FALSE", "YES", "On",
    "~", "null", "Null", "NULL", "", "abc", "1 2", "1:2", "3 # three", "1,0", "1.2.3", "0x", "2024-01-01",
    "12:30", "1:20:30",
)


@st.composite
def integer_value(draw: st.DrawFn) -> Node:
    """What people put where an integer is declared: right, wrong, and right in a surprising form."""
    choice = draw(st.integers(0, 16))
    if choice >= 10:
        text = draw(st.sampled_from(["1", "2", "3", "80", "11211", "65535"]))
    elif choice <= 4:
        text = draw(st.sampled_from(INTEGER_TEXTS))
    elif choice == 5:
        n = draw(st.integers(-(2**70), 2**70) | st.integers(-5, 70000))
        fmt = draw(st.sampled_from(["{}", "{:#x}", "0{:o}", "{:#o}", "{:#b}", "{}.0", "{}e0"]))
        text = fmt.format(n) if n >= 0 or fmt in ("{}", "{}.0", "{}e0") else "-" + fmt.format(-n)
    elif choice == 6:
        text = draw(_quoted(draw(st.sampled_from(["1", "2", "3", "0x3", "11211", "yes", "", "1.0"]))))
    elif choice == 7:
        tag = draw(st.sampled_from(["!!int", "!!str", "!!float", "!!bool", "!!null", "!!binary", "!!timestamp", "!foo", "!"]))
        value = draw(st.sampled_from(["1", "2", "3", "0x3", "02", "1.0", "1.5", "yes", "true", "~", '"2"', "'3'", "abc", ""]))
        text = f"{tag} {value}".rstrip()
    elif choice == 8:
        text = str(draw(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e20, max_value=1e20)))
    else:
        return draw(st.sampled_from([Seq([Scalar("1")], flow=True), Map([("a", Scalar("1"))], flow=True),
                                     Seq([], flow=True), Map([], flow=True)]))
    return Scalar(text)


_NAME_CHARS = st.sampled_from("abcxyz0129-.")


def _dns_like(max_size: int) -> st.SearchStrategy[str]:
    return st.text(_NAME_CHARS, min_size=1, max_size=max_size)


NAME_TEXTS = (
    "m", "cache", "cache-1", "my.cache", "a" * 62, "a" * 63, "a" * 64, "a" * 253, "a" * 254, "a." * 31 + "a",
    "Cache", "cache_1", "-cache", "cache-", ".cache", "cache.", "ca..che", "a/b", "a b", "é", "123", "1e3", "0x1f",
    "yes", "no", "on", "null", "~", "", "true", "1.5", "007", "a" * 58 + "-",
)


@st.composite
def name_value(draw: st.DrawFn, pool: tuple[str, ...] = NAME_TEXTS) -> Node:
    choice = draw(st.integers(0, 8))
    if choice >= 6:
        text = draw(st.sampled_from(["cache", "m", "cache-1", "my.cache", "a" * 63]))
    elif choice <= 2:
        text = draw(st.sampled_from(pool))
    elif choice == 3:
        text = draw(_dns_like(70))
    elif choice == 4:
        return Scalar(draw(_quoted(draw(st.sampled_from(pool) | _dns_like(70)))))
    else:
        parts = draw(st.lists(st.text("abc0-", min_size=1, max_size=63), min_size=1, max_size=6))
        text = ".".join(parts)
    return Scalar(text)


LABEL_KEYS = (
    "app", "app.kubernetes.io/name", "example.com/tier", "a" * 63, "a" * 64, "x/" + "a" * 63, "x/" + "a" * 64,
    "a" * 253 + "/b", "a" * 254 + "/b", "Example.com/x", "/x", "x/", "a/b/c", "_x", "x_", "x.y", "-x", "A", "1",
    "kubernetes.io/x", "k8s.io/x", "a b", "é", "yes", "on", "1.5", "0x1", "'quoted key'", '"a/b"', "~", "null",
)
LABEL_VALUES = (
    "x", "cache", "", "''", '""', "a" * 63, "a" * 64, "A_b.c-d", "-x", "x-", "a b", "é", "yes", "no", "on", "1", "1.5",
    "'1'", '"yes"', "~", "null", "0x1", "v1.2.3", "a/b", "!!str 1", "!!int 1", "[a]", "{a: b}", "x: y",
)


@st.composite
def string_map(draw: st.DrawFn, keys: tuple[str, ...], values: tuple[str, ...], big: bool = False) -> Node:
    def pick(pool: tuple[str, ...], sane: tuple[str, ...]) -> str:
        return draw(st.sampled_from(sane if draw(st.integers(0, 2)) else pool))

    items = [(pick(keys, ("app", "tier", "example.com/team")), Scalar(pick(values, ("cache", "a", "''"))))
             for _ in range(draw(st.integers(0, 3)))]
    if big and draw(st.integers(0, 19)) == 0:
        size = draw(st.sampled_from([256 * 1024 - 10, 256 * 1024, 256 * 1024 + 10]))
        items.append(("big", Scalar("x" * size)))
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([Scalar("~"), Scalar(""), Scalar("x"), Scalar("1"), Seq([Scalar("a")], flow=True)]))
    return Map(items, flow=draw(st.booleans()))


FINALIZERS = (
    "example.com/cleanup", "cleanup", "orphan", "foregroundDeletion", "kubernetes", "kubernetes.io/x", "a/b/c",
    "Bad Name", "-x", "x" * 64, "e.com/" + "x" * 63, "e.com/" + "x" * 64, "1", "yes", "~", "''", "[]",
)


@st.composite
def finalizers(draw: st.DrawFn) -> Node:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([Scalar("x"), Scalar("~"), Map([("a", Scalar("b"))], flow=True)]))
    items = [Scalar(t) for t in draw(st.lists(st.sampled_from(FINALIZERS), max_size=3))]
    return Seq(items, flow=draw(st.booleans()))


UID = "0b8f6f3e-52a3-4f0a-9b7c-2f0d7c1a9e11"


@st.composite
def owner_reference(draw: st.DrawFn) -> Node:
    fields = {
        "apiVersion": draw(st.sampled_from(["apps/v1", "v1", "cache.example.com/v1alpha1", "", "a/b/c", "/v1", "apps/", "1"])),
        "kind": draw(st.sampled_from(["Deployment", "Event", "ConfigMap", "", "x"])),
        "name": draw(st.sampled_from(["owner", "", "Bad_Name", "1"])),
        "uid": draw(st.sampled_from([UID, "", "not-a-uid", "1"])),
        "controller": draw(st.sampled_from(["true", "false", "yes", "'true'", "~"])),
        "blockOwnerDeletion": draw(st.sampled_from(["true", "false", "1"])),
        "bogus": "1",
    }
    keep = draw(st.lists(st.sampled_from(list(fields)), unique=True, min_size=3, max_size=7))
    return Map([(k, Scalar(fields[k])) for k in fields if k in keep and (k != "bogus" or draw(st.booleans()))])


SERVER_SET_FIELDS = {
    "uid": ("x", UID, "1", "~"),
    "resourceVersion": ("'1'", "'abc'", "1", "''", "~"),
    "generation": ("1", "0", "-1", "'1'", "~"),
    "creationTimestamp": ("~", "2024-01-01T00:00:00Z", "'2024-01-01T00:00:00Z'", "x", "1", "2024-01-01"),
    "deletionTimestamp": ("~", "2024-01-01T00:00:00Z", "x"),
    "deletionGracePeriodSeconds": ("0", "30", "~", "'30'"),
    "selfLink": ("/apis/x", "~", "1"),
    "managedFields": ("[]", "~", "[{}]", "[{manager: x, operation: Apply}]", "x"),
    "labelz": ("{a: b}",),
    "clusterName": ("x",),
}


@st.composite
def metadata(draw: st.DrawFn) -> Node:
    items: list[tuple[str, Node]] = []
    form = draw(st.sampled_from(["name"] * 8 + ["generateName", "both", "none"]))
    if form in ("name", "both"):
        items.append(("name", draw(name_value())))
    if form in ("generateName", "both"):
        items.append(("generateName", draw(name_value(NAME_TEXTS + ("cache-", "a" * 62 + "-", "a" * 63 + "-", "Cache-", "x.")))))
    if draw(st.integers(0, 2)) == 0:
        pool = NAMESPACES * 3 + ("Prod", "a.b", "a" * 64, "-x", "''", "1", "~", "yes")
        items.append(("namespace", Scalar(draw(st.sampled_from(pool)))))
    if draw(st.integers(0, 2)) == 0:
        items.append(("labels", draw(string_map(LABEL_KEYS, LABEL_VALUES))))
    if draw(st.integers(0, 3)) == 0:
        items.append(("annotations", draw(string_map(LABEL_KEYS + ("Upper.Case/Key",), LABEL_VALUES + ("'any: text'",), big=True))))
    if draw(st.integers(0, 5)) == 0:
        items.append(("finalizers", draw(finalizers())))
    if draw(st.integers(0, 6)) == 0:
        refs = draw(st.lists(owner_reference(), max_size=3))
        items.append(("ownerReferences", Seq(refs) if refs else Seq([], flow=True)))
    if draw(st.integers(0, 6)) == 0:
        key = draw(st.sampled_from(sorted(SERVER_SET_FIELDS)))
        items.append((key, Scalar(draw(st.sampled_from(SERVER_SET_FIELDS[key])))))
    draw(st.randoms()).shuffle(items)
    return Map(items, flow=draw(st.integers(0, 5)) == 0)


UNKNOWN_KEYS = ("replicas", "Size", "size ", "image", "extra", "'size'", "spec", "status", "1", "yes", "containerport")


@st.composite
def spec(draw: st.DrawFn) -> Node:
    if draw(st.integers(0, 24)) == 0:
        return draw(st.sampled_from([Scalar("~"), Scalar(""), Scalar("1"), Scalar("x"), Seq([Scalar("1")], flow=True),
                                     Map([], flow=True)]))
    items: list[tuple[str, Node]] = []
    for key in ("size", "containerPort"):
        if draw(st.integers(0, 3)):
            items.append((key, draw(integer_value())))
    if draw(st.integers(0, 9)) == 0:
        items.append((draw(st.sampled_from(UNKNOWN_KEYS)), draw(integer_value())))
    if items and draw(st.integers(0, 7)) == 0:  # a duplicate key: the last wins
        key, _ = draw(st.sampled_from(items))
        items.append((key, draw(integer_value())))
    draw(st.randoms()).shuffle(items)
    return Map(items, flow=draw(st.integers(0, 4)) == 0)


CONDITION = {
    "type": ("Available", "available", "example.com/Ready", "'a b'", "''"),
    "status": ("'True'", "'False'", "Unknown", "True", "yes", "maybe"),
    "reason": ("Ready", "''", "a b", "R" * 1025),
    "message": ("ok", "''", "1"),
    "lastTransitionTime": ("2024-01-01T00:00:00Z", "'2024-01-01T00:00:00Z'", "x", "1"),
    "observedGeneration": ("1", "-1", "'1'"),
    "bogus": ("1",),
}


@st.composite
def status(draw: st.DrawFn) -> Node:
    items: list[tuple[str, Node]] = []
    if draw(st.booleans()):
        keys = draw(st.lists(st.sampled_from(sorted(CONDITION)), unique=True, min_size=0, max_size=7))
        cond = Map([(k, Scalar(draw(st.sampled_from(CONDITION[k])))) for k in keys])
        items.append(("conditions", Seq([cond]) if keys else Seq([], flow=True)))
    if draw(st.booleans()):
        items.append(("nodes", Seq([Scalar(draw(st.sampled_from(["pod-1", "1", "~", "yes"])))], flow=True)))
    if draw(st.booleans()):
        items.append(("observedGeneration", draw(integer_value())))
    if draw(st.integers(0, 3)) == 0:
        items.append(("bogus", Scalar("1")))
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([Scalar("~"), Scalar("x"), Seq([], flow=True)]))
    return Map(items, flow=draw(st.booleans()))


API_VERSIONS = (
    "cache.example.com/v1alpha1", "cache.example.com/v1alpha1", "cache.example.com/v1alpha1", "cache.example.com/v1alpha1",
    "cache.example.com/v1", "cache.example.com/v1beta1", "v1alpha1", "cache.example.com", "Cache.example.com/v1alpha1",
    "cache.example.com/V1alpha1", "cache.example.com/v1alpha1/x", "'cache.example.com/v1alpha1'", "~", "''",
)
KINDS = ("Memcached",) * 6 + ("memcached", "Memcacheds", "memcacheds", "MEMCACHED", "MemCached", "'Memcached'", "~", "''")


@st.composite
def document(draw: st.DrawFn) -> Map:
    """One CR as a YAML mapping (before rendering)."""
    items: list[tuple[str, Node]] = []
    if draw(st.integers(0, 29)):
        api = draw(st.sampled_from(API_VERSIONS)) if draw(st.integers(0, 5)) == 0 else "cache.example.com/v1alpha1"
        items.append(("apiVersion", Scalar(api)))
    if draw(st.integers(0, 29)):
        items.append(("kind", Scalar(draw(st.sampled_from(KINDS)) if draw(st.integers(0, 5)) == 0 else "Memcached")))
    if draw(st.integers(0, 19)):
        items.append(("metadata", draw(metadata())))
    if draw(st.integers(0, 5)):
        items.append(("spec", draw(spec())))
    if draw(st.integers(0, 5)) == 0:
        items.append(("status", draw(status())))
    if draw(st.integers(0, 14)) == 0:
        items.append((draw(st.sampled_from(("extra", "Spec", "specs", "metadata ", "items"))), Scalar("1")))
    if draw(st.booleans()):
        draw(st.randoms()).shuffle(items)
    doc = Map(items, flow=draw(st.integers(0, 9)) == 0)
    _yaml_tricks(draw, doc)
    return doc


FAULTS = ("none", "size", "containerPort", "name", "generateName", "namespace", "labels", "annotations", "finalizers",
          "ownerReferences", "server-set", "status", "spec", "apiVersion", "kind", "unknown", "resources", "sizing",
          "scheduling")
#: Quantity texts for spec.resources: canonical, kept, rounded, integers, beyond int64, not quantities.
QUANTITIES = ("1Gi", "512Mi", "1.5Gi", "500m", "0.5", "2", "1e3", "98.110k", "4000n", "1 Gi", "abc", "-1", "1.5", "0x10",
              "9223372036854775808", "1073741824", "''", "~", "[1]", "{}", "true", "'2'", "+1", ".5", "1E3", "1Ki",
              # around the CRD's rules: 48Mi the least memory, requests against limits, negatives, over 64 characters
              "47Mi", "48Mi", "50331648", "64Mi", "0.05Gi", "-100m", "'1" + "0" * 64 + "'", "10", "1001m")
RESOURCE_KEYS = ("memory", "cpu", "ephemeral-storage", "nvidia.com/gpu", "x y", "gpu", "hugepages-2Mi", "kubernetes.io/x")
#: Placement values (core/v1 types embedded in the CRD): valid, empty, wrongly typed, unknown fields.
SCHEDULING = {
    "nodeSelector": ("{disk: ssd}", "{}", "{disk: 1}", "{a: ~}", "[a]", "~", "{'kubernetes.io/os': linux, zone: 'yes'}"),
    "tolerations": ("[{key: a, operator: Exists, effect: NoSchedule}]", "[]", "[{}]", "[~]", "[{key: a, tolerationSeconds: 10}]",
                    "[{tolerationSeconds: '10'}]", "[{tolerationSeconds: 9223372036854775808}]", "[{key: a, foo: b}]",
                    "{key: a}", "[{operator: Equal, value: 1}]"),
    "affinity": ("{}", "{nodeAffinity: {}}", "{nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {}}}",
                 "{nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: "
                 "[{key: a, operator: In, values: [b]}]}]}}}",
                 "{nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a}]}]}}}",
                 "{podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 100, podAffinityTerm: "
                 "{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {a: b}}}}]}}",
                 "{podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 3000000000, podAffinityTerm: "
                 "{topologyKey: x}}]}}",
                 "{podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {}}]}}",
                 "{podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: x, matchLabelKeys: [a, a]}]}}",
                 "{nodeAffinity: {other: 1}}", "[]", "~"),
    "priorityClassName": ("high", "''", "5", "~", "[a]", "system-cluster-critical"),
}


@st.composite
def near_valid_document(draw: st.DrawFn) -> Map:
    """A valid CR with at most one fault, so that most are accepted and each rejection has one cause."""
    meta = Map([("name", Scalar(draw(st.sampled_from(["cache", "m", "cache-1", "my.cache", "a" * 63]))))])
    spec_items = [(k, Scalar(draw(st.sampled_from(v)))) for k, v in (("size", ["1", "2", "3"]), ("containerPort", ["11211", "80"]))
                  if draw(st.integers(0, 3))]
    spec_node = Map(spec_items, flow=draw(st.integers(0, 4)) == 0)
    items: list[tuple[str, Node]] = [("apiVersion", Scalar("cache.example.com/v1alpha1")), ("kind", Scalar("Memcached")),
                                     ("metadata", meta), ("spec", spec_node)]
    fault = draw(st.sampled_from(FAULTS))
    if fault in ("size", "containerPort"):
        spec_node.items.append((fault, draw(integer_value())))
    elif fault == "name":
        meta.items = [("name", draw(name_value()))]
    elif fault == "generateName":
        meta.items = [("generateName", draw(name_value(NAME_TEXTS + ("cache-", "a" * 62 + "-", "x."))))]
    elif fault == "namespace":
        meta.items.append(("namespace", Scalar(draw(st.sampled_from(NAMESPACES + ("Prod", "a.b", "a" * 64, "''", "~", "1"))))))
    elif fault in ("labels", "annotations"):
        meta.items.append((fault, draw(string_map(LABEL_KEYS, LABEL_VALUES, big=fault == "annotations"))))
    elif fault == "finalizers":
        meta.items.append(("finalizers", draw(finalizers())))
    elif fault == "ownerReferences":
        meta.items.append(("ownerReferences", Seq(draw(st.lists(owner_reference(), min_size=1, max_size=2)))))
    elif fault == "server-set":
        key = draw(st.sampled_from(sorted(SERVER_SET_FIELDS)))
        meta.items.append((key, Scalar(draw(st.sampled_from(SERVER_SET_FIELDS[key])))))
    elif fault == "status":
        items.append(("status", draw(status())))
    elif fault == "spec":
        items[3] = ("spec", draw(spec()))
    elif fault == "apiVersion":
        items[0] = ("apiVersion", Scalar(draw(st.sampled_from(API_VERSIONS))))
    elif fault == "kind":
        items[1] = ("kind", Scalar(draw(st.sampled_from(KINDS))))
    elif fault == "resources":
        sections = [(section, Map([(draw(st.sampled_from(RESOURCE_KEYS)), Scalar(draw(st.sampled_from(QUANTITIES))))
                                   for _ in range(draw(st.integers(0, 2)))], flow=draw(st.booleans())))
                    for section in draw(st.lists(st.sampled_from(["limits", "requests", "claims", "other"]), max_size=2, unique=True))]
        spec_node.items.append(("resources", Map(sections) if draw(st.integers(0, 5)) else Scalar(draw(st.sampled_from(["~", "1", "[]"])))))
    elif fault == "sizing":
        key = draw(st.sampled_from(["maxConnections", "threads"]))
        values = ["0", "1", "4", "13", "14", "25", "43", "44", "64", "65", "65536", "65537", "1.5", "'4'", "~", "-1"]
        spec_node.items.append((key, Scalar(draw(st.sampled_from(values)))))
    elif fault == "scheduling":
        for key in draw(st.lists(st.sampled_from(sorted(SCHEDULING)), min_size=1, max_size=4, unique=True)):
            spec_node.items.append((key, Scalar(draw(st.sampled_from(SCHEDULING[key])))))
    elif fault == "unknown":
        where = draw(st.sampled_from([items, meta.items, spec_node.items]))
        where.append((draw(st.sampled_from(UNKNOWN_KEYS)), Scalar("1")))
    doc = Map(items, flow=draw(st.integers(0, 9)) == 0)
    _yaml_tricks(draw, doc)
    return doc


def _find(doc: Map, *path: str) -> Node | None:
    node: Node | None = doc
    for key in path:
        if not isinstance(node, Map):
            return None
        node = next((v for k, v in reversed(node.items) if k == key), None)
    return node


def _yaml_tricks(draw: st.DrawFn, doc: Map) -> None:
    """Anchors, aliases and merge keys, where people use them."""
    trick = draw(st.integers(0, 9))
    spec_node, meta = _find(doc, "spec"), _find(doc, "metadata")
    if trick == 0 and isinstance(spec_node, Map) and len(spec_node.items) >= 2:
        # one value anchored and reused: containerPort: *v
        key, value = spec_node.items[0]
        if isinstance(value, Scalar) and not value.text.startswith("!"):
            value.anchor = "v"
            spec_node.items.append((spec_node.items[-1][0], Alias("v")))
    elif trick == 1 and isinstance(spec_node, Map) and isinstance(meta, Map):
        # defaults shared through a merge key from an anchored map elsewhere in the document
        base = Map([("size", draw(integer_value()))], anchor="base")
        meta.items.append(("annotations", Map([("a", Scalar("b"))])))
        spec_node.items.insert(0, ("<<", Alias("base")))
        doc.items.insert(0, ("x-defaults", base)) if draw(st.booleans()) else meta.items.append(("labels", base))
    elif trick == 2 and isinstance(meta, Map):
        labels = Map([("app", Scalar("cache"))], anchor="l")
        meta.items.append(("labels", labels))
        meta.items.append(("annotations", Alias("l")))


@st.composite
def cr_texts(draw: st.DrawFn) -> str:
    """A YAML (or JSON) stream of one to three documents, as a person might commit it."""
    docs = [draw(near_valid_document() if draw(st.booleans()) else document())
            for _ in range(draw(st.sampled_from([1] * 8 + [2, 3])))]
    texts = []
    for doc in docs:
        if draw(st.integers(0, 14)) == 0:
            texts.append(_as_json(doc))
        else:
            texts.append(render_document(doc))
    head = draw(st.sampled_from(["", "", "", "", "---\n", "--- # a comment\n", "# a comment\n", "%YAML 1.1\n---\n"]))
    return head + "---\n".join(texts) + draw(st.sampled_from(["", "", "...\n", "---\n"]))


def json_value(node: Node) -> object:
    """A node as a JSON value; scalars keep their YAML spelling only where JSON has one."""
    if isinstance(node, Map):
        return {k: json_value(v) for k, v in node.items if not isinstance(v, Alias)}
    if isinstance(node, Seq):
        return [json_value(i) for i in node.items if not isinstance(i, Alias)]
    if isinstance(node, Alias):
        return None
    text = node.text
    try:
        parsed = json.loads(text)
        return parsed if not isinstance(parsed, float) or parsed == parsed else text
    except ValueError:
        return text.strip("'\"")


def _as_json(doc: Map) -> str:
    """The same document as JSON text (kubectl reads it through the same YAML reader)."""
    return json.dumps(json_value(doc)) + "\n"
