"""Metrics: deterministic ones (the default, no model needed) and LLM judges, in one registry."""

from evalcore.metrics import counts, judged, strings, tool_calls  # noqa: F401  (importing registers them)
from evalcore.metrics.base import (
    REQUIREMENTS,
    JudgeUsage,
    Metric,
    MetricResult,
    create_metric,
    get_metric,
    metric_names,
    metrics,
    register_metric,
)

__all__ = [
    "REQUIREMENTS",
    "JudgeUsage",
    "Metric",
    "MetricResult",
    "create_metric",
    "get_metric",
    "metric_names",
    "metrics",
    "register_metric",
]
