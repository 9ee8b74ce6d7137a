"""Record transcript 43: how kube-apiserver stores container resource quantities (a server-side dry
run of one Pod whose containers carry 167 quantities: canonical spellings, the texts
ParseQuantity keeps, rounding to milli units). render/sizing.py's canonical_quantity follows it;
tests/render/test_sizing.py replays it offline.

    python -m tests.record_quantities KUBECONFIG    # writes tests/fixtures/apiserver-transcripts/43-*.json
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent / "fixtures" / "apiserver-transcripts"
KUBECTL_UA = "kubectl/v1.37.1 (linux/amd64) kubernetes/$Format"


def quantities(seed: int = 11) -> list[str]:
    rnd = random.Random(seed)
    suffixes = ["", "Ki", "Mi", "Gi", "Ti", "m", "k", "M", "G", "n", "u"]
    values = ["0.1", "67108864", "65536Ki", "1000m", "1.5Gi", "1Gi", "1024Mi", "512Mi", "500m", "2", "1.5", "0.5Gi", "1536",
              "1.5Ki", "100", "0", "1500k", "1M", "1Ti", "0.0000000001", "1023", "1024", "2048Ki", "0.001", "1000000",
              "123456789", "1.25Mi", "3e3", "8Ki", "12Ki", "007", "1e-3",
              # the edges: an upper-case exponent, 18 and 19 digits (ParseQuantity's int64 fast path and
              # its inf.Dec path), binary values at 2**63, a fraction below a nano, a value with leading zeros
              "1E3", "2e6", "1e18", "123456789012345678", "1234567890123456789", "7Ei", "8Ei", "1.0000000001",
              "100000000000000000000m", "0.5Ki", "1023Ki", "1024Ki", "00.5", "5.", ".5", "+1", "1000000000000000000000"]
    for _ in range(118):
        number = rnd.choice([str(rnd.randint(0, 5000)), f"{rnd.randint(0, 99)}.{rnd.randint(0, 999)}",
                             str(rnd.choice([1024, 2048, 4096, 1000, 1500, 250]) * rnd.randint(1, 4))])
        values.append(number + rnd.choice(suffixes))
    return values


def record(kubeconfig: str) -> Path:
    values = quantities()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "quantities", "namespace": "default"},
           "spec": {"containers": [{"name": f"c{i}", "image": "x", "resources": {"limits": {"memory": v}}}
                                   for i, v in enumerate(values)]}}
    kubectl = str(Path(kubeconfig).parent / "bin" / "kubectl")
    done = subprocess.run([kubectl, "--kubeconfig", kubeconfig, "create", "--dry-run=server", "-o", "json", "-f", "-"],
                          input=json.dumps(pod), capture_output=True, text=True, check=True)
    answer = json.loads(done.stdout)
    exchange = {"note": "a Pod whose containers carry one memory limit each, created with dryRun=All",
                "request": {"method": "POST", "path": "/api/v1/namespaces/default/pods", "query": {"dryRun": "All"},
                            "content_type": "application/json", "body": pod, "user_agent": KUBECTL_UA},
                "response": {"status": 201, "body": answer}}
    meta = {"title": "Container resource quantities as stored",
            "what_it_shows": ("ParseQuantity keeps a text already in a canonical form (a decimal whose digits neither start with "
                              "0 nor end in 000, at a scale that is a multiple of 3: 98.110k, 63.798, 1500k; a binary whole number "
                              "not a multiple of 8: 1Gi, 12Ki) and writes the canonical form otherwise (0.1 -> 100m, 1024Mi -> 1Gi, "
                              "1.5Gi -> 1536Mi); core/v1 SetDefaults_ResourceList then rounds up to milli units (4000n -> 1m, "
                              "29.12m -> 30m)."),
            "recorded_from": "kube-apiserver v1.36.2 (etcd 3.5.1), kubectl create --dry-run=server",
            "namespace": "default", "notes": ["recorded by python -m tests.record_quantities KUBECONFIG"]}
    out = HERE / "43-resource-quantities.json"
    out.write_text(json.dumps({**meta, "exchanges": [exchange]}, indent=1) + "\n")
    return out


if __name__ == "__main__":
    print(record(sys.argv[1]))
