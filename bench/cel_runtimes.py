"""Which CEL runtime judges the CRD's rules: cel-python (pure Python, a Lark parser) against the
compiled runtimes on the package index, ``common-expression-language`` (Rust bindings, import
``cel``) and ``cel-expr-python`` (Google's C++ runtime, import ``cel_expr_python``).

Run:  python bench/cel_runtimes.py [--runs 5]
in a venv that has memcached-gitops and whichever of the three runtimes it compares (a runtime that
is not installed is reported so, not skipped silently):
    python -m venv /tmp/cel && /tmp/cel/bin/pip install --no-cache-dir . cel-python \\
        common-expression-language cel-expr-python && /tmp/cel/bin/python bench/cel_runtimes.py

For each runtime it prints: the import time (median of fresh processes), the time to compile the
CRD's seven rules, the time of one evaluation of every rule on every sample value (mean over the
corpus), and the number of verdicts that differ from cel-python's, the runtime this repository
checks against the API server's recorded answers (tests/schemas/test_cel_rules.py, tests/differential.py).
The Kubernetes quantity library is given to each compiled runtime as functions over the quantity's
text (parsed by schemas/quantities.py each call): neither can hold a Python object as a CEL value
(cel-expr-python refuses an abstract type, "UNIMPLEMENTED: Unimplemented type"), so ``quantity(s)``
there is its text and ``compareTo`` parses both sides. Lists (``all``), strings (``startsWith``,
``contains``) and ``in`` are each runtime's own. Not a test: nothing here asserts a figure.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

RUNTIMES = {"cel-python": "celpy", "common-expression-language": "cel", "cel-expr-python": "cel_expr_python.cel"}


def crd_rules() -> list[tuple[str, str]]:
    """(where, rule) of every x-kubernetes-validations rule of the shipped CRD under spec.resources."""
    import yaml
    from memcached_gitops.schemas.crd import builtin_crd_text

    crd = yaml.safe_load(builtin_crd_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["resources"]
    rules = [("resources", r["rule"]) for r in schema["x-kubernetes-validations"]]
    for part in ("limits", "requests"):
        rules += [(part, r["rule"]) for r in schema["properties"][part]["x-kubernetes-validations"]]
    return rules


def corpus() -> Iterator[dict[str, Any]]:
    """spec.resources values: valid, negative, below 48Mi, request above limit, odd keys, non-quantities."""
    quantities = ["100m", "1", "2", "-1", "32Mi", "48Mi", "64Mi", "1Gi", "0.5Gi", "1e3", "abc", 3, 50331648]
    keys = ["cpu", "memory", "hugepages-2Mi", "example.com/gpu", "gpu"]
    for (lk, lv), (rk, rv) in itertools.product(itertools.product(keys[:2], quantities), repeat=2):
        yield {"limits": {lk: lv}, "requests": {rk: rv}}
    for key in keys:
        yield {"limits": {key: "1"}}
        yield {"requests": {key: "64Mi"}}


def node(value: dict[str, Any], where: str) -> Any:
    return value if where == "resources" else value.get(where)


def _quantity_functions() -> dict[str, Callable[..., Any]]:
    """The quantity library over texts, for the compiled runtimes."""
    from memcached_gitops.schemas.quantities import strict_quantity

    def parsed(text: str) -> Any:
        value = strict_quantity(text)
        if value is None:
            raise ValueError("quantities must match the regular expression")
        return value

    def compare(a: str, b: str) -> int:
        x, y = parsed(a), parsed(b)
        return (x > y) - (x < y)

    return {"quantity": lambda s: (parsed(s), s)[1], "isQuantity": lambda s: strict_quantity(s) is not None,
            "compareTo": compare, "sign": lambda s: (parsed(s) > 0) - (parsed(s) < 0)}


def compile_celpy(rules: list[str]) -> Callable[[int, Any], Any]:
    import celpy
    from celpy.adapter import json_to_cel
    from memcached_gitops.schemas.cel_quantity import FUNCTIONS

    env = celpy.Environment()
    programs = [env.program(env.compile(r), functions=FUNCTIONS) for r in rules]  # type: ignore[arg-type]
    return lambda i, value: programs[i].evaluate({"self": json_to_cel(value)})


def compile_rust(rules: list[str]) -> Callable[[int, Any], Any]:
    import cel

    functions = _quantity_functions()
    programs = [cel.compile(r) for r in rules]

    def run(i: int, value: Any) -> Any:
        context = cel.Context(variables={"self": value})
        for name, function in functions.items():
            context.add_function(name, function)
        return programs[i].execute(context)

    return run


def compile_cpp(rules: list[str]) -> Callable[[int, Any], Any]:
    from cel_expr_python import cel

    f = _quantity_functions()
    s, i64, b = cel.Type.STRING, cel.Type.INT, cel.Type.BOOL
    decls = [cel.FunctionDecl("quantity", [cel.Overload("quantity_string", s, [s], impl=f["quantity"])]),
             cel.FunctionDecl("isQuantity", [cel.Overload("is_quantity_string", b, [s], impl=f["isQuantity"])]),
             cel.FunctionDecl("compareTo", [cel.Overload("quantity_compare", i64, [s, s], is_member=True, impl=f["compareTo"])]),
             cel.FunctionDecl("sign", [cel.Overload("quantity_sign", i64, [s], is_member=False, impl=f["sign"])])]
    env = cel.NewEnv(variables={"self": cel.Type.DYN}, functions=decls)
    programs = [env.compile(r) for r in rules]
    return lambda i, value: programs[i].eval(data={"self": value}).value()


COMPILERS = {"cel-python": compile_celpy, "common-expression-language": compile_rust, "cel-expr-python": compile_cpp}


def verdict(run: Callable[[int, Any], Any], i: int, value: Any) -> str:
    """true, false, or error: what decides a rule's outcome on the server."""
    try:
        result = run(i, value)
    except Exception:
        return "error"
    if isinstance(result, Exception):
        return "error"
    return "true" if result is True or (not isinstance(result, str) and result == True) else "false"  # noqa: E712


def import_seconds(module: str, runs: int) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    return statistics.median(float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                  check=True).stdout) for _ in range(runs))


def measure(name: str, runs: int, reference: dict[tuple[int, str], str] | None) -> dict[tuple[int, str], str]:
    rules = crd_rules()
    started = time.perf_counter()
    try:
        run = COMPILERS[name]([r for _, r in rules])
    except ImportError:
        print(f"{name:28} not installed")
        return {}
    except Exception as exc:
        print(f"{name:28} cannot compile the CRD's rules: {str(exc).splitlines()[0][:120]}")
        return {}
    compiled = time.perf_counter() - started
    values = list(corpus())
    verdicts: dict[tuple[int, str], str] = {}
    started = time.perf_counter()
    for i, (where, _) in enumerate(rules):
        for value in values:
            if node(value, where) is not None:
                verdicts[(i, json.dumps(value))] = verdict(run, i, node(value, where))
    per = (time.perf_counter() - started) / max(len(verdicts), 1)
    differ = sum(verdicts[k] != v for k, v in (reference or {}).items())
    counts = ", ".join(f"{n} {w}" for w in ("true", "false", "error") for n in [list(verdicts.values()).count(w)])
    print(f"{name:28} import {import_seconds(RUNTIMES[name], runs):.3f} s, first import and compile of the rules {compiled * 1000:.0f} ms, "
          f"{per * 1e6:.0f} us an evaluation ({counts}), differs from cel-python in {differ}")
    return verdicts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    reference = measure("cel-python", args.runs, None)
    for name in ("common-expression-language", "cel-expr-python"):
        measure(name, args.runs, reference)
    print("wheels (pip download --only-binary=:all: --platform ...): cel-expr-python 0.1.3 has none for Linux aarch64 "
          "and no sdist, so `pip install .` would fail there; cel-python is pure Python")
    print(f"command: {sys.executable} bench/cel_runtimes.py --runs {args.runs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
