"""Repository layouts the entry points meet (a kustomization at the root, an overlay below it, files
named like options, an application below the root), each with a fault a validator must name."""

from __future__ import annotations

from pathlib import Path

CR = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n  name: {name}\nspec:\n  size: 2\n"


BAD_CR = CR.replace("  size: 2\n", "  size: 2\n  sizee: 3\n")


PATCH = """patches:
  - target: {kind: Memcached}
    patch: |-
      - op: add
        path: /spec/sizee
        value: 3
"""


KUSTOMIZATION = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [{resources}]\n"


FAULT = "sizee"


#: name -> the files (path -> text)
LAYOUTS: dict[str, dict[str, str]] = {
    "a kustomization at the root": {"kustomization.yaml": KUSTOMIZATION.format(resources="cr.yaml") + PATCH,
                                    "cr.yaml": CR.format(name="a")},
    "an overlay below the root": {"base/cr.yaml": CR.format(name="a"), "base/kustomization.yaml": KUSTOMIZATION.format(resources="cr.yaml"),
                                  "overlays/prod/kustomization.yaml": KUSTOMIZATION.format(resources="../../base") + PATCH},
    "files named like options": {"-o.yaml": BAD_CR.format(name="o"), "--crd=x.yaml": CR.format(name="x"), "good.yaml": CR.format(name="g")},
    "an application below the root": {"apps/caches/kustomization.yaml": KUSTOMIZATION.format(resources="cr.yaml") + PATCH,
                                      "apps/caches/cr.yaml": CR.format(name="a"),
                                      "notes.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\n"},
}


def lay_out(root: Path, layout: str, faulty: bool = True) -> Path:
    for name, text in LAYOUTS[layout].items():
        if not faulty:
            text = text.replace(PATCH, "").replace("  sizee: 3\n", "")
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root
