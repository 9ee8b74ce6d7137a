"""Excerpts of input in messages: bounded, quoted as the API server quotes, never the whole value.

Messages go to public places (CI logs, the Argo CD UI, Events); input comes from strangers. A
value is quoted by at most EXCERPT_LIMIT (64) characters and then ``…``; strings as Go's %q / JSON
(``Invalid value: "Bad_Name"``, transcript 12), other values as compact JSON
(``Invalid value: {"a":"b"}``, transcript 12, the Deployment without a selector).
"""

from __future__ import annotations

import datetime

import pytest
from memcached_gitops.foundation.excerpt import ELLIPSIS, EXCERPT_LIMIT, excerpt, quote_value, type_and_length


def test_the_limit_is_64_characters_and_the_mark_an_ellipsis() -> None:
    assert (EXCERPT_LIMIT, ELLIPSIS) == (64, "…")


def test_a_text_up_to_the_limit_is_kept_whole() -> None:
    assert excerpt("x" * 64) == "x" * 64
    assert excerpt("") == ""
    assert excerpt("abc", limit=3) == "abc"


def test_a_longer_text_is_cut_at_the_limit_and_marked() -> None:
    assert excerpt("x" * 65) == "x" * 64 + "…"
    assert excerpt("abcd", limit=3) == "abc…"


def test_a_string_is_quoted_after_it_is_cut_so_the_quotes_stay_balanced() -> None:
    assert quote_value("Bad_Name") == '"Bad_Name"'  # transcript 12, exchange 9
    assert quote_value("y" * 70) == '"' + "y" * 64 + '…"'
    assert quote_value('say "hi"\n') == '"say \\"hi\\"\\n"'


def test_non_ascii_is_written_as_itself_not_escaped() -> None:
    # Go's %q and json.Marshal keep printable UTF-8 as it is
    assert quote_value("ééé") == '"ééé"'
    assert quote_value(["é"]) == '["é"]'


def test_other_values_are_compact_json() -> None:
    assert quote_value({"a": "b"}) == '{"a":"b"}'  # transcript 12, exchange 13
    assert quote_value([1, {"k": None}]) == '[1,{"k":null}]'
    assert quote_value(4) == "4"
    assert quote_value(True) == "true"
    assert quote_value(None) == "null"
    assert quote_value(1.5) == "1.5"


def test_a_long_json_value_is_cut_like_a_string() -> None:
    assert quote_value(["b" * 100]) == '["' + "b" * 62 + "…"


def test_a_value_json_has_no_form_for_is_written_as_text() -> None:
    assert quote_value({"when": datetime.date(2026, 11, 23)}) == '{"when":"2026-11-23"}'


def test_a_value_json_cannot_write_is_quoted_by_its_repr_and_still_cut() -> None:
    loop: list = []
    loop.append(loop)
    assert quote_value(loop) == "[[...]]"
    deep: list = [loop] * 30
    assert quote_value(deep) == excerpt(repr(deep)) and quote_value(deep).endswith("…")


def test_a_document_that_is_not_a_mapping_is_described_by_type_and_size_only() -> None:
    assert type_and_length(None) == "null"
    assert type_and_length(True) == "a boolean"
    assert type_and_length(12345) == "a number of 5 digits"
    assert type_and_length(1.5) == "a number of 3 digits"
    assert type_and_length("secret") == "a string of 6 characters"
    assert type_and_length([1, 2]) == "a list of 2 items"
    assert type_and_length(b"raw") == "a bytes"


def test_excerpt_ends_keeps_the_start_and_the_end_within_the_limit() -> None:
    from memcached_gitops.foundation.excerpt import EXCERPT_LIMIT, excerpt_ends

    assert excerpt_ends("short") == "short"
    text = "accumulating resources: " + "x" * 300 + ": no such file or directory"
    cut = excerpt_ends(text)
    assert len(cut) <= EXCERPT_LIMIT and cut.startswith("accumulating resource") and cut.endswith("no such file or directory")


def test_excerpt_of_a_path_keeps_its_end() -> None:
    path = "F" * 200 + "/kustomization.yaml"
    assert excerpt(path, end=True) == ELLIPSIS + path[-EXCERPT_LIMIT:]
    assert excerpt(excerpt(path, end=True), end=True) == excerpt(path, end=True), "excerpting twice changes nothing"


def test_a_path_is_shown_by_its_end() -> None:
    from memcached_gitops.foundation.excerpt import PATH_LIMIT, shown_path

    assert shown_path("a/b.yaml") == "a/b.yaml"
    assert shown_path("x" * PATH_LIMIT) == "x" * PATH_LIMIT
    long = "d/" * 200 + "end.yaml"
    assert shown_path(long) == ELLIPSIS + long[-PATH_LIMIT:] and shown_path(long).endswith("/end.yaml")


def test_one_line_escapes_what_would_start_or_hide_a_workflow_command() -> None:
    from memcached_gitops.foundation.excerpt import one_line

    assert one_line("a\nb\r\x1b\u2028\u202e\tc") == "a\\nb\\r\\x1b\\u2028\\u202e\tc"
    assert one_line("x ##[stop-commands]t ##[error]y") == "x #\\x23[stop-commands]t #\\x23[error]y"
    assert one_line("::error::x") == "\\x3a:error::x"
    assert one_line(" \u3000::warning::x") == " \u3000\\x3a:warning::x"
    assert one_line("a::b: c") == "a::b: c" and one_line(":x") == ":x" and one_line("  indented") == "  indented"


def _unicode_controls() -> list[str]:
    """By Python's own Unicode database, not our table: every control character (category Cc) but the tab,
    the line and paragraph separators (Zl, Zp), every explicit bidirectional embedding, override and isolate
    (bidi classes LRE..PDI) and the three implicit marks (LRM, RLM, ALM), Trojan Source's tools."""
    import sys
    import unicodedata

    explicit = {"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"}
    found = [chr(c) for c in range(sys.maxunicode + 1)
             if unicodedata.category(chr(c)) in ("Cc", "Zl", "Zp") or unicodedata.bidirectional(chr(c)) in explicit]
    marks = [unicodedata.lookup(n) for n in ("LEFT-TO-RIGHT MARK", "RIGHT-TO-LEFT MARK", "ARABIC LETTER MARK")]
    return [c for c in found + marks if c != "\t"]


@pytest.mark.parametrize("char", _unicode_controls(), ids=lambda c: f"U+{ord(c):04X}")
def test_every_control_and_bidirectional_character_is_written_escaped(char: str) -> None:
    """Each one, wherever it sits in a line, is written as an ASCII escape: none can end the line in a CI
    log, drive a terminal or reorder what a reviewer reads around it."""
    from memcached_gitops.foundation.excerpt import one_line

    shown = one_line(f"a{char}b")
    assert char not in shown and shown.isascii() and shown.startswith("a\\") and shown.endswith("b"), repr(shown)


@pytest.mark.parametrize("char", ["\t", " ", "~", "\u00a0", "\u00e9", "\u061b", "\u200d", "\u202f", "\u2065", "\u206a"],
                         ids=lambda c: f"U+{ord(c):04X}")
def test_the_neighbours_of_those_characters_are_written_as_themselves(char: str) -> None:
    """The tab, the last printable ASCII, the first printable Latin-1, and the characters just beside each
    range of bidirectional controls are text, kept as written (a name in Arabic or with a no-break space)."""
    from memcached_gitops.foundation.excerpt import one_line

    assert one_line(f"a{char}b") == f"a{char}b"


@pytest.mark.parametrize("extra", [0, 1, 100])
def test_excerpt_ends_keeps_a_text_at_its_limit_whole_and_cuts_one_past_it_to_the_limit(extra: int) -> None:
    """A tool's error line of EXCERPT_LIMIT characters is shown whole; one character longer, it is cut to exactly
    EXCERPT_LIMIT: its first third, `` … ``, and its end, so no more than that of the input is ever echoed."""
    from memcached_gitops.foundation.excerpt import MIDDLE, excerpt_ends

    text = "".join(chr(0x4E00 + i) for i in range(EXCERPT_LIMIT + extra))
    cut = excerpt_ends(text)
    if not extra:
        assert cut == text
    else:
        head = EXCERPT_LIMIT // 3
        assert cut == text[:head] + MIDDLE + text[-(EXCERPT_LIMIT - len(MIDDLE) - head):] and len(cut) == EXCERPT_LIMIT
