"""Metrics: deterministic ones (the default, no model needed) and LLM judges, in one registry."""

from evalcore.metrics import (  # noqa: F401  (importing registers them)
    counts,
    databricks_judges,
    gaussia_judges,
    judged,
    strings,
    tool_calls,
)
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
