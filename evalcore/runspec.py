"""The typed shapes of a scoring run: what it scores (metric specs) and how far it is (its status).

A metric spec is a metric's name with its parameters, the fields of that metric's own pydantic
model; forms are built from ``MetricSpec.metric_class.model_fields``. A run's filters are a
:class:`evalcore.store.queries.SessionFilter`. Both are stored with the run and read back typed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalcore.metrics.base import Metric, create_metric, get_metric
from evalcore.store.records import RUN_STATUSES, RunStatus, run_status

if TYPE_CHECKING:
    from evalcore.store.runs import Run

__all__ = ["RUN_STATUSES", "MetricSpec", "RunStatus", "SpecLike", "run_specs", "run_status"]


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


def run_specs(run: Run) -> list[MetricSpec]:
    """The run's metrics with their parameters, in the order of ``run.metrics``."""
    specs = []
    for key in run.metrics:
        entry = run.params.get(key)
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            specs.append(MetricSpec(entry["name"], {k: v for k, v in entry.items() if k != "name"}))
        else:  # a run stored without its parameters: the key is the metric's spec
            specs.append(MetricSpec.of(key))
    return specs
