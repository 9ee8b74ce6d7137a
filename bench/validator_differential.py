"""Many random CR texts through a real kube-apiserver and through the validator; print the disagreements.

The test (tests/real_cluster/test_validator_real_apiserver.py) runs a few dozen cases; this runs thousands, two
kubectl processes at a time, and prints how many cases ran, how fast, and every disagreement
(grouped by the server's first words, with the shortest text of each group).

    .venv/bin/python bench/validator_differential.py --kubeconfig ~/.realk8s/kubeconfig --cases 3000 --seed 1
    .venv/bin/python bench/validator_differential.py ... --verb apply      # kubectl apply instead of create
    .venv/bin/python bench/validator_differential.py ... --grammar crs     # CR texts only (tests/cr_texts.py)

The texts come from ``tests/stream_texts.py`` by default (``--grammar streams``): streams of bytes
around the CR documents (lists, tags, encodings, JSON runs), a ninth of them CR texts of
``tests/cr_texts.py``; ``--grammar crs`` draws only those.

Each case costs one kubectl run (~0.1 s); ``--out FILE`` writes the disagreements as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from memcached_gitops.schemas import Validator, load_crd  # noqa: E402

from tests.cr_texts import cr_texts  # noqa: E402
from tests.differential import compare, count_documents, our_verdict, prepare_cluster, server_verdict, shown  # noqa: E402
from tests.stream_texts import stream_texts  # noqa: E402

GRAMMARS = {"streams": stream_texts, "crs": cr_texts}


def generate(cases: int, seed_value: int, grammar: str = "streams") -> list[str | bytes]:
    """``cases`` distinct texts from the strategy, reproducibly for a seed."""
    texts: dict[str | bytes, None] = {}

    @seed(seed_value)
    @settings(max_examples=cases * 2, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(GRAMMARS[grammar]())
    def collect(text: str | bytes) -> None:
        if len(texts) < cases:
            texts[text] = None

    collect()
    return list(texts)


def _group(message: str) -> str:
    text = re.sub(r'"[^"]*"', '"…"', message.strip().splitlines()[0] if message.strip() else "(nothing)")
    return re.sub(r"\d+", "N", text)[:160]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", default=os.environ.get("MEMCACHED_GITOPS_E2E_KUBECONFIG"))
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--verb", choices=("create", "apply"), default="create")
    parser.add_argument("--grammar", choices=sorted(GRAMMARS), default="streams",
                        help="streams (default: tests/stream_texts.py) or crs (tests/cr_texts.py)")
    parser.add_argument("--out", help="write each disagreement as a JSON line")
    args = parser.parse_args()
    if not args.kubeconfig:
        parser.error("--kubeconfig (or MEMCACHED_GITOPS_E2E_KUBECONFIG) is required")
    prepare_cluster(args.kubeconfig)
    validator = Validator(load_crd())
    started = time.monotonic()
    texts = generate(args.cases, args.seed, args.grammar)
    generated = time.monotonic()

    def one(text: str | bytes):
        server = server_verdict(text, args.kubeconfig, args.verb)
        return compare(text, our_verdict(text, validator), server, count_documents(text)), server.accepted

    with ThreadPoolExecutor(args.workers) as pool:
        results = list(pool.map(one, texts))
    finished = time.monotonic()
    found = [d for d, _ in results if d]
    accepted = sum(1 for _, ok in results if ok)
    groups = defaultdict(list)
    for d in found:
        groups[(d.kind, d.ours.accepted, _group(d.server.text))].append(d)
    for (kind, ours, words), items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        shortest = min(items, key=lambda d: len(d.text))
        print(f"== {len(items)} x {kind} (ours accepted={ours}): {words}\n{shortest.describe()}\n")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            for d in found:
                f.write(json.dumps({"kind": d.kind, "text": shown(d.text), "ours": d.ours.text, "server": d.server.text,
                                    "ours_accepted": d.ours.accepted, "server_accepted": d.server.accepted}) + "\n")
    print(f"{len(texts)} cases (grammar {args.grammar}, seed {args.seed}, kubectl {args.verb} --dry-run=server --validate=strict): "
          f"{accepted} accepted by the server, {len(found)} disagreements in {len(groups)} groups; "
          f"generated in {generated - started:.1f} s, checked in {finished - generated:.1f} s "
          f"({len(texts) / max(finished - generated, 1e-9):.1f} cases/s)")
    print("command: " + " ".join([sys.executable, *sys.argv]))
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
