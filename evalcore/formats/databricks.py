"""``databricks``: Mosaic AI Agent Evaluation / MLflow evaluation-set rows.

Reads MLflow 2 rows (``request`` as a string, ``{messages}``, ``{query, history}`` or a
``ResponsesAgent`` request ``{"input": [items]}``; ``response``, a Responses object
``{"output": [items]}`` among its shapes; ``expected_facts`` or ``expected_response``;
``guidelines``; ``retrieved_context`` and ``expected_retrieved_context``; ``trace``) and MLflow 3
rows (``inputs``, ``outputs``, ``expectations``). Requests and responses are decoded by
``_mlflow_wire``. What shape each field had is remembered, so a row written back has the shape it
came with (a request or response that was edited is written as chat messages or text).

A row of an evaluation's results table carries its scores: the judges' and metrics' columns
(``response/llm_judged/correctness/rating``, ``retrieval/ground_truth/document_recall``,
``toxicity/v1/score``, ``correctness/value``...) and MLflow 3 ``assessments``, in the row or on its trace.
They are read as the session's scores (``Session.scores``, named ``correctness``, ``document_recall``...; see
``_scores``); the columns are kept as they came and written back so (the trace keeps its own).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from evalcore.errors import RecordError
from evalcore.formats._chat import carries as chat_carries
from evalcore.formats._chat import chat_message_out, message_names
from evalcore.formats._mlflow_wire import request_in, response_in
from evalcore.formats._records import build_session, expect_dict, expect_list, expect_str, memo
from evalcore.formats._scores import result_column_scores
from evalcore.formats.base import Format, register
from evalcore.formats.jsonio import loads
from evalcore.formats.mlflow_trace import session_fields_from_trace
from evalcore.schema import ContextChunk, Message, Session, call_ids

CallIds = tuple[dict[int, str], dict[int, str]]

NS = "databricks"
_EXPECTATIONS = ("expected_response", "expected_facts", "guidelines", "expected_retrieved_context")
_HANDLED = {"request_id", "request", "response", "retrieved_context", "trace", "tags", "goal", *_EXPECTATIONS}


@register
class DatabricksFormat(Format):
    """One evaluation row a line."""

    name = "databricks"
    description = "Databricks Agent Evaluation / MLflow eval-set rows (request, response, expected_*, trace)"
    writable = True
    keeps_truth = frozenset({"reference", "expected_facts", "guidelines", "expected_retrieved_context", "goal"})

    def kept_truth(self, session: Session) -> frozenset[str]:
        # A row holds expected_facts or expected_response, not both (Databricks refuses both): with both, the
        # facts are written (what the correctness judge uses first) and the reference is counted as dropped.
        if session.reference is not None and session.expected_facts is not None:
            return self.keeps_truth - {"reference"}
        return self.keeps_truth

    def carries(self, block: dict[str, Any]) -> bool:
        return chat_carries(block)

    priority = 30

    def sniff(self, value: Any) -> bool:
        return isinstance(value, dict) and (
            "request" in value
            or isinstance(value.get("trace"), str | dict)
            or isinstance(value.get("inputs"), dict | str)
        )

    def parse(self, value: Any) -> Session:
        row = dict(expect_dict(value, "record"))
        meta: dict[str, Any] = {}
        _mlflow3_columns(row, meta)
        data: dict[str, Any] = {}
        _identity_in(row, data, meta)
        data["messages"] = _conversation_in(row, data, meta)
        _expectations_in(row, data, meta)
        if row.get("retrieved_context") is not None:
            data["retrieved_context"] = _chunks_in(row["retrieved_context"], "retrieved_context")
        _tags_in(row.get("tags"), data, meta)
        extras = {k: v for k, v in row.items() if k not in _HANDLED}
        if extras:
            meta["extra"] = extras
            scores = result_column_scores(extras)
            if scores:
                data["scores"] = {**data.get("scores", {}), **scores}
        data["metadata"] = {**data.get("metadata", {}), NS: meta}
        return build_session(data)

    def write(self, session: Session) -> Iterable[Any]:
        meta = dict(memo(session.metadata, NS))
        row: dict[str, Any] = {}
        derived = _memo_dict(meta, "from_trace")
        from_trace_id = derived is not None and session.session_id == derived.get("session_id")
        if session.session_id is not None and not from_trace_id:  # an id the trace gave is not a column
            row["request_id"] = session.session_id
        if derived is None or "request" in meta:  # a row with a trace alone keeps its conversation in the trace
            _conversation_out(session, meta, row)
        extra = dict(_memo_dict(meta, "extra") or {})
        _expectations_columns(session, meta, extra, row)
        if session.retrieved_context is not None:
            chunks = _chunks_out(session.retrieved_context)
            if chunks != _chunks_out_raw((derived or {}).get("retrieved_context")):  # not just what the trace gave
                row["retrieved_context"] = chunks
        if session.trace is not None:
            keep = isinstance(session.trace, str) or meta.get("trace_object")
            row["trace"] = session.trace if keep else json.dumps(session.trace, ensure_ascii=False)
        if session.goal is not None:
            row["goal"] = session.goal
        tags = _tags_out(session, meta)
        if tags is not None and not (derived is not None and session.tags == derived.get("tags")):
            row["tags"] = tags
        row.update(extra)
        return [row]


def _mlflow3_columns(row: dict[str, Any], meta: dict[str, Any]) -> None:
    """An MLflow 3 row (``inputs``, ``outputs``, ``expectations``) under the MLflow 2 column names."""
    if "inputs" not in row or "request" in row:
        return
    meta["mlflow3"] = True
    if "expectations" in row:
        expectations = expect_dict(row.pop("expectations") or {}, "expectations")
        meta["expectation_keys"] = list(expectations)  # custom ones go back in there too
        for key, item in expectations.items():
            row[key] = item
    row["request"] = row.pop("inputs")
    if "outputs" in row:
        row["response"] = row.pop("outputs")


def _identity_in(row: dict[str, Any], data: dict[str, Any], meta: dict[str, Any]) -> None:
    if row.get("request_id") is not None:
        data["session_id"] = str(row["request_id"])
    if row.get("trace") is not None:
        data["trace"] = row["trace"]
        if not isinstance(row["trace"], str):
            meta["trace_object"] = True  # written back as it came, not as the usual JSON string
    if row.get("goal") is not None:
        data["goal"] = expect_str(row["goal"], "goal")


def _conversation_in(row: dict[str, Any], data: dict[str, Any], meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The row's messages: its request and response, else its trace's. What else the trace gives
    (ids, usage, context, error) is taken where the row does not say it."""
    mlflow3 = bool(meta.get("mlflow3"))
    trace = data.get("trace")
    messages: list[dict[str, Any]] = []
    if "request" in row:
        messages, meta["request"] = request_in(row["request"], "inputs" if mlflow3 else "request")
        if trace is not None:  # the conversation is the row's; the rest may come from the trace
            try:
                derived = session_fields_from_trace(_trace_dict(trace), messages=False)
            except RecordError:
                derived = {}  # a trace we cannot read is kept as it came; the row stands on its own
            for column, key in (("request_id", "session_id"), ("tags", "tags"), ("retrieved_context",) * 2):
                if row.get(column) is not None:
                    derived.pop(key, None)  # the row says it: the trace's is not taken, nor noted
            _take_from_trace(derived, data, meta)
    elif trace is not None:
        derived = session_fields_from_trace(_trace_dict(trace))
        messages = derived.pop("messages", [])
        _take_from_trace(derived, data, meta)
    else:
        raise RecordError("missing (a row needs a request or a trace)", "request")
    if row.get("response") is not None:
        response, meta["response"] = response_in(row["response"], "outputs" if mlflow3 else "response")
        meta["response"]["count"] = len(response)
        messages += response
    return messages


def _conversation_out(session: Session, meta: dict[str, Any], row: dict[str, Any]) -> None:
    """The request and response columns: the messages split where the response began."""
    mlflow3 = bool(meta.get("mlflow3"))
    messages = list(session.messages)
    form = _memo_dict(meta, "response")
    last = messages[-1] if messages else None
    count = 1 if last is not None and last.role == "assistant" and not last.tool_calls else 0
    if form is not None:
        count = min(_count(form.get("count", 1)), len(messages))
    elif "request" in meta:
        count = 0  # read from a row that had no response: the request keeps every message
    answer, messages = messages[len(messages) - count :], messages[: len(messages) - count]
    ids = call_ids(session.messages)
    names = message_names(session.messages)
    row["inputs" if mlflow3 else "request"] = _request_out(messages, _memo_dict(meta, "request"), ids, names)
    if answer:
        row["outputs" if mlflow3 else "response"] = _response_out(answer, form)


def _expectations_columns(session: Session, meta: dict[str, Any], extra: dict[str, Any], row: dict[str, Any]) -> None:
    """The ground truth: MLflow 2 columns, or MLflow 3's ``expectations`` (custom keys back in it)."""
    expectations = _expectations_out(session)
    if not meta.get("mlflow3"):
        row.update(expectations)
        return
    keys = meta.get("expectation_keys")
    if keys is not None:
        keys = [expect_str(k, f"metadata.{NS}.expectation_keys[{i}]") for i, k in enumerate(
            expect_list(keys, f"metadata.{NS}.expectation_keys"))]  # fmt: skip
    for key in keys or []:
        if key in extra:
            expectations[key] = extra.pop(key)
    if expectations or keys is not None:
        row["expectations"] = expectations


def _memo_dict(meta: dict[str, Any], key: str) -> dict[str, Any] | None:
    """An object the databricks memo keeps under ``key`` (``None`` when it has none)."""
    value = meta.get(key)
    return None if value is None else expect_dict(value, f"metadata.{NS}.{key}")


def _count(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise RecordError(f"expected a count of messages, got {value!r:.40}", f"metadata.{NS}.response.count")


def _take_from_trace(derived: dict[str, Any], data: dict[str, Any], meta: dict[str, Any]) -> None:
    """Session fields a trace gave, where the row did not give them. What the trace gave is noted,
    so that writing the row back does not add it as columns."""
    meta["from_trace"] = {k: derived[k] for k in ("session_id", "tags", "retrieved_context") if k in derived}
    for key, item in derived.items():
        data.setdefault(key, item)


def _trace_dict(trace: Any) -> dict[str, Any]:
    if isinstance(trace, str):
        try:
            trace = loads(trace)
        except json.JSONDecodeError as exc:
            raise RecordError(f"not a valid JSON string ({exc.msg})", "trace") from exc
    return expect_dict(trace, "trace")


def _request_out(messages: list[Message], form: dict[str, Any] | None, ids: CallIds, names: dict[int, str]) -> Any:
    form = form or {}
    kind = form.get("form")
    if kind is None:
        simple = len(messages) == 1 and messages[0].role == "user" and isinstance(messages[0].content, str)
        kind = "string" if simple else "messages"
    if kind == "raw" and _reads_as(form.get("raw"), messages, request_in):
        return form["raw"]
    last_user = messages[-1] if messages and messages[-1].role == "user" else None
    key = form.get("key")
    simple = kind == "string" or (kind == "key" and isinstance(key, str))
    if simple and last_user is not None and len(messages) == 1:
        return last_user.text if kind == "string" else {key: last_user.text}
    extra = expect_dict(form.get("extra") or {}, f"metadata.{NS}.request.extra")
    if kind == "query" and last_user is not None:
        out: dict[str, Any] = {"query": last_user.text}
        if messages[:-1] or form.get("history"):
            out["history"] = [chat_message_out(m, ids, names.get(id(m), "context")) for m in messages[:-1]]
        return {**out, **extra}
    return {"messages": [chat_message_out(m, ids, names.get(id(m), "context")) for m in messages], **extra}


def _response_out(answer: list[Message], form: dict[str, Any] | None) -> Any:
    if form and form.get("form") == "raw" and _reads_as(form.get("raw"), answer, response_in):
        return form.get("raw")
    return answer[-1].text


def _reads_as(raw: Any, messages: list[Message], decode: Callable[[Any, str], tuple[Any, Any]]) -> bool:
    """Whether a request or response kept as it came still reads as ``messages`` (nothing was edited)."""
    try:
        decoded, _ = decode(raw, "kept")
        return [Message.model_validate(m) for m in decoded] == messages
    except (RecordError, ValueError):  # a kept value that no longer reads: written anew
        return False


def _expectations_in(row: dict[str, Any], data: dict[str, Any], meta: dict[str, Any]) -> None:
    if row.get("expected_response") is not None:
        data["reference"] = expect_str(row["expected_response"], "expected_response")
    if row.get("expected_facts") is not None:
        facts = expect_list(row["expected_facts"], "expected_facts")
        data["expected_facts"] = [expect_str(f, f"expected_facts[{i}]") for i, f in enumerate(facts)]
    if row.get("expected_response") is not None and row.get("expected_facts") is not None:
        raise RecordError("give only one of expected_facts and expected_response", "expected_facts")
    guidelines = row.get("guidelines")
    if guidelines is not None:
        if not isinstance(guidelines, list | dict):
            raise RecordError("expected a list of strings or a {name: [strings]} object", "guidelines")
        data["guidelines"] = guidelines
    if row.get("expected_retrieved_context") is not None:
        data["expected_retrieved_context"] = _chunks_in(row["expected_retrieved_context"], "expected_retrieved_context")


def _expectations_out(session: Session) -> dict[str, Any]:
    out: dict[str, Any] = {}
    reference = None if session.expected_facts is not None else session.reference_answer()  # one of the two
    if reference is not None:
        out["expected_response"] = reference
    if session.expected_facts is not None:
        out["expected_facts"] = session.expected_facts
    if session.guidelines is not None:
        out["guidelines"] = session.guidelines
    if session.expected_retrieved_context is not None:
        out["expected_retrieved_context"] = _chunks_out(
            session.expected_retrieved_context, "expected_retrieved_context"
        )
    return out


def _chunks_in(value: Any, field: str) -> list[dict[str, Any]]:
    chunks = []
    for i, chunk in enumerate(expect_list(value, field)):
        if isinstance(chunk, str):
            chunks.append({"doc_uri": chunk, "metadata": {NS: {"bare": True}}})
            continue
        chunk = expect_dict(chunk, f"{field}[{i}]")
        out = {k: expect_str(chunk.get(k), f"{field}[{i}].{k}", optional=True) for k in ("content", "doc_uri")}
        extras = {k: v for k, v in chunk.items() if k not in ("content", "doc_uri")}
        if extras:
            out["metadata"] = {NS: extras}
        chunks.append(out)
    return chunks


def _chunks_out_raw(chunks: Any) -> Any:
    if not chunks:
        return None
    try:
        return _chunks_out([ContextChunk.model_validate(c) for c in chunks])
    except (RecordError, TypeError, ValueError):  # not chunks: nothing the trace gave can match
        return None


def _chunks_out(chunks: list[ContextChunk], where: str = "retrieved_context") -> list[Any]:
    out: list[Any] = []
    for i, chunk in enumerate(chunks):
        extras = dict(memo(chunk.metadata, NS, f"{where}[{i}].metadata"))
        if extras.pop("bare", False) and chunk.content is None and chunk.doc_uri is not None:
            out.append(chunk.doc_uri)
            continue
        item: dict[str, Any] = {}
        if chunk.content is not None:
            item["content"] = chunk.content
        if chunk.doc_uri is not None:
            item["doc_uri"] = chunk.doc_uri
        out.append(item | extras)
    return out


def _tags_in(tags: Any, data: dict[str, Any], meta: dict[str, Any]) -> None:
    if tags is None:
        return
    if isinstance(tags, list):
        data["tags"] = [str(t) for t in tags]
    elif isinstance(tags, dict):
        data["tags"] = [k if v in ("true", True) else f"{k}={v}" for k, v in tags.items()]
        meta["tags"] = tags
    else:
        raise RecordError("expected a list of tags or a {name: value} object", "tags")


def _tags_out(session: Session, meta: dict[str, Any]) -> Any:
    raw = meta.get("tags")
    if isinstance(raw, dict):
        probe: dict[str, Any] = {}
        _tags_in(raw, probe, {})
        if probe.get("tags") == session.tags:
            return raw
    return session.tags or None
