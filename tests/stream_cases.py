"""kubectl's verdicts on whole streams, one case per reader decision (docs/design/kubectl-reader.md).

Each case is a file's bytes and whether ``kubectl create --dry-run=server --validate=strict -f
FILE`` accepts it, as kubectl v1.37.1 answered against kube-apiserver v1.36.2 with the shipped CRD
installed (``why`` gives kubectl's words). tests/cli/test_pipeline.py holds the validator to each
verdict offline; tests/real_cluster/test_validator_real_apiserver.py asks the server again when a cluster is
configured, so a verdict that changes upstream is seen.
"""

from __future__ import annotations

from typing import NamedTuple

from tests.stream_texts import aliased_list


class StreamCase(NamedTuple):
    id: str
    row: str  # the map's row
    data: bytes
    accept: bool
    why: str


CR = b"apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: m}\nspec: {size: 1}\n"
CR_FLOW = b"{apiVersion: cache.example.com/v1alpha1, kind: Memcached, metadata: {name: m}, spec: {size: 1}}"
CR_JSON = b'{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "m"}}'
BODY = b"{metadata: {name: m}, spec: {size: 1}}"
CM = b"{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: b}}"


def _list(api: bytes, kind: bytes, items: bytes | None, extra: bytes = b"") -> bytes:
    """A list document; ``items`` is the YAML after ``items:`` (None: no items key)."""
    return b"apiVersion: " + api + b"\nkind: " + kind + b"\n" + extra + (b"items: " + items + b"\n" if items is not None else b"")


CASES: list[StreamCase] = [
    # --- lists (section 3)
    StreamCase("v1-list", "3.1", _list(b"v1", b"List", b"[" + CR_FLOW + b"]"), True, "created"),
    StreamCase("apps-list", "3.2", _list(b"apps/v1", b"List", b"[" + CR_FLOW + b"]"), True, "created"),
    StreamCase("our-list", "3.2", _list(b"cache.example.com/v1alpha1", b"List", b"[" + CR_FLOW + b"]"), True, "created"),
    StreamCase("memcachedlist-kindless", "3.5", _list(b"cache.example.com/v1alpha1", b"MemcachedList", b"[" + BODY + b"]"), True,
               "created: the item takes Memcached"),
    StreamCase("configmap-with-items", "3.2", _list(b"v1", b"ConfigMap", b"[" + CR_FLOW + b"]", b"metadata: {name: c}\n"), True,
               "created: only the item is sent"),
    StreamCase("whatever-list", "3.4", _list(b"apps/v1", b"WhateverList", b"[" + CR_FLOW + b"]"), False,
               'resource mapping not found ... no matches for kind "WhateverList" in version "apps/v1"'),
    StreamCase("our-whatever-list", "3.4", _list(b"cache.example.com/v1alpha1", b"WhateverList", b"[" + CR_FLOW + b"]"), False,
               "resource mapping not found"),
    StreamCase("memcachedlist-unserved", "3.4", _list(b"cache.example.com/v1beta1", b"MemcachedList", b"[" + CR_FLOW + b"]"), False,
               "resource mapping not found"),
    StreamCase("memcachedlist-lower-case", "3.4", _list(b"cache.example.com/v1alpha1", b"memcachedlist", b"[" + BODY + b"]"), False,
               "resource mapping not found: a list kind maps only as <Kind>List"),
    StreamCase("v1-list-kindless-item", "3.5", _list(b"v1", b"List", b"[" + BODY + b"]"), False,
               "error validating data: [apiVersion not set, kind not set]"),
    StreamCase("apps-list-kindless-item", "3.5", _list(b"apps/v1", b"List", b"[" + BODY + b"]"), False,
               "Object 'Kind' is missing"),
    StreamCase("item-without-api-version", "3.6", _list(b"v1", b"List", b"[{kind: Memcached, metadata: {name: m}}]"), False,
               "apiVersion not set"),
    StreamCase("v1-list-null-item", "3.7", _list(b"v1", b"List", b"[" + CR_FLOW + b", ~]"), False, "invalid object to validate"),
    StreamCase("memcachedlist-null-item", "3.7", _list(b"cache.example.com/v1alpha1", b"MemcachedList", b"[~]"), False,
               'ValidationError(MemcachedList.items): unknown object type "nil"'),
    StreamCase("memcached-with-null-item", "3.7", _list(b"cache.example.com/v1alpha1", b"Memcached", b"[~]",
                                                         b"metadata: {name: c}\n"), False,
               "the null item is an empty Memcached: name or generateName is required"),
    StreamCase("number-item", "3.7", _list(b"apps/v1", b"List", b"[" + CR_FLOW + b", 5]"), False, "cannot unmarshal number"),
    StreamCase("nested-list", "3.8", _list(b"apps/v1", b"List", b"[{apiVersion: v1, kind: List, items: [" + CR_FLOW + b"]}]"), False,
               "*unstructured.Unstructured is not a list: no Items field in this object"),
    StreamCase("items-null-in-an-item", "3.8", _list(b"apps/v1", b"List",
                                                     b"[{apiVersion: cache.example.com/v1alpha1, kind: Memcached, "
                                                     b"metadata: {name: m}, items: ~}]"), False,
               'not a list: strict decoding error: unknown field "items"'),
    StreamCase("empty-list", "3.9", _list(b"v1", b"List", b"[]"), False, "no objects passed to create"),
    StreamCase("configmap-items-null", "3.9", _list(b"v1", b"ConfigMap", b"~", b"metadata: {name: c}\n"), False,
               "no objects passed to create"),
    StreamCase("empty-list-then-cr", "3.9", _list(b"v1", b"List", b"[]") + b"---\n" + CR, True, "created"),
    StreamCase("v1-list-items-null", "3.9", _list(b"v1", b"List", b"~") + b"---\n" + CR, False, "invalid object to validate"),
    StreamCase("items-a-number", "3.3", _list(b"v1", b"ConfigMap", b"5", b"metadata: {name: c}\n"), False,
               "cannot unmarshal number into Go struct field decodeList.items"),
    StreamCase("v1-list-without-items", "3.10", _list(b"v1", b"List", None), False, "invalid object to validate"),
    StreamCase("apps-list-without-items", "3.10", _list(b"apps/v1", b"List", None), False,
               "the server could not find the requested resource"),
    StreamCase("configmaplist-without-items", "3.10", _list(b"v1", b"ConfigMapList", None), False,
               'missing required field "items"'),
    StreamCase("memcachedlist-list-meta", "3.14", _list(b"cache.example.com/v1alpha1", b"MemcachedList", b"[" + BODY + b"]",
                                                        b"metadata: {name: l}\n"), False,
               'ValidationError(MemcachedList.metadata): unknown field "name" in ...ListMeta'),
    StreamCase("item-namespace-no-string", "3.13", _list(b"cache.example.com/v1alpha1", b"MemcachedList",
                                                          b"[{metadata: {name: m, namespace: yes}, spec: {size: 1}}]"), True,
               "an item's metadata is not decoded on the client; a namespace that is no string becomes the default"),
    StreamCase("document-namespace-no-string", "3.13", CR.replace(b"{name: m}", b"{name: m, namespace: yes}"), False,
               "json: cannot unmarshal bool into Go struct field ObjectMeta.namespace of type string"),
    StreamCase("v1-list-own-fields", "3.14", _list(b"v1", b"List", b"[" + CR_FLOW + b"]", b"metadata: {name: l}\nspec: 1\n"), True,
               "a v1 List's own fields are not checked"),
    # --- the stream (sections 1, 2, 5)
    StreamCase("separator-nbsp", "1.9", CR + "---\u00a0\n".encode() + CR, True, "strings.TrimSpace: U+00A0 is a blank"),
    StreamCase("separator-file-separator", "1.9", CR + b"---\x1c\n" + CR, False, "invalid Yaml document separator"),
    StreamCase("crlf", "1.10", CR.replace(b"\n", b"\r\n") + b"---\r\n" + CR.replace(b"\n", b"\r\n"), True, "created twice"),
    StreamCase("nbsp-before-json", "1.2", "\u00a0".encode() + CR_JSON + b"\n" + CR_JSON.replace(b'"m"', b'"m2x"') + b"\n", True,
               "JSON fails on U+00A0, YAML reads the first value only"),
    StreamCase("json-then-three-bytes", "1.4", CR_JSON + b"\n#\n", False, "json: invalid character '#'"),
    StreamCase("json-then-four-bytes", "1.4", CR_JSON + b"\n# \n", True, "created"),
    StreamCase("json-characters-yaml-refuses", "2.1", b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, '
               b'"data": {"a": "b\xef\xbf\xbe\x7f\xc2\x80"}}\n', True, "U+FFFE, DEL and C1 are JSON text, which YAML would refuse"),
    StreamCase("json-lone-surrogate", "2.2", CR_JSON.replace(b'"m"}', b'"m", "annotations": {"a": "\\ud800"}}'), True,
               "U+FFFD"),
    StreamCase("json-beyond-float64", "2.3", CR_JSON.replace(b'"m"}', b'"m"}, "spec": {"size": 1E400}'), False,
               "json: cannot unmarshal number 1E400 into Go value of type float64"),
    StreamCase("not-utf8", "5.3", CR.replace(b"{name: m}", b"{name: m, annotations: {a: \"\xff\xfe\"}}"), True,
               "replaced by U+FFFD"),
    StreamCase("not-utf8-after-bom", "5.2", b"\xef\xbb\xbf" + CR.replace(b"{name: m}", b"{name: m, annotations: {a: \"\xff\"}}"),
               False, "yaml: invalid leading UTF-8 octet"),
    StreamCase("utf16le", "5.4", b"\xff\xfe" + (CR + b"---\n" + CR).decode().encode("utf-16-le"), True, "two documents"),
    StreamCase("bom-json-run", "5.1", b"\xef\xbb\xbf" + CR_JSON + b"\n" + CR_JSON.replace(b'"m"}', b'"m"}, "spec": {"size": 9}'),
               False, "the second value is read: size 9"),
    StreamCase("bom-inside-a-chunk", "5.5", b"---\n\xef\xbb\xbf" + CR_FLOW + b"\n", False,
               "yaml: mapping values are not allowed (U+FEFF is text)"),
    StreamCase("bom-at-a-later-chunk", "5.5", CR + b"---\n\xef\xbb\xbf" + CR, True, "each chunk's parser skips its own mark"),
    # --- tags, keys, aliases (sections 4, 7, 9)
    StreamCase("tags-on-collections", "4.12", b"apiVersion: v1\nkind: ConfigMap\nmetadata: !!str {name: c}\ndata: !custom {a: b}\n",
               True, "go-yaml ignores a collection's tag"),
    StreamCase("json-list-duplicate-labels", "7.6", b'{"apiVersion": "apps/v1", "kind": "List", "metadata": {"labels": '
                                                    b'{"a": "x", "a": "y"}}, "items": [' + CR_JSON + b"]}\n", False,
               "error validating data: duplicate key: a"),
    StreamCase("json-cr-duplicate-labels", "7.6", CR_JSON.replace(b'"m"}', b'"m", "labels": {"a": "x", "a": "y"}}') + b"\n", True,
               "fieldValidation: no client validation, the last wins"),
    StreamCase("aliases-under-the-share", "9.4", aliased_list(132).encode(), True,
               "132 copies of a CR with 200 labels: go-yaml's alias share stays under 99%; 133 CRs created"),
    StreamCase("aliases-over-the-share", "9.4", aliased_list(133).encode(), False, "yaml: document contains excessive aliasing"),
]
