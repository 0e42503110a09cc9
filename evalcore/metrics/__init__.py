"""Metrics: deterministic ones (the default, no model needed) and LLM judges, in one registry (their modules,
``BUILTIN_METRICS``, are imported on its first lookup)."""

from evalcore.metrics.base import (
    PLUGIN_GROUP,
    REQUIREMENTS,
    JudgeUsage,
    Metric,
    MetricResult,
    create_metric,
    get_metric,
    load_metric_plugin,
    metric_names,
    metrics,
    plugin_failures,
    register_metric,
)

__all__ = [
    "PLUGIN_GROUP",
    "REQUIREMENTS",
    "JudgeUsage",
    "Metric",
    "MetricResult",
    "create_metric",
    "get_metric",
    "load_metric_plugin",
    "metric_names",
    "metrics",
    "plugin_failures",
    "register_metric",
]
