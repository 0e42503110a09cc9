"""The typed shapes of a scoring run: what it scores (metric specs) and how far it is (its status).

A metric spec is a metric's name with its parameters, the fields of that metric's own pydantic
model; forms are built from ``MetricSpec.metric_class.model_fields``. A run's filters are a
:class:`evalcore.store.queries.SessionFilter`. Both are stored with the run and read back typed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from evalcore.errors import UsageError
from evalcore.metrics.base import Metric, create_metric, get_metric

__all__ = ["RUN_STATUSES", "MetricSpec", "RunStatus", "SpecLike", "run_status"]

#: What a run is doing: scoring, finished, stopped on request (resumable), or stopped by an error (resumable).
RunStatus = Literal["running", "done", "cancelled", "failed"]
RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)


def run_status(value: str) -> RunStatus:
    """``value`` as a run status; an unknown one is an error naming the known ones."""
    for status in RUN_STATUSES:
        if value == status:
            return status
    raise UsageError(f"unknown run status {value!r}; use one of {', '.join(RUN_STATUSES)}")


@dataclass(frozen=True)
class MetricSpec:
    """One metric of a run: its registered ``name`` and its ``params`` (defaults may be left out)."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, spec: SpecLike) -> MetricSpec:
        """A spec from ``name``, ``name:key=value:...``, ``{"name": ..., "params": {...}}``, a metric or a spec.

        The parameters are checked against the metric's model (a ``UsageError`` names a bad one)
        and kept as the metric states them: defaults left out.
        """
        if isinstance(spec, MetricSpec):
            return spec
        metric = create_metric(spec)
        return cls(metric.name, metric.params())

    @property
    def metric_class(self) -> type[Metric]:
        """The metric's pydantic model: its ``model_fields`` are the parameters a form asks for."""
        return get_metric(self.name)

    def metric(self) -> Metric:
        """The metric object these parameters make (a ``UsageError`` names a bad parameter)."""
        return create_metric({"name": self.name, "params": dict(self.params)})

    @property
    def key(self) -> str:
        """The name the run's scores are stored under (``Metric.key``)."""
        return self.metric().key()

    def as_dict(self) -> dict[str, Any]:
        """``{"name": ..., "params": {...}}``, as ``create_metric`` and JSON read it."""
        return {"name": self.name, "params": dict(self.params)}


#: Whatever names a metric: ``name``, ``name:key=value``, a dict, a metric object or a spec.
SpecLike = str | dict[str, Any] | Metric | MetricSpec
