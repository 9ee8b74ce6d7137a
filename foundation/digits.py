"""Whole numbers as Kubernetes writes them: ASCII digits only.

``str.isdigit`` is true of every Unicode digit ("²", "٣", "３"); ``int()`` refuses some of them
(ValueError) and reads others as another number. A check with ``isdigit`` before ``int()`` therefore
lets a hostile file, annotation or option raise out of its caller. A resourceVersion, an RFC 6901 array
index, a KRM ``config.kubernetes.io/index`` and a quantity's digits are all ASCII.
"""

from __future__ import annotations


def is_digits(text: str) -> bool:
    """``text`` is one or more ASCII digits, a whole number ``int()`` reads as written."""
    return text.isascii() and text.isdigit()
