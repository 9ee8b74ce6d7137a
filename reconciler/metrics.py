"""Prometheus metrics in the text exposition format, and the /healthz, /readyz, /metrics server.

Hand-written (a few counters and one histogram) to keep the image free of a client library.
"""

from __future__ import annotations

import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Metrics:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.cycles: Counter = Counter()  # by result: ok | failed | incomplete
        self.corrections: Counter = Counter()  # by field path
        self.errors: Counter = Counter()  # by reason
        self.durations: list[float] = []
        self.api_requests: Counter | None = None  # shared with KubeAPI.requests
        self.ready = False
        self.leader = False

    def observe_cycle(self, report: Any) -> None:
        with self.lock:
            result = "incomplete" if not report.complete else ("failed" if report.failed else "ok")
            self.cycles[result] += 1
            self.durations.append(report.duration)
            for o in report.outcomes:
                for d in o.drift:
                    self.corrections[d.field or "<object>"] += 1
                if o.action in ("failed", "invalid", "not-owned"):
                    self.errors[o.action] += 1
            if report.error:
                self.errors["cycle"] += 1

    def render(self) -> str:
        with self.lock:
            lines = ["# HELP memcached_gitops_cycles_total Reconcile cycles by result.",
                     "# TYPE memcached_gitops_cycles_total counter"]
            lines += [f'memcached_gitops_cycles_total{{result="{k}"}} {v}' for k, v in sorted(self.cycles.items())]
            lines += ["# HELP memcached_gitops_cycle_duration_seconds Duration of a reconcile cycle.",
                      "# TYPE memcached_gitops_cycle_duration_seconds histogram"]
            for b in BUCKETS:
                lines.append(f'memcached_gitops_cycle_duration_seconds_bucket{{le="{b}"}} {sum(1 for d in self.durations if d <= b)}')
            lines.append(f'memcached_gitops_cycle_duration_seconds_bucket{{le="+Inf"}} {len(self.durations)}')
            lines.append(f"memcached_gitops_cycle_duration_seconds_sum {sum(self.durations)}")
            lines.append(f"memcached_gitops_cycle_duration_seconds_count {len(self.durations)}")
            lines += ["# HELP memcached_gitops_drift_corrections_total Drifted fields corrected, by field.",
                      "# TYPE memcached_gitops_drift_corrections_total counter"]
            lines += [f'memcached_gitops_drift_corrections_total{{field={_quote(k)}}} {v}' for k, v in sorted(self.corrections.items())]
            lines += ["# HELP memcached_gitops_api_requests_total API requests by verb.",
                      "# TYPE memcached_gitops_api_requests_total counter"]
            lines += [f'memcached_gitops_api_requests_total{{verb="{k}"}} {v}' for k, v in sorted((self.api_requests or {}).items())]
            lines += ["# HELP memcached_gitops_errors_total Errors by reason.", "# TYPE memcached_gitops_errors_total counter"]
            lines += [f'memcached_gitops_errors_total{{reason="{k}"}} {v}' for k, v in sorted(self.errors.items())]
            lines += ["# HELP memcached_gitops_leader Whether this replica holds the Lease.", "# TYPE memcached_gitops_leader gauge",
                      f"memcached_gitops_leader {1 if self.leader else 0}"]
            return "\n".join(lines) + "\n"


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def serve(metrics: Metrics, port: int, host: str = "0.0.0.0") -> ThreadingHTTPServer:
    """Start the probe and metrics server in a daemon thread."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path == "/healthz":
                code, body, ctype = 200, "ok\n", "text/plain"
            elif self.path == "/readyz":
                code, body, ctype = (200, "ready\n", "text/plain") if metrics.ready else (503, "not ready\n", "text/plain")
            elif self.path == "/metrics":
                code, body, ctype = 200, metrics.render(), "text/plain; version=0.0.4"
            else:
                code, body, ctype = 404, "not found\n", "text/plain"
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
