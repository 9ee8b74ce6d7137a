"""A CRD's ``pattern``, read as the API server reads it: Go's ``regexp`` (RE2 syntax).

kube-openapi checks a string with ``regexp.Compile(pattern)`` and ``re.MatchString(data)``
(pkg/validation/validate/values.go ``Pattern``: an unanchored search), and apiextensions-apiserver
refuses a CRD whose pattern does not compile (validation.go: ``must be a valid regular expression,
but isn't``). The two JSON Schema engines read a pattern otherwise: jsonschema-rs as ECMA-262
(Rust's fancy-regex underneath), the ``jsonschema`` package with Python's ``re``. Where they
differ from RE2 (Go's regexp/syntax documentation, "Perl character classes (all ASCII-only)"):

- ``\\s`` is ``[\\t\\n\\f\\r ]`` in RE2; both engines add ``\\v``, U+00A0 and the other Unicode spaces;
- ``\\d``, ``\\w`` are ASCII in RE2 and ECMA, Unicode in Python (``^\\d+$`` takes "٣" there);
- ``\\b``/``\\B`` are ASCII word boundaries in RE2, Unicode ones in both engines;
- ``.`` is anything but ``\\n`` in RE2; ECMA also refuses ``\\r``, U+2028, U+2029;
- ``$`` is the end of the text in RE2 (like ``\\z``); Python's also matches before a final ``\\n``;
- RE2-only syntax: ``\\z``, ``\\pL``/``\\p{Greek}``, ``[[:alpha:]]``, ``\\Q...\\E``, ``\\x{41}``, octal
  ``\\101``, ``\\a``, a literal ``{`` (``a{,2}``), ``(?<name>...)``, flags in mid-pattern
  (``(?i)``, ``(?-i)``, ``(?s)``, ``(?m)``, ``(?U)``): one engine or the other refuses them or reads them otherwise.

``translate`` parses the RE2 pattern (a small tokenizer that tracks escapes, groups, flags and
character classes, after Go's regexp/syntax parse.go with the Perl flags regexp.Compile sets) and
writes a pattern with RE2's meaning in the dialect of one engine: ``"ecma"`` (jsonschema-rs, and
editors given ``memcached-gitops schema``) or ``"python"``. What reads the same everywhere is
written as it was, so common patterns come out unchanged (but for ``$``, which is ``\\Z`` for
Python). Perl and ASCII classes become explicit sets; ``\\b``/``\\B`` become lookarounds on ``[0-9A-Za-z_]``;
``.`` becomes ``[^\\n]``. ``(?i)`` is applied here, as Go's parser applies it: each letter becomes the
class of its simple case folding orbit, each class is folded before it is negated. ``(?s)`` and
``(?m)`` become explicit classes and lookarounds, so the output never carries a flag, and ``(?U)`` is
dropped (greediness changes which text a match covers, never whether there is one). Unicode
classes are written through for ECMA (``\\p{L}``, ``\\p{Script=Greek}``: jsonschema-rs has the tables)
and computed from ``unicodedata`` for Python.

A pattern RE2 refuses raises PatternError with Go's reason (the API server would refuse the CRD);
so does one it accepts that cannot be written for an engine: a Unicode script for Python, which
has no script property, or under ``(?i)``. Known gaps: the Unicode tables (categories, scripts, case
folding) are Python's or Rust's, not Go's; Go's limit on nested repetitions (``(a{1000}){1000}``) and
on a pattern's size are not checked.
"""

from __future__ import annotations

import unicodedata
from functools import cache

MAX_CODE_POINT = 0x10FFFF
Ranges = list[tuple[int, int]]

#: Go's regexp/syntax doc.go, "Perl character classes (all ASCII-only)"
PERL_CLASSES: dict[str, Ranges] = {
    "d": [(0x30, 0x39)],
    "s": [(0x09, 0x0A), (0x0C, 0x0D), (0x20, 0x20)],
    "w": [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)],
}
#: Go's regexp/syntax doc.go, "ASCII character classes"
POSIX_CLASSES: dict[str, Ranges] = {
    "alnum": [(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)],
    "alpha": [(0x41, 0x5A), (0x61, 0x7A)],
    "ascii": [(0x00, 0x7F)],
    "blank": [(0x09, 0x09), (0x20, 0x20)],
    "cntrl": [(0x00, 0x1F), (0x7F, 0x7F)],
    "digit": [(0x30, 0x39)],
    "graph": [(0x21, 0x7E)],
    "lower": [(0x61, 0x7A)],
    "print": [(0x20, 0x7E)],
    "punct": [(0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)],
    "space": [(0x09, 0x0D), (0x20, 0x20)],
    "upper": [(0x41, 0x5A)],
    "word": [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)],
    "xdigit": [(0x30, 0x39), (0x41, 0x46), (0x61, 0x66)],
}
#: unicode.Categories (Go): the one- and two-letter general categories
CATEGORIES = frozenset(
    "C Cc Cf Co Cs L Ll Lm Lo Lt Lu M Mc Me Mn N Nd Nl No P Pc Pd Pe Pf Pi Po Ps S Sc Sk Sm So Z Zl Zp Zs".split())
DIALECTS = ("ecma", "python")
_WORD = "[0-9A-Za-z_]"
#: RE2's ASCII \b and \B (doc.go: "\w on one side and \W, \A, or \z on the other"), as lookarounds:
#: Python's (?a:\B) would do but for the empty text, where it fails and RE2's holds
_BOUNDARY = f"(?:(?<={_WORD})(?!{_WORD})|(?<!{_WORD})(?={_WORD}))"
_NOT_BOUNDARY = f"(?:(?<={_WORD})(?={_WORD})|(?<!{_WORD})(?!{_WORD}))"
_END = {"ecma": "$", "python": r"\Z"}  # the end of the text (no multiline flag is ever written)
_SYNTAX = set("^$\\.*+?()[]{}|")  # ECMA SyntaxCharacters: a backslash before one is valid everywhere
_CONTROL = {"\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r"}
_CLASS_PLAIN = set("_,.:;!\"#%'<=>@`/ $*+?(){}")  # literal inside a class in every engine


class PatternError(ValueError):
    """A pattern RE2 refuses, or one that cannot be written for an engine."""


def _fail(code: str, arg: str) -> PatternError:
    return PatternError(f"error parsing regexp: {code}: `{arg}`")


@cache
def translate(pattern: str, dialect: str) -> str:
    """The pattern with RE2's meaning in ``dialect`` ("ecma" or "python"); PatternError if none."""
    if dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r}")
    return _Translator(pattern, dialect).run()


# -- sets of code points -----------------------------------------------------------------------


def _normalize(ranges: Ranges) -> Ranges:
    out: Ranges = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _negate(ranges: Ranges) -> Ranges:
    out: Ranges = []
    nxt = 0
    for lo, hi in _normalize(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CODE_POINT:
        out.append((nxt, MAX_CODE_POINT))
    return out


@cache
def _fold_orbits() -> dict[int, tuple[int, ...]]:
    """Each code point with other case forms -> its orbit under simple case folding (the letters
    Go's unicode.SimpleFold cycles through: k, K and U+212A KELVIN SIGN; s, S and U+017F)."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    for cp in range(MAX_CODE_POINT + 1):
        if cp == 0x131:  # the dotless i: only a Turkic folding (CaseFolding.txt status T), which Go leaves out
            continue
        ch = chr(cp)
        for other in (ch.lower(), ch.upper()):
            if len(other) == 1 and other != ch:
                a, b = find(cp), find(ord(other))
                if a != b:
                    parent[a] = b
    orbits: dict[int, list[int]] = {}
    for cp in parent:
        orbits.setdefault(find(cp), []).append(cp)
    for root, members in orbits.items():
        if root not in members:
            members.append(root)
    return {cp: tuple(sorted(members)) for members in orbits.values() for cp in members}


def _fold(ranges: Ranges) -> Ranges:
    """The set closed under case folding (Go's appendFoldedRange)."""
    ranges = _normalize(ranges)
    extra = []
    for cp, orbit in _fold_orbits().items():
        if any(lo <= cp <= hi for lo, hi in ranges):
            extra += [(o, o) for o in orbit]
    return _normalize(ranges + extra)


@cache
def _category(name: str) -> tuple[tuple[int, int], ...]:
    """A Unicode general category (one letter: all its two-letter ones), from unicodedata."""
    out: Ranges = []
    for cp in range(MAX_CODE_POINT + 1):
        if unicodedata.category(chr(cp)).startswith(name):
            out.append((cp, cp))
    return tuple(_normalize(out))


def _is_script(name: str) -> bool:
    """A name of the form of Go's unicode.Scripts (Latin, Old_Italic); whether Go knows it is left
    to the engine that reads it."""
    return len(name) > 2 and name.isascii() and name.replace("_", "").isalpha() and name[0].isupper()


@cache
def _rust_knows_script(name: str) -> bool:
    """Whether jsonschema-rs knows the script (it refuses the whole schema otherwise): a name it does
    not know is taken for one Go does not know either, and refused as Go refuses it."""
    import jsonschema_rs

    if not _is_script(name):
        return False
    try:
        jsonschema_rs.validator_for({"pattern": "\\p{Script=" + name + "}"})
    except jsonschema_rs.ValidationError:
        return False
    return True


# -- writing -----------------------------------------------------------------------------------


def _hex(cp: int, dialect: str) -> str:
    if cp <= 0xFF:
        return f"\\x{cp:02X}"
    if cp <= 0xFFFF:
        return f"\\u{cp:04X}"
    return f"\\U{cp:08X}" if dialect == "python" else f"\\u{{{cp:X}}}"


def _printable(cp: int) -> bool:
    return cp > 0x7F and unicodedata.category(chr(cp))[0] not in "CZ"


def _literal(cp: int, dialect: str) -> str:
    """One character, outside a class."""
    ch = chr(cp)
    if ch in _SYNTAX:
        return "\\" + ch
    if ch.isascii() and (ch.isalnum() or 0x20 <= cp < 0x7F) or _printable(cp):
        return ch
    return _CONTROL.get(ch) or _hex(cp, dialect)


def _class_char(cp: int, dialect: str) -> str:
    """One character, inside a class."""
    ch = chr(cp)
    if ch.isascii() and ch.isalnum() or ch in _CLASS_PLAIN or _printable(cp):
        return ch
    if ch in "\\]^-[|":
        return "\\" + ch
    return _CONTROL.get(ch) or _hex(cp, dialect)  # & and ~ too: Python warns of set operations


def _class_body(ranges: Ranges, dialect: str) -> str:
    parts = []
    for lo, hi in _normalize(ranges):
        if lo == hi:
            parts.append(_class_char(lo, dialect))
        elif hi == lo + 1:
            parts.append(_class_char(lo, dialect) + _class_char(hi, dialect))
        else:
            parts.append(_class_char(lo, dialect) + "-" + _class_char(hi, dialect))
    return "".join(parts)


def _class(ranges: Ranges, dialect: str) -> str:
    """A set as a class (the shorter of it and its negation); an empty set matches nothing."""
    ranges = _normalize(ranges)
    if not ranges:
        return "(?!)" if dialect == "python" else "[^\\s\\S]"
    if ranges == [(0, MAX_CODE_POINT)]:
        return "[\\s\\S]"
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _literal(ranges[0][0], dialect)
    negated = _negate(ranges)
    if sum(hi - lo for lo, hi in negated) < sum(hi - lo for lo, hi in ranges):
        return "[^" + _class_body(negated, dialect) + "]"
    return "[" + _class_body(ranges, dialect) + "]"


class _Through(Exception):
    """A Unicode class written through for ECMA (``\\p{L}``, ``\\p{Script=Greek}``)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


# -- the parser --------------------------------------------------------------------------------


class _Translator:
    """One pass over an RE2 pattern (Go's regexp/syntax parse.go, with the Perl flags of
    regexp.Compile), writing the output as it goes."""

    def __init__(self, pattern: str, dialect: str) -> None:
        self.p, self.d, self.i = pattern, dialect, 0
        self.out: list[str] = []
        self.flags: set[str] = set()
        self.stack: list[tuple[set[str], int]] = []  # the flags outside each open group, and where it starts
        #: where the last atom starts in ``out``; None after ``(`` and ``|``; "quant" after a repetition
        self.atom: int | str | None = None
        self.atom_is_assertion = False  # or a repetition: wrapped in a group before it is repeated
        self.last_repeat = self.quant_start = 0

    def peek(self, n: int = 0) -> str:
        j = self.i + n
        return self.p[j] if j < len(self.p) else ""

    def emit_atom(self, text: str, assertion: bool = False) -> None:
        self.atom = len(self.out)
        self.atom_is_assertion = assertion
        self.out.append(text)

    def emit_set(self, ranges: Ranges) -> None:
        self.emit_atom(_class(ranges, self.d))

    def emit_char(self, cp: int) -> None:
        if "i" in self.flags and cp in _fold_orbits():
            self.emit_set(_fold([(cp, cp)]))
        else:
            self.emit_atom(_literal(cp, self.d))

    def run(self) -> str:
        p = self.p
        while self.i < len(p):
            c = p[self.i]
            if c == "(":
                self.open_group()
            elif c == ")":
                if not self.stack:
                    raise _fail("unexpected )", p)
                self.flags, group_start = self.stack.pop()
                self.out.append(")")
                self.atom, self.atom_is_assertion = group_start, False
                self.i += 1
            elif c == "|":
                self.out.append("|")
                self.atom = None
                self.i += 1
            elif c in "*+?":
                self.repeat(c, self.i + 1)
            elif c == "{":
                self.brace()
            elif c == "[":
                self.char_class()
            elif c == "\\":
                self.escape()
            elif c == ".":
                self.i += 1
                self.emit_atom("[\\s\\S]" if "s" in self.flags else "[^\\n]")
            elif c == "^":
                self.i += 1
                self.emit_atom("(?:^|(?<=\\n))" if "m" in self.flags else "^", assertion=True)
            elif c == "$":
                self.i += 1
                end = _END[self.d]
                self.emit_atom(f"(?:{end}|(?=\\n))" if "m" in self.flags else end, assertion=True)
            else:
                self.i += 1
                self.emit_char(ord(c))
        if self.stack:
            raise _fail("missing closing )", p)
        return "".join(self.out)

    def open_group(self) -> None:
        """``(``, ``(?:``, ``(?P<name>``, ``(?<name>``, ``(?flags)``, ``(?flags:`` (Go's parsePerlFlags)."""
        p, start = self.p, self.i
        self.i += 1
        if self.peek() == "?":
            # a look-behind is read as a named capture (Go 1.22+ takes ``(?<name>``): "invalid named capture"
            if p.startswith("?P<", self.i) or p.startswith("?<", self.i):
                self.i += 3 if p[self.i + 1] == "P" else 2
                end = p.find(">", self.i)
                name = p[self.i:end] if end >= 0 else ""
                if end < 0 or not name or not all(ch == "_" or (ch.isascii() and ch.isalnum()) for ch in name):
                    raise _fail("invalid named capture", p[start:end + 1 if end >= 0 else len(p)])
                self.i = end + 1
            else:
                self.i += 1
                sign, seen, flags = 1, False, set(self.flags)
                while True:
                    ch = self.peek()
                    if ch in ("i", "m", "s", "U"):
                        (flags.add if sign > 0 else flags.discard)(ch)
                        seen = True
                    elif ch == "-" and sign > 0:
                        sign, seen = -1, False
                    elif ch in (":", ")") and (seen or sign > 0):
                        break
                    else:
                        raise _fail("invalid or unsupported Perl syntax", p[start:self.i + 1])
                    self.i += 1
                self.i += 1
                if ch == ")":  # (?flags): to the end of the enclosing group
                    self.flags = flags
                    if self.atom == "quant":  # Go: a repetition may follow, and repeats the repetition
                        self.atom, self.atom_is_assertion = self.quant_start, True
                    return
                self.stack.append((self.flags, len(self.out)))
                self.flags = flags
                self.out.append("(?:")
                self.atom = None
                return
        self.stack.append((self.flags, len(self.out)))
        self.out.append("(")  # a name means nothing to a match, and the engines spell it otherwise
        self.atom = None

    def repeat(self, op: str, after: int) -> None:
        text = self.p[self.i:after]
        if self.atom is None:
            raise _fail("missing argument to repetition operator", text)
        if self.atom == "quant":
            raise _fail("invalid nested repetition operator", self.p[self.last_repeat:after])
        assert isinstance(self.atom, int)
        # ECMA and Python refuse to repeat an assertion (or a repetition); jsonschema-rs refuses to repeat
        # a non-capturing group that is empty or holds a lookbehind, and takes a capturing one
        opener = "(" if self.d == "ecma" else "(?:"
        if self.atom_is_assertion:
            self.out[self.atom:] = [opener, *self.out[self.atom:], ")"]
        elif self.out[self.atom] == "(?:":
            self.out[self.atom] = opener
        self.last_repeat, self.quant_start = self.i, self.atom
        self.i = after
        if self.peek() == "?":
            text += "?"
            self.i += 1
        self.out.append(text)
        self.atom = "quant"

    def brace(self) -> None:
        """``{n}``, ``{n,}``, ``{n,m}`` (at most 1000); any other ``{`` is a literal (``a{,2}``)."""
        p = self.p
        end = p.find("}", self.i)
        body = p[self.i + 1:end] if end > 0 else ""
        low, _, high = body.partition(",")
        if end < 0 or not (low.isdigit() and low.isascii()) or (high and not (high.isdigit() and high.isascii())):
            self.i += 1
            self.emit_char(ord("{"))
            return
        if int(low) > 1000 or (high and (int(high) > 1000 or int(high) < int(low))):
            raise _fail("invalid repeat count", p[self.i:end + 1])
        self.repeat("{", end + 1)

    def escape(self) -> None:
        p = self.p
        c = self.peek(1)
        if c == "":
            raise _fail("trailing backslash at end of expression", "")
        if c in "AzbB":
            self.i += 2
            written = {"A": "^", "z": _END[self.d], "b": _BOUNDARY, "B": _NOT_BOUNDARY}[c]
            self.emit_atom(written, assertion=True)
        elif c == "Q":  # literal text up to \E or the end
            end = p.find("\\E", self.i + 2)
            text = p[self.i + 2:] if end < 0 else p[self.i + 2:end]
            self.i = len(p) if end < 0 else end + 2
            for ch in text:
                self.emit_char(ord(ch))
        elif c in "dDsSwWpP":
            try:
                self.emit_set(self.class_escape())
            except _Through as through:
                self.emit_atom(through.text)
        else:
            self.emit_char(self.char_escape())

    def class_escape(self) -> Ranges:
        """\\d \\D \\s \\S \\w \\W \\pN \\p{Name} \\PN \\P{Name}: the set, folded under ``(?i)`` before
        it is negated, as Go's appendGroup does (``(?i)\\W`` takes neither ``k`` nor U+212A); a Unicode
        class is written through for ECMA where no folding applies (unicode_class)."""
        c = self.peek(1)
        if c.lower() in PERL_CLASSES:
            self.i += 2
            return self.group(PERL_CLASSES[c.lower()], c.isupper())
        return self.unicode_class()

    def group(self, ranges: Ranges, negated: bool) -> Ranges:
        if "i" in self.flags:
            ranges = _fold(ranges)
        return _negate(ranges) if negated else list(ranges)

    def unicode_class(self) -> Ranges:
        p, start = self.p, self.i
        negated = p[self.i + 1] == "P"
        self.i += 2
        if self.peek() == "{":
            end = p.find("}", self.i)
            if end < 0:
                raise _fail("invalid character class range", p[start:])
            name = p[self.i + 1:end]
            self.i = end + 1
        elif self.peek():
            name = self.peek()
            self.i += 1
        else:
            raise _fail("invalid character class range", p[start:])
        if name.startswith("^"):
            negated, name = not negated, name[1:]
        if name == "Any":
            return self.group([(0, MAX_CODE_POINT)], negated)
        if self.d == "ecma" and "i" not in self.flags and (name in CATEGORIES or _rust_knows_script(name)):
            # written through: jsonschema-rs has Unicode's tables (Rust's), as Go has its own
            prop = name if name in CATEGORIES else "Script=" + name
            raise _Through(("\\P" if negated else "\\p") + "{" + prop + "}")
        if name in CATEGORIES:
            return self.group(list(_category(name)), negated)
        if _is_script(name) and _rust_knows_script(name):
            raise PatternError(f"`{p[start:self.i]}` is a Unicode script, which this engine cannot read")
        raise _fail("invalid character class range", p[start:self.i])

    def char_escape(self) -> int:
        """One escaped character (Go's parseEscape); advances past it."""
        p, start = self.p, self.i
        c = p[self.i + 1]
        self.i += 2
        if c in "1234567" and not ("0" <= self.peek() <= "7"):  # a backreference: RE2 has none
            raise _fail("invalid escape sequence", p[start:self.i])
        if "0" <= c <= "7":  # octal, up to three digits
            value = int(c)
            for _ in range(2):
                if "0" <= self.peek() <= "7":
                    value = value * 8 + int(self.peek())
                    self.i += 1
            return value
        if c == "x":
            hexdigits = "0123456789abcdefABCDEF"
            if self.peek() == "{":  # Go's parseEscape: the refusal quotes the text read up to the character that broke it
                i, value, count = self.i + 1, 0, 0
                while True:
                    if i >= len(p):
                        raise _fail("invalid escape sequence", p[start:i])
                    ch, i = p[i], i + 1
                    if ch == "}":
                        break
                    if ch not in hexdigits:
                        raise _fail("invalid escape sequence", p[start:i])
                    value, count = value * 16 + int(ch, 16), count + 1
                    if value > MAX_CODE_POINT:
                        raise _fail("invalid escape sequence", p[start:i])
                if not count:
                    raise _fail("invalid escape sequence", p[start:i])
                self.i = i
                return value
            digits = p[self.i:self.i + 2]
            if len(digits) < 2 or not all(ch in hexdigits for ch in digits):
                raise _fail("invalid escape sequence", p[start:self.i + 2])
            self.i += 2
            return int(digits, 16)
        simple = {"a": 7, "f": 12, "t": 9, "n": 10, "r": 13, "v": 11}
        if c in simple:
            return simple[c]
        if c.isascii() and not c.isalnum():  # any ASCII punctuation stands for itself
            return ord(c)
        raise _fail("invalid escape sequence", p[start:self.i])

    def char_class(self) -> None:
        """A bracketed class (Go's parseClass, Perl flags: ``-`` is literal where no range can be,
        ``]`` first is literal, ``[:name:]`` is an ASCII class). Written item by item, so that
        ``[-a-z0-9]`` stays as it is; as one computed set under ``(?i)``."""
        p, start = self.p, self.i
        self.i += 1
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        ranges: Ranges = []
        items: list[str] = []  # the output, item by item
        first = True
        while True:
            if self.i >= len(p):
                raise _fail("missing closing ]", p[start:])
            c = p[self.i]
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if p.startswith("[:", self.i) and (end := p.find(":]", self.i + 2)) >= 0:
                name = p[self.i + 2:end]
                bare = name.removeprefix("^")
                if bare not in POSIX_CLASSES:
                    raise _fail("invalid character class range", p[self.i:end + 2])
                found = self.group(POSIX_CLASSES[bare], name.startswith("^"))
                ranges += found
                items.append(_class_body(found, self.d))
                self.i = end + 2
                continue
            if c == "\\" and self.peek(1) and self.peek(1) in "dDsSwWpP":
                try:
                    found = self.class_escape()
                except _Through as through:
                    items.append(through.text)
                    continue
                ranges += found
                items.append(_class_body(found, self.d))
                continue
            lo = self.class_char()
            hi = lo
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                hi = self.class_char()
                if hi < lo:
                    raise _fail("invalid character class range", f"{chr(lo)}-{chr(hi)}")
            ranges += self.group([(lo, hi)], False)
            if lo == hi:
                items.append(_class_char(lo, self.d))
            else:
                items.append(_class_char(lo, self.d) + "-" + _class_char(hi, self.d))
        if "i" in self.flags:  # each item is folded already
            self.emit_atom(_class(_negate(ranges) if negated else ranges, self.d))
            return
        for k in (0, len(items) - 1):  # a hyphen first or last reads as itself everywhere
            if items[k] == "\\-":
                items[k] = "-"
        self.emit_atom(("[^" if negated else "[") + "".join(items) + "]")

    def class_char(self) -> int:
        if self.peek() == "\\":
            if self.peek(1) == "":
                raise _fail("trailing backslash at end of expression", "")
            return self.char_escape()
        cp = ord(self.peek())
        self.i += 1
        return cp
