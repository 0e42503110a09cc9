"""Metrics: deterministic ones (the default, no model needed) and LLM judges, in one registry (their modules,
``BUILTIN_METRICS``, are imported on its first lookup)."""

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
