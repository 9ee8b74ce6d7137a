"""The validator's case table: each CR, the API server's verdict, and why we believe it.

Each case is what ``kubectl apply --dry-run=server --validate=strict -f FILE`` would answer
against kube-apiserver v1.36 with the CRD installed ("builtin" = schemas/memcached-crd.yaml,
"all" = tests/data/crd-all-keywords.yaml, "tutorial" = the kubebuilder CRD recorded in
fixtures/apiserver-transcripts/00). ``fields`` are the field paths the rejection names.
Sources are cited by short name:

- [yaml]   kubernetes-sigs/yaml goyaml.v2/resolve.go (how kubectl reads YAML) and yaml.go
           convertToJSONableObject (keys to strings, JSON marshalling)
- [prune]  Kubernetes docs, CRD "Field pruning" / "Controlling pruning"; strict field validation
           (KEP-2885: fieldValidation=Strict -> 400 "strict decoding error: unknown field")
- [default] Kubernetes docs, CRD "Defaulting" and "Defaulting and Nullable"
- [openapi] k8s.io/kube-openapi/pkg/validation/validate (type, bounds, enum, pattern, lengths,
           items, required) and apiextensions "Validation" docs
- [format] kubernetes/kubernetes#136091, fixed by #136582 (v1.36): int32/int64 formats enforced
- [meta]   apimachinery/pkg/api/validation/objectmeta.go; apiextensions customresource validator
           uses NameIsDNSSubdomain
- [status] apiextensions strategy.go PrepareForCreate: status dropped when the subresource is on
- [cel]    Kubernetes docs, CRD "Validation rules" (x-kubernetes-validations)
- [tx NN]  the recorded kube-apiserver v1.36.2 exchange in fixtures/apiserver-transcripts/NN-*.json
"""

from __future__ import annotations

from typing import NamedTuple


class Case(NamedTuple):
    id: str
    text: str
    accept: bool
    fields: tuple[str, ...]
    why: str
    crd: str = "builtin"
    stored_spec: dict | None = None  # for accepted cases: spec after pruning and defaulting


def cr(spec: str = "size: 1", name: str = "m", meta: str = "", top: str = "", kind: str = "Memcached",
       api: str = "cache.example.com/v1alpha1") -> str:
    """A CR as YAML text; ``spec`` and ``meta`` are YAML lines indented under their parent."""
    spec_block = "spec:\n" + "".join(f"  {line}\n" for line in spec.splitlines()) if spec else ""
    meta_block = "".join(f"  {line}\n" for line in meta.splitlines())
    name_line = f"  name: {name}\n" if name else ""
    return f"apiVersion: {api}\nkind: {kind}\nmetadata:\n{name_line}{meta_block}{spec_block}{top}"


CASES: list[Case] = [
    # --- apiVersion / kind / served versions
    Case("sample", cr("size: 1\ncontainerPort: 11211"), True, (), "the tutorial sample [tx 09]",
         stored_spec={"size": 1, "containerPort": 11211}),
    Case("version-not-served", cr(api="cache.example.com/v1beta1"), False, ("apiVersion",),
         "v1beta1 has served: false: kubectl finds no REST mapping ('no matches for kind')", crd="all"),
    Case("version-unknown", cr(api="cache.example.com/v2"), False, ("apiVersion",), "no such version: no REST mapping"),
    Case("apiversion-without-group", cr(api="v1alpha1"), False, ("apiVersion",), "not this group: kubectl finds no mapping"),
    # --- YAML as kubectl reads it
    Case("yaml-hex-int", cr("size: 0x3"), True, (), "[yaml] ParseInt base 0: 0x3 = 3", stored_spec={"size": 3, "containerPort": 11211}),
    Case("yaml-octal-int", cr("size: 02"), True, (), "[yaml] leading 0 is octal: 02 = 2", stored_spec={"size": 2, "containerPort": 11211}),
    Case("yaml-0o-int", cr("size: 0o3"), True, (), "[yaml] Go accepts the 0o prefix", stored_spec={"size": 3, "containerPort": 11211}),
    Case("yaml-binary-int", cr("size: 0b11"), True, (), "[yaml] 0b11 = 3", stored_spec={"size": 3, "containerPort": 11211}),
    Case("yaml-underscore-int", cr("size: 1\ncontainerPort: 11_211"), True, (), "[yaml] underscores removed before ParseInt",
         stored_spec={"size": 1, "containerPort": 11211}),
    Case("yaml-octal-too-big", cr("size: 017"), False, ("spec.size",), "[yaml] 017 = 15 > maximum 3 [openapi]"),
    Case("yaml-float-integral", cr("size: 2.0"), True, (), "[yaml] json.Marshal writes 2.0 as 2; the server reads int64",
         stored_spec={"size": 2, "containerPort": 11211}),
    Case("yaml-exponent", cr("size: 1\ncontainerPort: 1e3"), True, (), "[yaml] 1e3 is the float 1000, marshalled as 1000",
         stored_spec={"size": 1, "containerPort": 1000}),
    Case("yaml-08-is-float-8", cr("size: 1\ncontainerPort: 08"), True, (), "[yaml] 08 fails ParseInt, matches the float pattern: 8",
         stored_spec={"size": 1, "containerPort": 8}),
    Case("float-with-fraction", cr("size: 1.5"), False, ("spec.size",), "[openapi] 1.5 is a number, not an integer"),
    Case("yes-is-bool", cr("size: yes"), False, ("spec.size",), "[yaml] plain yes is the boolean true: must be of type integer"),
    Case("on-is-bool-in-label", cr(meta="labels:\n  enabled: on"), False, ("metadata.labels.enabled",),
         "[yaml] on is true; [meta] label values must be strings"),
    Case("n-is-bool", cr(meta="labels:\n  x: n"), False, ("metadata.labels.x",), "[yaml] plain n is the boolean false"),
    Case("quoted-yes-is-string", cr(meta="labels:\n  enabled: 'yes'"), True, (), "[yaml] quoted scalars are strings",
         stored_spec={"size": 1, "containerPort": 11211}),
    Case("quoted-number-is-string", cr('size: "2"'), False, ("spec.size",), "[tx 12] containerPort \"string\" must be of type integer"),
    Case("duplicate-key-last-wins", cr("size: 9\nsize: 2"), True, (), "[yaml] go-yaml v2 Unmarshal keeps the last duplicate",
         stored_spec={"size": 2, "containerPort": 11211}),
    Case("merge-key", cr("<<: {size: 2}\ncontainerPort: 11211"), True, (),
         "[yaml] << merge keys are resolved by go-yaml", stored_spec={"size": 2, "containerPort": 11211}),
    Case("tilde-is-null", cr("size: ~"), True, (), "[yaml] ~ is null; [default] a null non-nullable field is defaulted",
         stored_spec={"size": 1, "containerPort": 11211}),
    # --- integer formats and bounds
    Case("size-max", cr("size: 3"), True, (), "[openapi] maximum 3 is inclusive", stored_spec={"size": 3, "containerPort": 11211}),
    Case("size-too-big", cr("size: 4"), False, ("spec.size",), "[tx 12] 'should be less than or equal to 3'"),
    Case("size-zero", cr("size: 0"), False, ("spec.size",), "[tx 12] minimum 1"),
    Case("size-negative", cr("size: -1"), False, ("spec.size",), "[openapi] minimum 1"),
    Case("port-zero", cr("containerPort: 0"), False, ("spec.containerPort",), "builtin CRD: containerPort minimum 1"),
    Case("port-too-big", cr("containerPort: 65536"), False, ("spec.containerPort",), "builtin CRD: containerPort maximum 65535"),
    Case("port-max", cr("containerPort: 65535"), True, (), "inclusive maximum", stored_spec={"size": 1, "containerPort": 65535}),
    Case("int32-overflow-tutorial", cr("size: 1\ncontainerPort: 2147483648"), False, ("spec.containerPort",),
         "[format] 2^31 is out of int32 (the tutorial CRD has no maximum)", crd="tutorial"),
    Case("int32-max-tutorial", cr("size: 1\ncontainerPort: 2147483647"), True, (), "[format] 2^31-1 fits int32", crd="tutorial",
         stored_spec={"size": 1, "containerPort": 2147483647}),
    Case("int64-max", cr("counter: 9223372036854775807"), True, (), "[format] int64 max fits", crd="all",
         stored_spec={"size": 1, "containerPort": 11211, "threads": 4, "counter": 9223372036854775807}),
    Case("int64-overflow", cr("counter: 9223372036854775808"), False, ("spec.counter",),
         "[yaml] beyond int64 JSON is read back as a float: must be of type integer", crd="all"),
    Case("exclusive-minimum", cr("ratio: 0"), False, ("spec.ratio",), "[openapi] exclusiveMinimum: 0 itself is rejected", crd="all"),
    Case("exclusive-maximum", cr("ratio: 1"), False, ("spec.ratio",), "[openapi] exclusiveMaximum: 1 itself is rejected", crd="all"),
    Case("exclusive-inside", cr("ratio: 0.5"), True, (), "[openapi] strictly between the bounds", crd="all",
         stored_spec={"size": 1, "containerPort": 11211, "threads": 4, "ratio": 0.5}),
    Case("number-accepts-integer", cr("ratio: 1e-1"), True, (), "[openapi] type number admits any JSON number", crd="all",
         stored_spec={"size": 1, "containerPort": 11211, "threads": 4, "ratio": 0.1}),
    Case("multiple-of", cr("multiple: 7"), False, ("spec.multiple",), "[openapi] multipleOf 5", crd="all"),
    Case("team-crd-size-5", cr("size: 5"), True, (), "the team CRD allows size 5 (--crd swaps the rules)", crd="all",
         stored_spec={"size": 5, "containerPort": 11211, "threads": 4}),
    # --- enum, pattern, lengths, items, required, nullable, int-or-string, preserve-unknown
    Case("enum-ok", cr("mode: lru"), True, (), "[openapi] enum member", crd="all",
         stored_spec={"size": 1, "containerPort": 11211, "threads": 4, "mode": "lru"}),
    Case("enum-bad", cr("mode: fifo"), False, ("spec.mode",), "[openapi] Unsupported value", crd="all"),
    Case("pattern-bad", cr("tag: Abc"), False, ("spec.tag",), "[openapi] should match '^[a-z]+$'", crd="all"),
    Case("min-length", cr("tag: a"), False, ("spec.tag",), "[openapi] minLength 2", crd="all"),
    Case("max-length", cr("tag: abcdefghi"), False, ("spec.tag",), "[openapi] maxLength 8", crd="all"),
    Case("max-length-unicode", cr("tag: 'ééééé'"), False, ("spec.tag",), "[openapi] é matches no [a-z]", crd="all"),
    Case("min-items", cr("hosts: []"), False, ("spec.hosts",), "[openapi] minItems 1", crd="all"),
    Case("max-items", cr("hosts: [a, b, c]"), False, ("spec.hosts",), "[openapi] maxItems 2", crd="all"),
    Case("items-type", cr("hosts: [a, 1]"), False, ("spec.hosts[1]",), "[openapi] items must be strings", crd="all"),
    Case("items-length", cr("hosts: [abcdefghijk]"), False, ("spec.hosts[0]",), "[openapi] items maxLength 10", crd="all"),
    Case("null-in-array", cr("hosts: [a, null]"), False, ("spec.hosts[1]",), "[default] nulls are pruned from objects, not arrays",
         crd="all"),
    Case("required-missing", cr("tuning: {}"), False, ("spec.tuning.threads",), "[openapi] Required value", crd="all"),
    Case("required-by-default", cr(""), True, (), "[default] spec defaults to {} and size to 1, so required size is there",
         crd="all", stored_spec={"size": 1, "containerPort": 11211, "threads": 4}),
    Case("nullable-keeps-null", cr("comment: null"), True, (), "[default] nullable: true keeps the null", crd="all",
         stored_spec={"size": 1, "containerPort": 11211, "threads": 4, "comment": None}),
    Case("null-pruned", cr("mode: null"), True, (), "[default] null in a non-nullable field without default is pruned",
         crd="all", stored_spec={"size": 1, "containerPort": 11211, "threads": 4}),
    Case("null-defaulted", cr("threads: null"), True, (), "[default] null in a non-nullable field with a default gets it",
         crd="all", stored_spec={"size": 1, "containerPort": 11211, "threads": 4}),
    Case("int-or-string-int", cr("port: 80"), True, (), "x-kubernetes-int-or-string admits integers", crd="all",
         stored_spec={"size": 1, "containerPort": 11211, "threads": 4, "port": 80}),
    Case("int-or-string-string", cr("port: http"), True, (), "x-kubernetes-int-or-string admits strings", crd="all",
         stored_spec={"size": 1, "containerPort": 11211, "threads": 4, "port": "http"}),
    Case("int-or-string-bool", cr("port: true"), False, ("spec.port",), "neither integer nor string", crd="all"),
    Case("preserve-unknown", cr("extra: {anything: [1, {deep: x}]}"), True, (), "[prune] preserve-unknown-fields keeps it",
         crd="all", stored_spec={"size": 1, "containerPort": 11211, "threads": 4, "extra": {"anything": [1, {"deep": "x"}]}}),
    Case("additional-properties", cr("options: {a: b}"), True, (), "additionalProperties schema: a map", crd="all",
         stored_spec={"size": 1, "containerPort": 11211, "threads": 4, "options": {"a": "b"}}),
    Case("additional-properties-type", cr("options: {a: 1}"), False, ("spec.options.a",), "map values must be strings", crd="all"),
    # --- unknown fields (strict) and status
    Case("unknown-spec-field", cr("size: 1\nreplicas: 2"), False, ("spec.replicas",), "[tx 23] strict decoding error: unknown field"),
    Case("unknown-top-field", cr(top="extra: 1\n"), False, ("extra",), "[prune] unknown at the root"),
    Case("unknown-metadata-field", cr(meta="labelz: {a: b}"), False, ("metadata.labelz",), "[prune] ObjectMeta has no labelz"),
    Case("unknown-status-field", cr(top="status:\n  bogus: 1\n"), False, ("status.bogus",),
         "[prune] unknown fields are found during decoding, before status is dropped"),
    Case("status-ignored", cr(top="status:\n  nodes: [1]\n"), True, (),
         "[status] status is dropped on create; its values are only warned about", stored_spec={"size": 1, "containerPort": 11211}),
    Case("status-not-a-subresource", cr(top="status: {nodes: [1]}\n"), False, ("status.nodes[0]",),
         "[status] without the status subresource, status is stored and validated like spec", crd="tutorial-no-status"),
    # --- metadata
    Case("name-bad", cr(name="Bad_Name"), False, ("metadata.name",), "[tx 12] RFC 1123 subdomain"),
    Case("name-with-dots", cr(name="cache.example"), True, (), "[meta] a subdomain may have dots",
         stored_spec={"size": 1, "containerPort": 11211}),
    Case("name-too-long-builtin", cr(name="a" * 64), False, ("metadata.name",), "builtin CRD: metadata.name maxLength 63"),
    Case("name-64-tutorial", cr(name="a" * 64), True, (), "[meta] 64 is a valid subdomain; the tutorial CRD has no limit",
         crd="tutorial", stored_spec={"size": 1}),
    Case("name-missing", cr(name=""), False, ("metadata.name",), "[meta] name or generateName is required"),
    Case("generate-name", cr(name="", meta="generateName: cache-"), True, (), "[meta] generateName alone is enough to create",
         stored_spec={"size": 1, "containerPort": 11211}),
    Case("name-not-string", cr(name="123"), False, ("metadata.name",), "[yaml] 123 is an integer; a name must be a string"),
    Case("namespace-bad", cr(meta="namespace: Prod"), False, ("metadata.namespace",), "[meta] namespace is a DNS-1123 label"),
    Case("label-key-bad", cr(meta="labels:\n  'bad key': x"), False, ("metadata.labels",), "[meta] label keys are qualified names"),
    Case("label-value-too-long", cr(meta=f"labels:\n  a: {'x' * 64}"), False, ("metadata.labels",),
         "[meta] label values <= 63; ValidateLabels names the map, not the key"),
    Case("label-prefix", cr(meta="labels:\n  example.com/tier: cache"), True, (), "[meta] prefixed keys are fine",
         stored_spec={"size": 1, "containerPort": 11211}),
    Case("annotation-value-free", cr(meta="annotations:\n  note: 'any text: at all!'"), True, (), "[meta] annotation values are free",
         stored_spec={"size": 1, "containerPort": 11211}),
    Case("annotation-not-string", cr(meta="annotations:\n  replicas: 3"), False, ("metadata.annotations.replicas",),
         "[meta] annotations are map[string]string"),
    # --- ObjectMeta as Go decodes it (schemas/metadecode.py): nulls are zero values, types are Go's
    Case("meta-null-label-value", cr(meta="labels: {a: ~, yes: null}"), True, (),
         "[tx 38] a null label value is the empty string (map[string]string)", stored_spec={"size": 1, "containerPort": 11211}),
    Case("meta-null-annotation-value", cr(meta="annotations: {a: ~}"), True, (), "[tx 38] a null annotation value is \"\"",
         stored_spec={"size": 1, "containerPort": 11211}),
    Case("meta-null-name-with-generate-name", cr(name="~", meta="generateName: cache-"), True, (),
         "[tx 38] a null name is no name: generateName applies", stored_spec={"size": 1, "containerPort": 11211}),
    Case("meta-null-maps-and-lists", cr(meta="labels: ~\nannotations: ~\nfinalizers: ~\nownerReferences: ~\nnamespace: ~"), True,
         (), "[tx 38] null ObjectMeta fields are absent", stored_spec={"size": 1, "containerPort": 11211}),
    Case("meta-null-finalizer", cr(meta="finalizers: [a, ~]"), False, ("metadata.finalizers",),
         "[tx 38] a null finalizer is \"\": name part must be non-empty"),
    Case("meta-null-owner-reference", cr(meta="ownerReferences: [~]"), False,
         ("metadata.ownerReferences.apiVersion", "metadata.ownerReferences.kind", "metadata.ownerReferences.name",
          "metadata.ownerReferences.uid"), "[tx 38] a null ownerReference is one with every field empty"),
    Case("meta-owner-reference-unknown-field", cr(meta="ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: o, uid: u, x: 1}]"),
         False, ("metadata.ownerReferences[0].x",), "[tx 38] strict decoding error: unknown field inside an ownerReference"),
    # checked on kube-apiserver v1.36.2 with kubectl v1.37.1: the server drops the repeated reference (with a warning)
    # before it validates, so two equal controller references are one controller (apiserver rest.go dedupOwnerReferences)
    Case("meta-owner-references-repeated", cr(meta="ownerReferences:\n- &o {apiVersion: v1, kind: ConfigMap, name: c, "
                                                "uid: 0b8f6f3e-52a3-4f0a-9b7c-2f0d7c1a9e11, controller: true}\n- *o"), True, (),
         "a repeated owner reference is dropped before validation", stored_spec={"size": 1, "containerPort": 11211}),
    Case("meta-owner-references-repeated-bad", cr(meta="ownerReferences:\n- &o {apiVersion: a/b/c, kind: ConfigMap, name: c, "
                                                    "uid: u, controller: true}\n- *o"), False, ("metadata.ownerReferences.apiVersion",),
         "judged once: one bad apiVersion, and no second controller"),
    Case("meta-managed-fields-unknown-field", cr(meta="managedFields: [{manager: m, x: 1}]"), False,
         ("metadata.managedFields[0].x",), "[tx 38] strict decoding error: unknown field inside managedFields"),
    Case("meta-server-set-fields", cr(meta="uid: abc\nresourceVersion: '1'\ngeneration: 5\nselfLink: /x\nmanagedFields: [{manager: m}]"),
         True, (), "[tx 38] fields the server sets are accepted (and reset) on create", stored_spec={"size": 1, "containerPort": 11211}),
    Case("meta-timestamp-rfc3339", cr(meta="creationTimestamp: 2024-01-01T00:00:00.5+02:00"), True, (),
         "[tx 38] time.RFC3339 admits fractional seconds and offsets", stored_spec={"size": 1, "containerPort": 11211}),
    Case("meta-timestamp-bad", cr(meta="creationTimestamp: x"), False, ("metadata.creationTimestamp",),
         "[tx 38] 400 parsing time \"x\" as \"2006-01-02T15:04:05Z07:00\" (kubectl refuses it before sending)"),
    Case("meta-timestamp-bad-day", cr(meta="deletionTimestamp: '2024-02-30T00:00:00Z'"), False, ("metadata.deletionTimestamp",),
         "Go time.Parse: day out of range (like [tx 38]'s \"x\"; kubectl: parsing time ... day out of range)"),
    Case("meta-timestamp-lower-case", cr(meta="creationTimestamp: '2024-01-01t00:00:00z'"), False, ("metadata.creationTimestamp",),
         "Go time.RFC3339 wants an upper-case T (kubectl: cannot parse \"t00:00:00z\" as \"T\")"),
    Case("meta-generation-string", cr(meta="generation: '1'"), False, ("metadata.generation",),
         "[tx 38] 400 json: cannot unmarshal string into Go struct field ObjectMeta.generation of type int64"),
    Case("meta-generation-fraction", cr(meta="generation: 1.5"), False, ("metadata.generation",),
         "encoding/json: a number with a fraction is no int64 (kubectl: cannot unmarshal number 1.5 into ... int64)"),
    Case("meta-owner-controller-string",
         cr(meta="ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: o, uid: u, controller: 'true'}]"),
         False, ("metadata.ownerReferences[0].controller",),
         "[tx 38] 400 cannot unmarshal string into Go struct field OwnerReference.ownerReferences.controller of type bool"),
    Case("kind-wrong-with-unknown-metadata-field", cr("size: 7\nx: 1", meta="labelz: 1", kind="memcached"), False,
         ("metadata.labelz",), "[tx 38] for a kind it does not know the server decodes ObjectMeta only: 400 for metadata.labelz"),
    Case("kind-wrong-only-the-kind", cr("size: 7", name="A", kind="memcached"), False, ("kind",),
         "[tx 38] 422 names only the kind, not the bad name or size"),
    # --- CEL rules
    Case("cel-pass", cr("size: 5\ncontainerPort: 11211"), True, (), "[cel] rule holds", crd="all",
         stored_spec={"size": 5, "containerPort": 11211, "threads": 4}),
    Case("cel-fail", cr("size: 5\ncontainerPort: 80"), False, ("spec",), "[cel] 'sizes above 4 need the default port'", crd="all"),
    Case("cel-field-rule", cr("ref: other"), False, ("spec.ref",), "[cel] rule on a string field: failed rule", crd="all"),
    # --- resources (kube-apiserver v1.36.2, tests/real_cluster/test_reconciler_real_cluster.py-style dry runs, 218 cases agreed)
    Case("resources-quantities", cr("resources:\n  limits: {memory: 1Gi, cpu: '2'}\n  requests: {memory: 512Mi, cpu: 500m}"), True, (),
         "quantities as strings, canonical or not", stored_spec={"size": 1, "containerPort": 11211, "resources": {
             "limits": {"memory": "1Gi", "cpu": "2"}, "requests": {"memory": "512Mi", "cpu": "500m"}}}),
    Case("resources-integer-quantity", cr("resources:\n  limits: {memory: 1073741824}"), True, (), "int-or-string: an integer",
         stored_spec={"size": 1, "containerPort": 11211, "resources": {"limits": {"memory": 1073741824}}}),
    Case("resources-bad-quantity", cr("resources:\n  limits: {memory: 1 Gi}"), False, ("spec.resources.limits.memory",),
         "the quantity pattern: no space"),
    Case("resources-fraction", cr("resources:\n  limits: {cpu: 1.5}"), False, ("spec.resources.limits.cpu",),
         "int-or-string: 1.5 is neither (quote it)"),
    Case("resources-beyond-int64", cr("resources:\n  limits: {memory: 9223372036854775808}"), False,
         ("spec.resources.limits.memory",),
         'beyond int64 the decoder gives a float64: "must be of type integer,string: \\"number\\"" on kube-apiserver v1.36.2'),
    Case("resources-claims-unknown", cr("resources:\n  claims: [{name: a}]"), False, ("spec.resources.claims",),
         "claims are not in our CRD (a Pod's resourceClaims cannot be rendered)"),
    # --- the rules on resources (CEL with the quantity() library) and the scheduling fields: each verdict
    # recorded on kube-apiserver v1.36.2 with `kubectl create --dry-run=server --validate=strict` (31 of 31 agreed)
    Case("resources-request-above-limit", cr("resources:\n  limits: {memory: 64Mi, cpu: '1'}\n  requests: {memory: 128Mi, cpu: 500m}"),
         False, ("spec.resources.requests",), "[cel] a request must not be above its limit (compareTo)"),
    Case("resources-request-above-integer-limit", cr("resources:\n  limits: {cpu: 1}\n  requests: {cpu: 1001m}"), False,
         ("spec.resources.requests",), "[cel] quantity(string(1)): an integer quantity compared as its digits"),
    Case("resources-request-equal-limit", cr("resources:\n  limits: {memory: 67108864}\n  requests: {memory: 64Mi}"), True, (),
         "[cel] equal values in two spellings", stored_spec={"size": 1, "containerPort": 11211, "resources": {
             "limits": {"memory": 67108864}, "requests": {"memory": "64Mi"}}}),
    Case("resources-memory-limit-too-small", cr("resources:\n  limits: {memory: 47Mi}"), False, ("spec.resources.limits",),
         "[cel] at least 48Mi: the smallest cache and its headroom"),
    Case("resources-memory-limit-48Mi", cr("resources:\n  limits: {memory: 48Mi}"), True, (), "[cel] the bound itself",
         stored_spec={"size": 1, "containerPort": 11211, "resources": {"limits": {"memory": "48Mi"}}}),
    Case("resources-memory-request-too-small", cr("resources:\n  requests: {memory: 32Mi}"), False, ("spec.resources.requests",),
         "[cel] without a limit the request sizes the cache"),
    Case("resources-negative", cr("resources:\n  limits: {cpu: '-1'}"), False, ("spec.resources.limits",),
         "[cel] sign(quantity(...)): a Pod refuses a negative quantity"),
    Case("resources-unknown-name", cr("resources:\n  limits: {gpu: '1'}"), False, ("spec.resources.limits",),
         "[cel] not a standard container resource nor domain-qualified"),
    Case("resources-extended-name", cr("resources:\n  limits: {example.com/gpu: '1', hugepages-2Mi: 100Mi, memory: 64Mi}"), True, (),
         "[cel] extended and huge-page resources", stored_spec={"size": 1, "containerPort": 11211, "resources": {
             "limits": {"example.com/gpu": "1", "hugepages-2Mi": "100Mi", "memory": "64Mi"}}}),
    Case("resources-too-long", cr("resources:\n  limits: {cpu: '1" + "0" * 70 + "'}"), False, ("spec.resources.limits.cpu",),
         "maxLength 64 (bounds the rules' cost); the rules are then not run: a blocking error"),
    Case("resources-too-many", cr("resources:\n  limits: {" + ", ".join(f"example.com/r{i}: '1'" for i in range(17)) + "}"), False,
         ("spec.resources.limits",), "maxProperties 16 (bounds the rules' cost)"),
    Case("scheduling-all", cr("nodeSelector: {disk: ssd}\ntolerations: [{key: a, operator: Exists, effect: NoSchedule}]\n"
                              "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
                              "[{matchExpressions: [{key: a, operator: In, values: [b]}]}]}}}\npriorityClassName: high"), True, (),
         "core/v1 types embedded as controller-gen embeds them", stored_spec={
             "size": 1, "containerPort": 11211, "nodeSelector": {"disk": "ssd"},
             "tolerations": [{"key": "a", "operator": "Exists", "effect": "NoSchedule"}],
             "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                 {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]}]}}},
             "priorityClassName": "high"}),
    Case("scheduling-toleration-seconds-string", cr("tolerations: [{key: a, tolerationSeconds: '10'}]"), False,
         ("spec.tolerations[0].tolerationSeconds",), "int64"),
    Case("scheduling-toleration-unknown-field", cr("tolerations: [{key: a, foo: b}]"), False, ("spec.tolerations[0].foo",),
         "[prune] strict: unknown field inside an embedded type"),
    Case("scheduling-node-selector-integer", cr("nodeSelector: {disk: 1}"), False, ("spec.nodeSelector.disk",), "a map of strings"),
    Case("scheduling-terms-required", cr("affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {}}}"), False,
         ("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",),
         "required kept from the OpenAPI"),
    Case("scheduling-weight-int32", cr("affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: "
                                       "[{weight: 3000000000, podAffinityTerm: {topologyKey: x}}]}}"), False,
         ("spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",), "[format] int32"),
    Case("scheduling-priority-class-integer", cr("priorityClassName: 5"), False, ("spec.priorityClassName",), "a string"),
    Case("max-connections-zero", cr("maxConnections: 0"), False, ("spec.maxConnections",), "minimum 14"),
    Case("max-connections-below-one-thread", cr("size: 1\nmaxConnections: 13"), False, ("spec.maxConnections",), "minimum 14"),
    Case("max-connections-least-for-one-thread", cr("size: 1\nmaxConnections: 14"), True, (), "minimum 14",
         stored_spec={"size": 1, "maxConnections": 14, "containerPort": 11211}),
    Case("max-connections-too-few-for-threads", cr("size: 1\nthreads: 8\nmaxConnections: 43"), False, ("spec.maxConnections",),
         "CEL rule: 5 a thread and 4 above 6 threads"),
    Case("max-connections-enough-for-threads", cr("size: 1\nthreads: 8\nmaxConnections: 44"), True, (), "CEL rule at its bound",
         stored_spec={"size": 1, "threads": 8, "maxConnections": 44, "containerPort": 11211}),
    Case("max-connections-too-few-for-six-threads", cr("size: 1\nthreads: 6\nmaxConnections: 33"), False, ("spec.maxConnections",),
         "CEL rule: 4 a thread and 10 up to 6 threads"),
    Case("threads-too-many", cr("threads: 65"), False, ("spec.threads",), "maximum 64"),
]
