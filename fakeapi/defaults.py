"""What kube-apiserver fills in and rewrites on a Deployment (apps/v1 SetDefaults_Deployment,
core/v1 SetDefaults_PodSpec/Container/Probe, resource.Quantity canonical form), as transcript 01
and 25 show it."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

_QUANTITY = re.compile(r"^([+-]?[0-9.]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {v: k for k, v in _DECIMAL.items()}


def canonical_quantity(text: Any) -> Any:
    """``0.1`` -> ``100m``, ``65536Ki`` -> ``64Mi``, ``1.5Gi`` -> ``1536Mi``, ``67108864`` stays."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = str(text)
    if not isinstance(text, str):
        return text
    m = _QUANTITY.match(text.strip())
    if not m:
        return text
    number, suffix = Fraction(m.group(1)), m.group(2) or ""
    if suffix in _BINARY:
        value = number * 1024 ** _BINARY[suffix]
        if value.denominator == 1:
            n, power = value.numerator, 0
            while n and n % 1024 == 0 and power < 6:
                n //= 1024
                power += 1
            return f"{n}{[k for k, v in _BINARY.items() if v == power][0] if power else ''}"
        suffix = ""
        number = value
    elif suffix[:1] in ("e", "E") and len(suffix) > 1:
        return text
    else:
        number *= Fraction(10) ** _DECIMAL[suffix]
    best = -9
    for exp in range(18, -10, -3):
        if (number / Fraction(10) ** exp).denominator == 1:
            best = exp
            break
    mantissa = number / Fraction(10) ** best
    if mantissa.denominator != 1:  # smaller than 1n: rounded up, as the server does
        mantissa = Fraction(-(-mantissa.numerator // mantissa.denominator))
    return f"{mantissa.numerator}{_DECIMAL_SUFFIX[best]}"


def quantity_value(text: Any) -> Any:
    """The number a quantity stands for, so that ``64Mi`` equals ``67108864`` (Semantic.DeepEqual)."""
    m = _QUANTITY.match(str(text).strip()) if isinstance(text, (str, int, float)) else None
    if not m:
        return text
    number, suffix = Fraction(m.group(1)), m.group(2) or ""
    if suffix in _BINARY:
        return number * 1024 ** _BINARY[suffix]
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return number * Fraction(10) ** int(suffix[1:])
    return number * Fraction(10) ** _DECIMAL[suffix]


def semantic(value: Any, key: str = "") -> Any:
    """A copy in which resource quantities are numbers (for generation and no-op comparisons)."""
    if isinstance(value, dict):
        if key in ("limits", "requests"):
            return {k: quantity_value(v) for k, v in value.items()}
        return {k: semantic(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [semantic(v) for v in value]
    return value


def _probe(p: dict[str, Any]) -> None:
    for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1), ("failureThreshold", 3)):
        p.setdefault(key, value)


def _container(c: dict[str, Any]) -> None:
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    image = str(c.get("image", ""))
    tag = image.rsplit("/", 1)[-1].partition(":")[2] if "@" not in image else "digest"
    c.setdefault("imagePullPolicy", "Always" if tag in ("", "latest") else "IfNotPresent")
    for port in c.get("ports") or []:
        port.setdefault("protocol", "TCP")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if isinstance(c.get(probe), dict):
            _probe(c[probe])
    resources = c.setdefault("resources", {})
    for section in ("limits", "requests"):
        if isinstance(resources.get(section), dict):
            resources[section] = {k: canonical_quantity(v) for k, v in resources[section].items()}


def default_deployment(obj: dict[str, Any]) -> dict[str, Any]:
    """Fill in defaults in place and return ``obj``."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    template = spec.setdefault("template", {})
    pod = template.setdefault("spec", {})
    for c in pod.get("containers") or []:
        if isinstance(c, dict):
            _container(c)
    for c in pod.get("initContainers") or []:
        if isinstance(c, dict):
            _container(c)
    pod.setdefault("restartPolicy", "Always")
    pod.setdefault("terminationGracePeriodSeconds", 30)
    pod.setdefault("dnsPolicy", "ClusterFirst")
    pod.setdefault("securityContext", {})
    pod.setdefault("schedulerName", "default-scheduler")
    obj.setdefault("status", {})
    return obj


def order_deployment(obj: dict[str, Any]) -> dict[str, Any]:
    """Struct field order of the Go types (kind, apiVersion, metadata, spec, status): built-in
    objects come back in that order (transcript README), which JSON comparisons ignore anyway."""
    return {k: obj[k] for k in ("kind", "apiVersion", "metadata", "spec", "status") if k in obj} | {
        k: v for k, v in obj.items() if k not in ("kind", "apiVersion", "metadata", "spec", "status")
    }


def default_service(obj: dict[str, Any]) -> dict[str, Any]:
    """core/v1 SetDefaults_Service, as transcript 42 shows it: type ClusterIP, sessionAffinity None,
    internalTrafficPolicy Cluster, each port's protocol TCP and targetPort its port. (The cluster IP,
    families and status come later, from the registry: Admission._allocate.) Recorded: a ClusterIP
    Service's (42). Assumed from the Go defaults, not recorded: internalTrafficPolicy on NodePort and
    LoadBalancer Services, and targetPort filled from port."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] in ("ClusterIP", "NodePort", "LoadBalancer"):
        spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
    return obj
