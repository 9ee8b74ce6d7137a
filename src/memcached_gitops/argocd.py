"""The Argo CD Config Management Plugin's side of the contract, as the repo-server really calls it.

The repo-server builds the plugin's environment (argoproj/argo-cd 37ee0097cf, reposerver/repository/
repository.go ``getPluginParamEnvs``; pkg/apis/application/v1alpha1/types.go
``ApplicationSourcePluginParameters.Environ``; tests/delivery/test_argocd_plugin.py cites the lines):

- ``ARGOCD_APP_PARAMETERS`` is ``json.Marshal`` of the Application's ``plugin.parameters``. An
  Application with ``plugin: {}``, or with only ``name`` or ``env``, has a nil list, which Go
  marshals as ``null``; with no ``plugin`` section at all the variable is not set.
- Each parameter is also ``PARAM_<NAME>`` (upper case, every character outside ``A-Z0-9_`` an
  underscore), ``PARAM_<NAME>_<i>`` for an array, ``PARAM_<NAME>_<KEY>`` for a map.
- Each ``plugin.env`` entry is ``ARGOCD_ENV_<name>``.

The cmp-server runs discover's and generate's commands in the application's directory with that
environment (cmpserver/plugin/plugin.go ``runCommand``). Discover matches on a non-empty stdout;
generate's stdout is the manifests, and an empty one is an application with no resources, which an
automated sync with prune empties. So discover and generate decide by one rule (``first_memcached``),
and generate never succeeds with nothing to print.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from memcached_gitops.foundation.excerpt import excerpt, quote_value, shown_path
from memcached_gitops.foundation.files import InputError
from memcached_gitops.foundation.yamlreader import NodeBudget, Readable, TooManyNodes, YAMLInputError, iter_documents
from memcached_gitops.schemas import Validator

from .pipeline import items_of, kind_as_listed

#: The plugin's parameters (plugin.yaml ``parameters.static``) and the plugin env each falls back to.
#: Both are the repository's to set: Argo CD merges the application directory's own
#: ``.argocd-source.yaml`` into the Application (repository.go:1896-1948 ``mergeSourceParameters``, a
#: JSON merge patch that keeps back only chart, path, repoURL and targetRevision), ``plugin.parameters``
#: and ``plugin.env`` included.
PARAMETERS = {"image": "MEMCACHED_IMAGE", "include-input": "INCLUDE_INPUT", "pass-through-kinds": "PASS_THROUGH_KINDS"}
#: Settings that are the sidecar operator's alone: a parameter or plugin env of this name is refused.
OPERATOR_ONLY = {"kustomize-build-options": "KUSTOMIZE_BUILD_OPTIONS"}
#: The sidecar operator's ceiling on what an Application may pass through: comma-separated kinds
#: (``Kind`` of the core group, or ``group/Kind``) it may list in pass-through-kinds, ``*`` for any kind and
#: ``include-input: true``. Unset or empty: none, only the CRs and what they render.
PASS_THROUGH_ENV = "MEMCACHED_GITOPS_PLUGIN_PASS_THROUGH"
#: strconv.ParseBool's words, as Argo CD's own boolean parameters are read.
_TRUE, _FALSE = frozenset(("1", "t", "T", "TRUE", "true", "True")), frozenset(("0", "f", "F", "FALSE", "false", "False"))


class PluginInputError(ValueError):
    """The plugin's environment cannot be read; the message names the variable."""


class PassThrough(NamedTuple):
    """What generate emits besides the rendered Deployments.

    ``crs``: the Memcached CRs themselves (the reconciler and the health check read them);
    ``kinds``: the other objects' kinds let through, ``None`` for every kind.
    """

    crs: bool
    kinds: frozenset[str] | None

    def passes(self, obj: dict[str, Any]) -> bool:
        """Whether an object of another kind goes through: ``group/Kind`` is listed, or for the core group
        (``apiVersion: v1``) its bare ``Kind``. A bare ``Kind`` is never another group's: a repository's
        own CRD may name a kind ``ConfigMap`` in a group of its choosing, and Argo CD's AppProject lists
        spell the core group as ``''`` and every other by its name, as here."""
        return self.kinds is None or kind_as_listed(obj) in self.kinds


def param_env_name(name: str) -> str:
    """``PARAM_<NAME>`` as types.go ``escaped`` spells it: upper case, ``[^A-Z0-9_]`` as ``_``."""
    return "PARAM_" + re.sub(r"[^A-Z0-9_]", "_", name.upper())


def plugin_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """Each of ``PARAMETERS`` the Application sets: a parameter, else its plugin env; unset ones absent.

    Only string parameters exist in plugin.yaml, so an array or a map given for one is an error, and
    so is a parameter the plugin does not declare: a typo (``imag``) would otherwise be a silent
    default in production, where Argo CD passes every parameter the Application lists.
    """
    given = _parameters(environ)
    for name, env in OPERATOR_ONLY.items():
        if param_env_name(name) in environ or "ARGOCD_ENV_" + env in environ:
            raise _operator_only(name)
    settings: dict[str, str] = {}
    for name, env in PARAMETERS.items():
        value = given.get(name, environ.get(param_env_name(name))) or environ.get("ARGOCD_ENV_" + env)
        if value:  # an empty parameter is unset: plugin.yaml's static default for image is ""
            settings[name] = value
    return settings


def _parameters(environ: Mapping[str, str]) -> dict[str, str]:
    raw = environ.get("ARGOCD_APP_PARAMETERS")
    if raw is None or raw.strip() in ("", "null"):  # no plugin section; or plugin: {}, name or env only
        return {}
    try:
        listed = json.loads(raw)
    except ValueError:
        raise PluginInputError(f"ARGOCD_APP_PARAMETERS is not JSON: {quote_value(raw)}") from None
    if not isinstance(listed, list) or not all(isinstance(p, dict) for p in listed):
        raise PluginInputError(f"ARGOCD_APP_PARAMETERS is not the list of parameters Argo CD sends: {quote_value(raw)}")
    out: dict[str, str] = {}
    for param in listed:
        name = param.get("name")  # ``name,omitempty``: a parameter may come without one
        if name in OPERATOR_ONLY:
            raise _operator_only(name)
        if name not in PARAMETERS:
            raise PluginInputError(f"ARGOCD_APP_PARAMETERS: unknown parameter {quote_value(excerpt(str(name)))} "
                                   f"(the plugin's parameters: {', '.join(PARAMETERS)})")
        if "array" in param or "map" in param or not isinstance(param.get("string", ""), str):
            raise PluginInputError(f"ARGOCD_APP_PARAMETERS: parameter {quote_value(name)} must be a string (plugin.yaml declares it so)")
        out[name] = param.get("string", "")
    return out


def _operator_only(name: str) -> PluginInputError:
    return PluginInputError(f"{name}: refused: an Application (and the repository, through .argocd-source.yaml) cannot set "
                            f"it; the sidecar's operator sets MEMCACHED_GITOPS_{OPERATOR_ONLY[name]} in the sidecar's manifest")


def repository_root(environ: Mapping[str, str], app_dir: str) -> str:
    """The root of the checkout the cmp-server unpacked, which kustomize builds stay under.

    The cmp-server unpacks the repository into a fresh work directory and runs generate in
    ``<workdir>/<app path>`` (cmpserver/plugin/plugin.go:237 ``filepath.Join(workDir,
    metadata.AppRelPath)``); ARGOCD_APP_SOURCE_PATH is the Application's path (repository.go newEnv),
    which .argocd-source.yaml cannot change (line 1943). The root is the application directory less
    the longest tail of that path it ends with (with manifest-generate-paths the unpacked tree starts
    lower, at a common root). ``..`` in the path, or a root of ``/``: the application directory.
    """
    app = os.path.realpath(app_dir)
    parts = [p for p in environ.get("ARGOCD_APP_SOURCE_PATH", "").split("/") if p not in ("", ".")]
    tail = app.split(os.sep)
    if ".." in parts:
        return app
    matched = next((n for n in range(len(parts), 0, -1) if tail[-n:] == parts[-n:]), 0)
    root = os.sep.join(tail[:len(tail) - matched])
    return root if matched < len(tail) - 1 and root else app


def _ceiling(text: str | None) -> frozenset[str] | None:
    """The operator's ceiling (``PASS_THROUGH_ENV``): None for any kind, else the kinds allowed."""
    kinds = frozenset(k.strip() for k in (text or "").split(",") if k.strip())
    return None if "*" in kinds else kinds


def pass_through(settings: Mapping[str, str], ceiling: str | None = None) -> PassThrough:
    """``_pass_through`` held to the sidecar operator's ``ceiling`` (``PASS_THROUGH_ENV``).

    ``include-input`` and ``pass-through-kinds`` come from the Application, hence from the repository
    (.argocd-source.yaml): a kind beyond the ceiling, or ``include-input: true`` without ``*``, is
    refused by name rather than let the repository widen what reaches the cluster.
    """
    wanted = _pass_through(settings)
    allowed = _ceiling(ceiling)
    if allowed is None:
        return wanted
    shown = ", ".join(sorted(allowed)) or "none"
    if wanted.kinds is None:
        raise PluginInputError(f"include-input: \"true\" is beyond what the sidecar's operator allows ({PASS_THROUGH_ENV}: "
                               f"{excerpt(shown)}; \"*\" allows it)")
    beyond = sorted(wanted.kinds - allowed)  # a bare Kind is the core group's alone (PassThrough.passes)
    if beyond:
        raise PluginInputError(f"pass-through-kinds: {quote_value(beyond[0])} is beyond what the sidecar's operator allows "
                               f"({PASS_THROUGH_ENV}: {excerpt(shown)})")
    return wanted


def _pass_through(settings: Mapping[str, str]) -> PassThrough:
    """What generate emits besides the Deployments, from ``include-input`` and ``pass-through-kinds``.

    Unset (the default): the Memcached CRs, and other objects only of the kinds listed in
    ``pass-through-kinds`` (``Kind`` of the core group or ``group/Kind``, comma-separated). A repository can then
    never make Argo CD apply a ClusterRoleBinding or an Application through this plugin unless the
    Application's own author listed that kind; Argo CD's AppProject (its ``clusterResourceWhitelist``
    and ``namespaceResourceWhitelist``) stays the guard for what is listed. ``include-input: true``
    lets every object through (the plugin's behaviour before 0.2); ``false`` emits the Deployments alone.
    ``include-input`` is read as Go's strconv.ParseBool reads it.
    """
    value = settings.get("include-input")
    kinds = frozenset(k.strip() for k in settings.get("pass-through-kinds", "").split(",") if k.strip())
    if value is None:
        return PassThrough(True, kinds)
    if value in _TRUE:
        return PassThrough(True, None)
    if value in _FALSE:
        return PassThrough(False, frozenset())
    raise PluginInputError(f"include-input: must be true or false, not {quote_value(excerpt(value))}")


def first_memcached(sources: Iterable[tuple[str, Readable]], validator: Validator, nodes: NodeBudget) -> str | None:
    """The first file holding a document generate would judge as a Memcached, or None.

    Files are those generate reads (the same walk), documents are read as generate reads them, and
    a document counts if the pipeline claims it (the CRD's group, or its kind in any spelling),
    valid or not, so that generate reports what is wrong with it. A file that is not YAML up to
    such a document does not count: a Helm chart's templates must not pull its directory in.
    All files share the run's ``nodes``, as generate's do: spent, the walk ends (InputError), where a
    fresh budget a file let 9 MB of ``[{},…]`` take 14 s of the sidecar that generate refuses in 1.5.
    """
    for name, stream in sources:
        try:
            for doc in iter_documents(stream, nodes):
                if any(validator.claims(obj) for obj, _ in items_of(doc)):
                    return name
        except TooManyNodes as exc:
            raise InputError(f"{shown_path(name)}:{exc.line}:{exc.column}: {exc.message}") from None
        except YAMLInputError:
            continue
    return None
