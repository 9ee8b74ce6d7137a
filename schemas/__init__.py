"""The Memcached CRD (the single source of truth) and the validator derived from it.

Pure: no I/O beyond reading the CRD file, and no import of the kubernetes client.
"""

from .crd import CRD, CRDError, load_crd
from .validator import Outcome, Problem, Validator, format_path

__all__ = ["CRD", "CRDError", "Outcome", "Problem", "Validator", "format_path", "load_crd"]
