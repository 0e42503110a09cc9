"""Which unfinished run a scoring goes on with, and where its judge calls go.

A run records its judge's model and endpoint (the base URL without credentials; never the key). Going on with it
calls the same model at the same endpoint: the rest of its calls (the transcripts, and the key) go to another
endpoint only when the caller says so (``allow_other_endpoint``), and the run then records that endpoint as its
own. A refusal changes nothing: the run stays as it was, resumable.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from evalcore.errors import UsageError
from evalcore.judge import JudgeConfig
from evalcore.model.redact import public_url
from evalcore.store import Store
from evalcore.store.queries import SessionFilter
from evalcore.store.runs import Run

__all__ = ["OtherEndpointError", "on_its_endpoint", "pick_run", "run_judge"]


class OtherEndpointError(UsageError):
    """Going on with run ``run_id`` would call its judge at ``url``, not at ``run_url`` (its own; ``None``: the run
    did not record one), and the caller did not confirm it. Nothing was sent, nothing changed."""

    def __init__(self, run: Run, url: str) -> None:
        self.run_id = run.id
        self.run_url = run.judge_base_url
        self.url = url
        where = f"at {run.judge_base_url}" if run.judge_base_url else "at an endpoint it did not record"
        super().__init__(
            f"run #{run.id} called its judge {where}; going on with it would call {url}. Go on at its own "
            "endpoint, confirm the other one (allow_other_endpoint), or start a new run"
        )


def on_its_endpoint(run: Run, url: str | None) -> bool:
    """Whether judge calls at ``url`` (a base URL, credentials or not) are at ``run``'s own endpoint. A run without a
    judge has no endpoint: any will do."""
    if not run.judge_model or url is None:
        return True
    return run.judge_base_url is not None and public_url(run.judge_base_url) == public_url(url)


def run_judge(run: Run, judge: JudgeConfig | None = None, *, allow_other_endpoint: bool = False) -> JudgeConfig | None:
    """The judge to go on with ``run``: its own model at its own endpoint (``None`` for a run without a judge).

    The key and the call options come from ``judge`` (else the environment's, as ``JudgeConfig.from_env`` reads
    them). ``judge``'s endpoint is used only when it is the run's, or when ``allow_other_endpoint`` confirms it;
    otherwise the run's own is. A run that did not record its endpoint goes on only at a confirmed one
    (``OtherEndpointError``)."""
    if not run.judge_model:
        return None
    if judge is None:
        if run.judge_base_url is None and not allow_other_endpoint:
            probe = JudgeConfig.from_env(model=run.judge_model)
            raise OtherEndpointError(run, probe.public_url if probe else "the environment's endpoint")
        found = JudgeConfig.from_env(model=run.judge_model, base_url=run.judge_base_url)
        assert found is not None  # (a model is named)
        return found
    judge = dataclasses.replace(judge, model=run.judge_model)
    if allow_other_endpoint or on_its_endpoint(run, judge.base_url):
        return judge  # (the URL as given: credentials in it stay on this side)
    if run.judge_base_url is None:
        raise OtherEndpointError(run, judge.public_url)
    return dataclasses.replace(judge, base_url=run.judge_base_url)


def pick_run(
    store: Store,
    dataset: str,
    metrics: list[str],
    params: dict[str, Any],
    judge: JudgeConfig | None,
    filters: SessionFilter | None,
    *,
    run_id: int | None = None,
    allow_other_endpoint: bool = False,
) -> Run | None:
    """The unfinished run a scoring of ``metrics`` (their keys, with ``params``) with ``judge`` goes on with:
    ``run_id`` when given (refused unless it is unfinished and of the same metrics, settings, selection and judge
    model), else the latest such run whose endpoint is ``judge``'s, else the latest such run at all. ``None``: none,
    a new run is made.

    A run at another endpoint is refused (``OtherEndpointError``) unless ``allow_other_endpoint``; then it records
    ``judge``'s endpoint as its own from now on."""
    runs = store.runs
    model = judge.model if judge is not None else None
    url = judge.base_url if judge is not None else None
    if run_id is not None:
        run = runs.get(run_id)
        if not run.resumable:
            raise UsageError(f"run #{run_id} is finished: there is nothing to resume")
        chosen = filters.as_dict() if filters is not None else {}
        if not run.same_work(metrics, params, chosen, model):
            raise UsageError(f"run #{run_id} scored other metrics, settings, sessions or judge model")
        candidates = [run]
    else:
        candidates = runs.unfinished(dataset, metrics, params, model, filters)
    if not candidates:
        return None
    same = next((run for run in candidates if on_its_endpoint(run, url)), None)
    if same is not None:
        return same
    assert judge is not None  # (a run without a judge is on any endpoint)
    run = candidates[0]
    if not allow_other_endpoint:
        raise OtherEndpointError(run, judge.public_url)
    return runs.set_judge_endpoint(run.id, judge.public_url)
