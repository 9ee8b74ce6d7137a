"""Random *streams* around the CR documents of tests/cr_texts.py, as bytes, for differential testing.

``cr_texts()`` draws what a person writes inside one CR; ``stream_texts()`` draws what kubectl's
reader decides around the documents (docs/design/kubectl-reader.md, sections 1-7): list wrappers of
every spelling and what their items may be, tags on collections, encodings and byte order marks,
bytes that are no UTF-8, CRLF line ends, separators followed by Unicode blanks, runs of JSON values
and what precedes them, JSON's own escapes and numbers, duplicate keys only JSON keeps, odd
documents (empty, null, no map, keys go-yaml refuses, nesting at the bounds) and, rarely, many
aliases near go-yaml's bound. Each text is bytes: kubectl reads the file's bytes, so the
differential writes them unchanged. Seeded and reproducible: bench/validator_differential.py
``--seed N`` draws the same texts again.

Other kinds appear only as objects the validator does not judge and the server accepts (a valid
ConfigMap), and a typed list (``ConfigMapList``, ``MemcachedList``) holds only items of its own kind:
kubectl validates every item of a typed list against the list's item schema on the client, whatever
the item's own kind, which the validator does not model for kinds it has no schema of (map row 3.14).
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

from tests.cr_texts import Map, Node, Scalar, Seq, cr_texts, document, json_value, near_valid_document, render_document

CR_API = "cache.example.com/v1alpha1"
#: A ConfigMap the server accepts: other kinds are drawn only as objects the validator passes over.
CONFIG_MAP_BODY = (("metadata", Map([("name", Scalar("cfg"))], flow=True)), ("data", Map([("a", Scalar("b"))], flow=True)))
#: List wrappers: (apiVersion, kind, what its items may be). "any": CRs, other kinds, kindless
#: bodies, nulls and the rest; "cr": Memcached items only (with or without their kind); "cm":
#: ConfigMap items only; "cm-any": CRs and ConfigMaps (a kindless item of a ConfigMap with items
#: is a ConfigMap, map row 3.5), and no object. A ConfigMap with items is flattened like any list (row 3.2).
WRAPPERS = (
    ("v1", "List", "any"), ("v1", "List", "any"), ("apps/v1", "List", "any"), (CR_API, "List", "any"),
    (CR_API, "MemcachedList", "cr"), (CR_API, "MemcachedList", "cr"), ("v1", "ConfigMapList", "cm"),
    ("v1", "ConfigMap", "cm-any"), (CR_API, "Memcached", "cr"), ("apps/v1", "WhateverList", "any"),
    (CR_API, "WhateverList", "any"), ("cache.example.com/v1beta1", "MemcachedList", "cr"), (CR_API, "memcachedlist", "cr"),
)
#: Tags on collections: go-yaml v2 ignores every one (map rows 4.11, 4.12).
COLLECTION_TAGS = ("!!map", "!!seq", "!!str", "!!int", "!!null", "!!omap", "!custom", "!", "!!set", "!!binary")
#: Blanks before the first ``{`` of a JSON run: ASCII, Unicode spaces unicode.IsSpace counts, and more
#: than the 4,096 bytes kubectl peeks (map row 1.2).
JSON_LEADS = ("", "", "", " ", "\n\n", "\t \n", "\u00a0", "\u0085", "\u2003", "\u3000\n", " " * 4095, " " * 4096,
              "\n" * 5000, "\x1c")
#: What may follow ``---`` on a separator line: blanks of every sort, a comment, or text (map rows 1.8, 1.9).
SEPARATOR_TAILS = ("",) * 8 + (" ", "\t", " # a comment", "\u00a0", "\u2003", "\u0085", "\u00a0# c", "\u3000", "\x1c", " x", "-")


def _valid_cr(draw: st.DrawFn) -> Map:
    """A CR the server accepts, so that what is drawn around it decides the verdict."""
    name = Scalar(draw(st.sampled_from(["cache", "m", "cache-1", "my.cache"])))
    spec = Map([("size", Scalar(draw(st.sampled_from(["1", "2", "3"]))))], flow=draw(st.booleans()))
    return Map([("apiVersion", Scalar(CR_API)), ("kind", Scalar("Memcached")), ("metadata", Map([("name", name)])),
                ("spec", spec)], flow=draw(st.integers(0, 5)) == 0)


def _cr_body(draw: st.DrawFn, kindless: bool) -> Map:
    """A CR document (valid, near valid or not), without its kind and apiVersion when ``kindless``."""
    which = draw(st.integers(0, 19))
    doc = _valid_cr(draw) if which < 10 else draw(near_valid_document() if which < 17 else document())
    if kindless:
        doc.items = [(k, v) for k, v in doc.items if k not in ("apiVersion", "kind")]
    return doc


@st.composite
def list_item(draw: st.DrawFn, allowed: str) -> Node:
    """One item of a list: a CR, a CR body without identity, another kind, or no object at all."""
    pool = {"cr": ["cr", "cr", "body", "body", "null"],
            "cm": ["cm", "cm-body", "null"],
            "cm-any": ["cr"] * 4 + ["cm", "cm-body", "number", "nested"],
            "any": ["cr"] * 8 + ["body", "body", "cm", "cm", "null", "number", "string", "seq", "nested", "kind-only",
                                 "api-only", "empty-list-item"]}[allowed]
    choice = draw(st.sampled_from(pool))
    if choice in ("cr", "body"):
        return _cr_body(draw, choice == "body")
    if choice == "cm":
        return Map([("apiVersion", Scalar("v1")), ("kind", Scalar("ConfigMap")), *CONFIG_MAP_BODY])
    if choice == "cm-body":
        return Map(list(CONFIG_MAP_BODY))
    if choice == "nested":  # a list inside a list (map row 3.8)
        inner = draw(st.sampled_from([("v1", "List"), (CR_API, "MemcachedList"), ("v1", "ConfigMap")]))
        items = Seq([_cr_body(draw, False)]) if draw(st.booleans()) else Seq([], flow=True)
        return Map([("apiVersion", Scalar(inner[0])), ("kind", Scalar(inner[1])), ("items", items)])
    if choice in ("kind-only", "api-only"):  # one of the two (map row 3.6)
        doc = _cr_body(draw, False)
        drop = "apiVersion" if choice == "kind-only" else "kind"
        doc.items = [(k, v) for k, v in doc.items if k != drop]
        return doc
    if choice == "empty-list-item":  # an item that only looks like a list: items null is a field (map row 3.8)
        doc = _valid_cr(draw)
        doc.items.append(("items", Scalar("~")))
        return doc
    return {"null": Scalar(draw(st.sampled_from(["~", "null", ""]))), "number": Scalar("5"), "string": Scalar("x"),
            "seq": Seq([Scalar("1")], flow=True)}[choice]


@st.composite
def list_document(draw: st.DrawFn) -> Map:
    """A list wrapper of any spelling, with zero or more items, or items null, absent or no array
    (map rows 3.1-3.10)."""
    api, kind, allowed = draw(st.sampled_from(WRAPPERS))
    items: list[tuple[str, Node]] = [("apiVersion", Scalar(api)), ("kind", Scalar(kind))]
    if kind == "ConfigMap":
        items += list(CONFIG_MAP_BODY)
    elif draw(st.integers(0, 5)) == 0:  # a list's own metadata: ListMeta for a typed list (map row 3.14)
        items.append(("metadata", draw(st.sampled_from([Map([], flow=True), Map([("resourceVersion", Scalar("'1'"))]),
                                                         Map([("name", Scalar("l"))], flow=True)]))))
    shape = draw(st.sampled_from(["items"] * 12 + ["empty", "null", "absent", "number"]))
    if shape == "items":
        seq = Seq([draw(list_item(allowed)) for _ in range(draw(st.integers(1, 3)))], flow=draw(st.integers(0, 5)) == 0)
        items.append(("items", seq))
    elif shape != "absent":
        items.append(("items", {"empty": Seq([], flow=True), "null": Scalar("~"), "number": Scalar("5")}[shape]))
    draw(st.randoms()).shuffle(items)
    return Map(items, flow=draw(st.integers(0, 7)) == 0)


def _collections(node: Node) -> list[Map | Seq]:
    """Every map and sequence in ``node``, itself included."""
    found: list[Map | Seq] = []
    stack: list[Node] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Map):
            found.append(item)
            stack += [v for _, v in item.items]
        elif isinstance(item, Seq):
            found.append(item)
            stack += item.items
    return found


def _tag_collections(draw: st.DrawFn, doc: Map) -> None:
    """Tags on a few maps and sequences of ``doc`` (map rows 4.11, 4.12)."""
    if draw(st.integers(0, 4)):
        return
    targets = _collections(doc)
    for _ in range(draw(st.integers(1, 2))):
        target = draw(st.sampled_from(targets))
        target.tag = draw(st.sampled_from(COLLECTION_TAGS))


@st.composite
def stream_document(draw: st.DrawFn) -> Map:
    """One document of a stream: a CR, a list, or another kind's object."""
    form = draw(st.sampled_from(["cr", "cr", "cr", "list", "list", "list", "cm"]))
    if form == "cr":
        doc = _cr_body(draw, False)
    elif form == "list":
        doc = draw(list_document())
    else:
        doc = Map([("apiVersion", Scalar("v1")), ("kind", Scalar("ConfigMap")), *CONFIG_MAP_BODY])
    _tag_collections(draw, doc)
    return doc


#: JSON spellings only a JSON stream reads: a lone surrogate escape (U+FFFD there, map row 2.2), a
#: number beyond float64 (refused, row 2.3), and their neighbours that are fine.
JSON_TRICKS = (r'"\ud800"', r'"\udc00x"', r'"\ud83d\ude00"', r'"\ud83d"', r'"\u00e9"', "1E400", "-1e400", "1e308", "1E-400",
               "1" + "0" * 400, '"\\u0000"', "NaN", "Infinity")
_MARK = "\u2603mark\u2603"


def _json_text(draw: st.DrawFn, doc: Map, tricks: bool = True) -> str:
    """``doc`` as one JSON value, perhaps with one of ``JSON_TRICKS`` as an annotation, a size, or the
    name, and perhaps duplicate label keys (which only JSON keeps: NoDoubleKeySchema, map row 7.6)."""
    value = json_value(doc)
    trick = draw(st.integers(0, 8)) if tricks or draw(st.integers(0, 4)) == 0 else 8
    if not isinstance(value, dict) or value.get("kind") != "Memcached" and not (trick == 3 and "items" in value):
        trick = 8  # only a CR's fields are judged by the validator, and a list's duplicate labels: no trick elsewhere
    if isinstance(value, dict) and trick <= 1:
        meta = value.setdefault("metadata", {})
        if isinstance(meta, dict):
            where = draw(st.sampled_from(["annotations", "labels", "name"]))
            if where == "name":
                meta["name"] = _MARK
            else:
                meta[where] = {"note": _MARK}
        text = json.dumps(value).replace(json.dumps(_MARK), draw(st.sampled_from(JSON_TRICKS)), 1)
    elif isinstance(value, dict) and trick == 2:
        if not isinstance(value.get("spec"), dict):
            value["spec"] = {}
        value["spec"]["size"] = _MARK
        text = json.dumps(value).replace(json.dumps(_MARK), draw(st.sampled_from(JSON_TRICKS)), 1)
    elif isinstance(value, dict) and trick == 3:
        meta = value.setdefault("metadata", {})
        if isinstance(meta, dict):
            meta[draw(st.sampled_from(["labels", "annotations"]))] = {_MARK: "1"}
        pair = json.dumps(_MARK) + ': "1"'
        text = json.dumps(value).replace(pair, f'"a": "x", "a": "{draw(st.sampled_from(["x", "y"]))}"', 1)
    else:
        text = json.dumps(value)
    return text


_CR_HEAD = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\n"
#: Documents that are no CR of the grammar: empty, null, no map, keys and values only go-yaml refuses
#: or reads its own way, nesting at the bounds (map rows 6.1-6.3, 8.6, 8.12, 8.13, 9.1, 9.5).
ODD_DOCUMENTS = (
    "", "# only a comment\n", "~\n", "null\n", "!!null ''\n", "- a\n", "''\n", "5\n", "a: [\n",
    _CR_HEAD + "metadata: {name: m, labels: {[a]: b}}\n", _CR_HEAD + "metadata: {name: m, labels: {{a: 1}: b}}\n",
    _CR_HEAD + "metadata: {name: m, annotations: {a: !!binary /w==, b: !!binary 7aCA}}\n",
    _CR_HEAD + "metadata: {name: m, annotations: {a: " + "[" * 10_000 + "]" * 10_000 + "}}\n",
    _CR_HEAD + "metadata: {name: m, annotations: {a: " + "[" * 10_001 + "]" * 10_001 + "}}\n",
    _CR_HEAD + "metadata: {name: m}\nspec: {size: [1, 2}\n",
)


def _yaml_stream(draw: st.DrawFn) -> str:
    """YAML documents (one may be a JSON value, one may be odd) with separators of every sort between them."""
    docs = [draw(stream_document()) for _ in range(draw(st.sampled_from([1, 1, 1, 2, 2, 3])))]
    parts = []
    for doc in docs:
        if draw(st.integers(0, 11)) == 0:
            parts.append(draw(st.sampled_from(ODD_DOCUMENTS)))
            continue
        parts.append(_json_text(draw, doc, tricks=False) + "\n" if draw(st.integers(0, 6)) == 0 else render_document(doc))
    out = parts[0]
    for part in parts[1:]:
        out += "---" + draw(st.sampled_from(SEPARATOR_TAILS)) + "\n" + part
    head = draw(st.sampled_from(["", "", "", "---\n", "--- # c\n", "---\u00a0\n", "# c\n", "\n"]))
    return head + out + draw(st.sampled_from(["", "", "---\n", "...\n", "---\u00a0\n"]))


#: Leads that make kubectl read a run of JSON values as one YAML chunk, of which go-yaml reads the
#: first value only (map rows 1.2, 5.7).
YAML_READ_LEADS = frozenset(lead for lead in JSON_LEADS if len(lead.encode()) >= 4096 or lead.strip(" \t\r\n"))


def _json_stream(draw: st.DrawFn) -> str:
    """A run of JSON values after some blanks (map rows 1.1-1.6, 2.x): one after another, on lines
    of their own or not, perhaps broken or followed by YAML."""
    docs = [draw(stream_document()) for _ in range(draw(st.sampled_from([1, 2, 2, 3])))]
    joiner = draw(st.sampled_from(["\n", "", " ", "\n\n"]))
    lead = draw(st.sampled_from(JSON_LEADS))
    if lead in YAML_READ_LEADS:
        docs = docs[:1]  # one value: go-yaml's reader and libyaml's check different lengths past it (map row 5.7)
    text = lead + joiner.join(_json_text(draw, d) for d in docs) + "\n"
    tail = draw(st.sampled_from(["", "", "", "{", "x: 1\n", "---\n" + render_document(docs[0]), "// c\n"]))
    return text + ("" if lead in YAML_READ_LEADS else tail)


ENCODINGS = ("utf-8",) * 14 + ("utf-8-bom", "utf-16-le", "utf-16-be", "bad-utf8", "bad-utf8", "bom-later", "bom-bad")
#: Byte sequences that are no UTF-8: a lone continuation, a truncated sequence, an overlong form,
#: a surrogate, beyond U+10FFFF, Latin-1 text (map rows 5.2, 5.3).
BAD_BYTES = (b"\xff", b"\x80", b"\xe2\x82", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"caf\xe9", b"\xf0\x9f\x98",
             b"\xfe\xff", b"\x07", b"\x00", b"\x1b", b"\xc2\x85", b"\xef\xbf\xbe")  # and characters YAML refuses (map row 5.6)


def _encoded(draw: st.DrawFn, text: str) -> bytes:
    """The stream's bytes in one of ``ENCODINGS`` (map section 5)."""
    encoding = draw(st.sampled_from(ENCODINGS))
    data = text.encode("utf-8")
    if encoding == "utf-8-bom":
        return b"\xef\xbb\xbf" + data
    if encoding == "utf-16-le":
        return b"\xff\xfe" + text.encode("utf-16-le")
    if encoding == "utf-16-be":
        return b"\xfe\xff" + text.encode("utf-16-be")
    if encoding == "bom-later":  # a byte order mark at the start of a later chunk (map row 5.5)
        return data.replace(b"---\n", b"---\n\xef\xbb\xbf", 1)
    bad = draw(st.sampled_from(BAD_BYTES))
    # into a comment at the end of a line, or into a value: a ConfigMap's data, a label's value, a name
    needles = [needle for needle in (b"a: b", b"app: cache", b"name: cache", b'"name": "cache', b'"a": "b') if needle in data]
    if needles and draw(st.booleans()):
        needle = draw(st.sampled_from(needles))
        data = data.replace(needle, needle + bad, 1)
    else:
        lines = data.split(b"\n")
        at = draw(st.integers(0, max(len(lines) - 2, 0)))
        lines[at] += b" # " + bad
        data = b"\n".join(lines)
    return (b"\xef\xbb\xbf" + data) if encoding == "bom-bad" else data  # after a BOM, no replacement (row 5.2)


def aliased_list(copies: int, labels: int = 200) -> str:
    """A v1 List of a CR with ``labels`` labels, anchored, and ``copies`` aliases of it: with 200
    labels, go-yaml's alias share crosses 99% at 133 copies (map row 9.4)."""
    written = ", ".join(f"l{i}: x" for i in range(labels))
    cr = f"{{apiVersion: {CR_API}, kind: Memcached, metadata: {{name: m, labels: {{{written}}}}}, spec: {{size: 1}}}}"
    return "apiVersion: v1\nkind: List\nitems: [&c " + cr + "".join([", *c"] * copies) + "]\n"


@st.composite
def stream_texts(draw: st.DrawFn) -> bytes:
    """A manifest stream as bytes: YAML or a JSON run around CR documents and lists, perhaps with
    CRLF line ends, in an encoding, with bytes that are no UTF-8; or a text of ``cr_texts()``;
    rarely, a list of many aliases near go-yaml's bound (each copy is an object kubectl sends)."""
    form = draw(st.sampled_from(["yaml"] * 24 + ["json"] * 8 + ["cr"] * 4 + ["aliases"]))
    if form == "aliases":
        return aliased_list(draw(st.sampled_from([1, 3, 132, 133])), draw(st.sampled_from([20, 200]))).encode()
    text = {"yaml": _yaml_stream, "json": _json_stream, "cr": lambda d: d(cr_texts())}[form](draw)
    if draw(st.integers(0, 5)) == 0:
        text = text.replace("\n", "\r\n")  # CRLF: kubectl's line reader strips \r\n (map row 1.10)
    return _encoded(draw, text)
