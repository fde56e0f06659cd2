"""One sample of a served agent's ``/metrics``, read as Prometheus reads it.

Served tests assert what an operator would see: a counter's value after the
failure they cause, parsed with prometheus-client's own text parser.
"""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families


def sample(url: str, name: str, **labels: str) -> float:
    """The value of ``name`` with exactly ``labels`` at ``url``'s ``/metrics`` now.

    Fails when the series is absent: the counters asserted are present at
    zero from the start.
    """
    text = httpx.get(url.rstrip("/") + "/metrics", timeout=10).text
    found = [
        each.value
        for family in text_string_to_metric_families(text)
        for each in family.samples
        if each.name == name and each.labels == labels
    ]
    assert len(found) == 1, f"{name}{labels}: {len(found)} samples in {url}/metrics"
    return float(found[0])


def orphans(url: str) -> dict[str, float]:
    """``skillrack_orphaned_tasks_total`` by outcome."""
    return {
        outcome: sample(url, "skillrack_orphaned_tasks_total", outcome=outcome)
        for outcome in ("failed", "restarted")
    }


def refusals(url: str, reason: str) -> float:
    """``skillrack_unavailable_refusals_total`` for ``reason``."""
    return sample(url, "skillrack_unavailable_refusals_total", reason=reason)
