"""The ground-truth fields a reviewer edits, and a form's raw values turned into one save's changes.

The Review page draws one widget per :class:`FieldSpec` of ``SESSION_EDITORS`` (session
level) or ``TURN_EDITORS`` (one turn's ground truth), fills it with :func:`form_values` /
:func:`turn_form_values`, and on "save" hands the widgets' values to :func:`session_changes` /
:func:`turn_changes`. Those return the changes for one ``Store.save`` (only the fields whose
value differs, in the JSON shape the store takes) and the problems found, each naming its
field and row. **When there are problems the page must refuse the save** (show them and
keep the form as typed): the changes of the fields without problems are still computed,
so the page can tell what else would change, but saving them alone would silently drop
part of what the reviewer typed.

Widget shapes, by kind (what the form holds and what :func:`form_values` gives):

``text``
    a string (a text area); empty or blank text is ``None`` (not set), so clearing is a change.
``line``
    a one-line string (a text input), trimmed; empty is ``None``.
``lines``
    a string with one item per line (a text area); blank lines are ignored, items are
    trimmed, no item is ``None``. An item holding a line break becomes several items once
    the field is edited. A list of strings is taken too.
``tool_calls``
    rows ``{"name": ..., "arguments": ...}`` (a data editor); arguments are a JSON object as
    text (empty: ``{}``) or a dict; a row with neither name nor arguments is ignored; no row
    is ``None``. A call kept unchanged keeps its id and metadata.
``rubrics``
    rows ``{"name": ..., "description": ...}``; a row without a description is left out; no
    row is ``None``. ragas' score-scale rubrics are the rows named ``score1_description`` ..
    ``score5_description`` (``RUBRIC_SCALE_NAMES``; ``rubric_rows(rubrics, scale=True)``
    adds the missing ones, empty, for the reviewer to fill).
``guidelines``
    text, one guideline per line. Named groups: a line ``[name]`` opens the group ``name``
    and the lines below it (up to the next ``[...]`` line) are its guidelines; once a group
    line is used every guideline must be in a group. A guideline that itself starts with
    ``[`` and ends with ``]``, or starts with a backslash, is written with a backslash in
    front (``\\[draft]``); the first backslash of a line is always dropped.
``number``
    a float, an int, a numeric string or ``None``/empty (not set); must be >= 0 and finite.
``json``
    JSON text (or the parsed value); empty is ``None``. ``expected_tool_usage`` must be an
    object, ``expected_retrieved_context`` a list of chunk objects
    (``{"content": ..., "doc_uri": ..., "metadata": {...}}``).
``tags``
    a list of strings (a multiselect) or text with one tag per line or comma; trimmed,
    empty ones and repeats dropped.

A widget whose value is exactly what :func:`form_values` gave for the field is never a
change, so an untouched form saves nothing even where the text shape cannot hold a value
exactly (an item with a line break, a tool call's metadata).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from evalcore.schema import ContextChunk, Session, ToolCall, TurnTruth
from evalcore.views.review.transcript import pretty_json

__all__ = [
    "RUBRIC_SCALE_NAMES",
    "SESSION_EDITORS",
    "TURN_EDITORS",
    "FieldKind",
    "FieldProblem",
    "FieldSpec",
    "FormResult",
    "calls_from_conversation",
    "form_values",
    "guidelines_text",
    "rubric_rows",
    "session_changes",
    "tool_call_rows",
    "turn_changes",
    "turn_form_values",
]

FieldKind = Literal["text", "line", "lines", "tool_calls", "rubrics", "guidelines", "number", "json", "tags"]

#: ragas' score-scale rubric: one description per score, 1 to 5.
RUBRIC_SCALE_NAMES: tuple[str, ...] = tuple(f"score{i}_description" for i in range(1, 6))


@dataclass(frozen=True)
class FieldSpec:
    """One editable field: its name in the store, its label, the kind of widget, and help for the reviewer."""

    name: str
    label: str
    kind: FieldKind
    help: str


SESSION_EDITORS: tuple[FieldSpec, ...] = (
    FieldSpec("goal", "Goal", "text", "What the user wants to get done in this conversation. Empty: not set."),
    FieldSpec(
        "reference",
        "Reference answer",
        "text",
        "The answer the assistant should give (ragas' reference). Give this or expected facts, not both.",
    ),
    FieldSpec(
        "reference_tool_calls",
        "Reference tool calls",
        "tool_calls",
        "The tool calls the assistant should make, in order: a tool name and its arguments as a JSON object "
        '(e.g. {"order_id": 7}; empty means {}). No rows: not set.',
    ),
    FieldSpec(
        "rubrics",
        "Rubrics",
        "rubrics",
        "Named criteria with a description each. For ragas' 1-5 scale use the names score1_description "
        "to score5_description. A row without a description is left out.",
    ),
    FieldSpec(
        "reference_topics", "Reference topics", "lines", "The topics the assistant should keep to, one per line."
    ),
    FieldSpec(
        "expected_facts",
        "Expected facts",
        "lines",
        "Facts the answer must state, one per line. Give these or a reference answer, not both.",
    ),
    FieldSpec(
        "guidelines",
        "Guidelines",
        "guidelines",
        "One guideline per line. To name groups, put a line [group name] above each group's guidelines. "
        "A guideline that looks like [this] is written \\[this].",
    ),
    FieldSpec(
        "expected_retrieved_context",
        "Expected retrieved context",
        "json",
        'The chunks retrieval should find, as a JSON list: [{"content": "...", "doc_uri": "..."}]. Empty: not set.',
    ),
    FieldSpec("tags", "Tags", "tags", "Labels to find the session by."),
)

TURN_EDITORS: tuple[FieldSpec, ...] = (
    FieldSpec("qa_id", "Turn id", "line", "Gaussia's qa_id: unique within the session. Empty: not set."),
    FieldSpec("ground_truth", "Reference answer", "text", "The answer the assistant should give in this turn."),
    FieldSpec("observation", "Observation", "text", "A reviewer's note on this turn."),
    FieldSpec(
        "weight",
        "Weight",
        "number",
        "How much this turn counts in the session's score (>= 0). Empty: not set; Gaussia's rules share the rest.",
    ),
    FieldSpec(
        "expected_tool_usage",
        "Expected tool usage",
        "json",
        'What tools the turn should use, as a JSON object (e.g. {"tools": ["get_order"]}). Empty: not set.',
    ),
)


@dataclass(frozen=True)
class FieldProblem:
    """Something wrong with what was typed into a field: ``row`` is 1-based (a table row or a text line), when known."""

    field: str
    row: int | None
    message: str

    def __str__(self) -> str:
        where = self.field if self.row is None else f"{self.field} row {self.row}"
        return f"{where}: {self.message}"


@dataclass
class FormResult:
    """The changes one save would make (only the fields that differ), and the problems found.

    With problems the save must be refused (see the module's docstring).
    """

    changes: dict[str, Any] = field(default_factory=dict)
    problems: list[FieldProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether there are no problems (the changes may be saved)."""
        return not self.problems


class _Problems(Exception):
    """Raised by a parser with every problem of its field."""

    def __init__(self, problems: list[tuple[int | None, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(m for _r, m in problems))


def _bad(message: str, row: int | None = None) -> _Problems:
    return _Problems([(row, message)])


# -- cells and text ----------------------------------------------------------------------------


def _cell(value: Any) -> str:
    """A table cell as trimmed text (``None`` and pandas' NaN as empty)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value).strip()


def _rows(value: Any) -> list[dict[str, Any]]:
    """A data editor's value as a list of row dicts (a list of dicts, or a DataFrame)."""
    if value is None:
        return []
    if hasattr(value, "to_dict") and not isinstance(value, dict):
        value = value.to_dict("records")
    if not isinstance(value, list):
        raise _bad("expected a table of rows")
    rows = []
    for n, row in enumerate(value, 1):
        if not isinstance(row, dict):
            raise _bad("expected a row of named cells", n)
        rows.append(row)
    return rows


def _lines_of(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [_cell(v) for v in value]
    return str(value).replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in JSON")


def _loads(text: str) -> Any:
    """Strict JSON (no NaN or Infinity)."""
    return json.loads(text, parse_constant=_no_constants)


def _json_error(exc: ValueError, *, one_line: bool) -> str:
    if isinstance(exc, json.JSONDecodeError):
        where = f"char {exc.pos}" if one_line else f"line {exc.lineno}, column {exc.colno}"
        return f"{exc.msg} ({where})"
    return str(exc)


def _dump(model: Any) -> Any:
    return model.model_dump(mode="json", exclude_defaults=True)


def _jsonable(value: Any) -> Any:
    """A field's value in the shape the store keeps (models dumped without their defaults)."""
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if hasattr(value, "model_dump"):
        return _dump(value)
    return value


# -- parsers: raw widget value -> stored value (JSON-able); raise _Problems ----------------------


def _parse_text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value)
    return text if text.strip() else None


def _parse_line(value: Any) -> str | None:
    return _cell(value) or None


def _parse_lines(value: Any) -> list[str] | None:
    items = [line.strip() for line in _lines_of(value)]
    return [item for item in items if item] or None


def _parse_tags(value: Any) -> list[str]:
    if isinstance(value, str):
        value = value.replace(",", "\n")
    return list(dict.fromkeys(item for item in (line.strip() for line in _lines_of(value)) if item))


def _parse_number(value: Any, label: str) -> float | None:
    message = f"{label} must be a number >= 0"
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise _bad(message)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise _bad(f"{message}, not {value!r}") from None
    if math.isnan(number) or math.isinf(number) or number < 0:
        raise _bad(f"{message}, not {value!r}")
    return number


def _parse_json(value: Any) -> Any:
    """JSON text (or an already parsed value) to a value; empty is ``None``."""
    if value is None:
        return None
    if not isinstance(value, str):
        return value
    if not value.strip():
        return None
    try:
        return _loads(value)
    except ValueError as exc:
        raise _bad(f"not valid JSON: {_json_error(exc, one_line=False)}") from None


def _parse_object(value: Any) -> dict[str, Any] | None:
    parsed = _parse_json(value)
    if parsed is not None and not isinstance(parsed, dict):
        raise _bad("must be a JSON object")
    return parsed


def _parse_chunks(value: Any) -> list[dict[str, Any]] | None:
    parsed = _parse_json(value)
    if parsed is None:
        return None
    if not isinstance(parsed, list):
        raise _bad('must be a JSON list of chunks, like [{"content": "...", "doc_uri": "..."}]')
    chunks: list[dict[str, Any]] = []
    problems: list[tuple[int | None, str]] = []
    for n, item in enumerate(parsed, 1):
        try:
            chunks.append(_dump(ContextChunk.model_validate(item)))
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in error["loc"])
            problems.append((n, f"{where + ': ' if where else ''}{error['msg']}"))
    if problems:
        raise _Problems(problems)
    return chunks or None


def _parse_arguments(value: Any, row: int) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    text = _cell(value)
    if not text:
        return {}
    try:
        args = _loads(text)
    except ValueError as exc:
        raise _bad(f"arguments are not valid JSON: {_json_error(exc, one_line=True)}", row) from None
    if not isinstance(args, dict):
        raise _bad("arguments must be a JSON object", row)
    return args


def _parse_tool_calls(value: Any, current: list[ToolCall] | None) -> list[dict[str, Any]] | None:
    problems: list[tuple[int | None, str]] = []
    unused = list(current or [])
    calls: list[dict[str, Any]] = []
    for n, row in enumerate(_rows(value), 1):
        name, raw_args = _cell(row.get("name")), row.get("arguments")
        no_args = not raw_args if isinstance(raw_args, dict) else not _cell(raw_args)
        if not name and no_args:
            continue  # an empty row
        try:
            args = _parse_arguments(raw_args, n)
        except _Problems as exc:
            problems += exc.problems
            args = None
        if not name:
            problems.append((n, "a tool call needs a name"))
        if args is None or not name:
            continue
        # A call that is still there unchanged keeps its id and metadata.
        same = next((c for c in unused if c.name == name and c.args == args), None)
        if same is not None:
            unused.remove(same)
            calls.append(_dump(same))
        else:
            calls.append(_dump(ToolCall(name=name, args=args)))
    if problems:
        raise _Problems(problems)
    return calls or None


def _parse_rubrics(value: Any) -> dict[str, str] | None:
    problems: list[tuple[int | None, str]] = []
    rubrics: dict[str, str] = {}
    for n, row in enumerate(_rows(value), 1):
        name = _cell(row.get("name"))
        raw = row.get("description")
        description = "" if raw is None or (isinstance(raw, float) and math.isnan(raw)) else str(raw).strip()
        if not description:
            continue  # left out (a scale row not filled in, say)
        if not name:
            problems.append((n, "a rubric needs a name"))
        elif name in rubrics:
            problems.append((n, f"the rubric name {name!r} is used twice"))
        else:
            rubrics[name] = description
    if problems:
        raise _Problems(problems)
    return rubrics or None


def _is_header(line: str) -> bool:
    return len(line) >= 2 and line.startswith("[") and line.endswith("]")


def _parse_guidelines(value: Any) -> list[str] | dict[str, list[str]] | None:
    problems: list[tuple[int | None, str]] = []
    plain: list[tuple[int, str]] = []
    groups: dict[str, list[str]] | None = None
    current: list[str] | None = None
    for n, raw in enumerate(_lines_of(value), 1):
        line = raw.strip()
        if not line:
            continue
        if _is_header(line):
            name = line[1:-1].strip()
            if not name:
                problems.append((n, "a group needs a name between [ and ]"))
                continue
            groups = {} if groups is None else groups
            current = groups.setdefault(name, [])
            continue
        if line.startswith("\\"):
            line = line[1:]
        if current is None:
            plain.append((n, line))
        else:
            current.append(line)
    if groups is not None:
        problems += [
            (n, f"{line!r} is above the first [group] line: put it under a group, or use no groups")
            for n, line in plain
        ]
    if problems:
        raise _Problems(sorted(problems, key=lambda p: p[0] or 0))
    if groups is not None:
        return groups or None
    return [line for _n, line in plain] or None


# -- raw shapes: stored value -> widget value ---------------------------------------------------


def tool_call_rows(calls: list[ToolCall] | None) -> list[dict[str, Any]]:
    """Tool calls as data-editor rows: ``{"name": ..., "arguments": <indented JSON text>}``."""
    return [{"name": call.name, "arguments": pretty_json(call.args)} for call in calls or []]


def calls_from_conversation(session: Session) -> list[dict[str, Any]]:
    """Every tool call the assistant made, in order, as rows for the reference tool calls' editor."""
    return tool_call_rows(session.tool_calls())


def rubric_rows(rubrics: dict[str, str] | None, *, scale: bool = False) -> list[dict[str, Any]]:
    """Rubrics as data-editor rows ``{"name": ..., "description": ...}``.

    With ``scale``, rows for the ragas score names (``RUBRIC_SCALE_NAMES``) the rubrics lack
    are added with an empty description, for the reviewer to fill in.
    """
    rows = [{"name": name, "description": text} for name, text in (rubrics or {}).items()]
    if scale:
        rows += [{"name": name, "description": ""} for name in RUBRIC_SCALE_NAMES if name not in (rubrics or {})]
    return rows


def _guideline_line(text: str) -> str:
    one = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    stripped = one.strip()
    return "\\" + one if _is_header(stripped) or stripped.startswith("\\") else one


def guidelines_text(guidelines: list[str] | dict[str, list[str]] | None) -> str:
    """Guidelines as the text the editor shows: one per line, named groups under ``[name]`` lines."""
    if not guidelines:
        return ""
    if isinstance(guidelines, list):
        return "\n".join(_guideline_line(g) for g in guidelines)
    blocks = ["\n".join([f"[{name}]", *(_guideline_line(g) for g in items)]) for name, items in guidelines.items()]
    return "\n\n".join(blocks)


def _json_text(value: Any) -> str:
    return "" if value is None else pretty_json(_jsonable(value))


def form_values(session: Session) -> dict[str, Any]:
    """The session's current values in the shape of the widgets (what ``session_changes`` reads)."""
    return {
        "goal": session.goal or "",
        "reference": session.reference or "",
        "reference_tool_calls": tool_call_rows(session.reference_tool_calls),
        "rubrics": rubric_rows(session.rubrics),
        "reference_topics": "\n".join(session.reference_topics or []),
        "expected_facts": "\n".join(session.expected_facts or []),
        "guidelines": guidelines_text(session.guidelines),
        "expected_retrieved_context": _json_text(session.expected_retrieved_context),
        "tags": list(session.tags),
    }


def turn_form_values(truth: TurnTruth) -> dict[str, Any]:
    """One turn's ground truth in the shape of the widgets (what ``turn_changes`` reads)."""
    return {
        "qa_id": truth.qa_id or "",
        "ground_truth": truth.ground_truth or "",
        "observation": truth.observation or "",
        "weight": truth.weight,
        "expected_tool_usage": _json_text(truth.expected_tool_usage),
    }


# -- changes -----------------------------------------------------------------------------------


def _parser(spec: FieldSpec, current: Any) -> Callable[[Any], Any]:
    name, kind = spec.name, spec.kind
    if kind == "text":
        return _parse_text
    if kind == "line":
        return _parse_line
    if kind == "lines":
        return _parse_lines
    if kind == "tags":
        return _parse_tags
    if kind == "number":
        return lambda value: _parse_number(value, name)
    if kind == "tool_calls":
        return lambda value: _parse_tool_calls(value, current)
    if kind == "rubrics":
        return _parse_rubrics
    if kind == "guidelines":
        return _parse_guidelines
    if name == "expected_retrieved_context":
        return _parse_chunks
    return _parse_object


def _changes(specs: tuple[FieldSpec, ...], current: Any, shown: dict[str, Any], form: dict[str, Any]) -> FormResult:
    result = FormResult()
    for spec in specs:
        if spec.name not in form:
            continue
        raw = form[spec.name]
        if isinstance(raw, str | list | float | int | None) and raw == shown[spec.name]:
            continue  # untouched (a DataFrame is never compared: == on it is element-wise)
        value = getattr(current, spec.name)
        try:
            new = _parser(spec, value)(raw)
        except _Problems as exc:
            result.problems += [FieldProblem(spec.name, row, message) for row, message in exc.problems]
            continue
        if new != _jsonable(value):
            result.changes[spec.name] = new
    return result


def session_changes(session: Session, form: dict[str, Any]) -> FormResult:
    """The changes to ``session``'s ground truth (and tags) that ``form`` asks for, for ``Store.save(pk, changes)``.

    ``form`` maps field names of ``SESSION_EDITORS`` to raw widget values; a field missing from
    it is left as it is. With problems the page must refuse the save.
    """
    return _changes(SESSION_EDITORS, session, form_values(session), form)


def turn_changes(truth: TurnTruth, form: dict[str, Any]) -> FormResult:
    """The changes to one turn's ground truth that ``form`` asks for, for ``Store.save(pk, changes, turn=i)``.

    ``form`` maps field names of ``TURN_EDITORS`` to raw widget values; a field missing from
    it is left as it is. With problems the page must refuse the save. That a ``qa_id`` is
    unique within the session is checked by ``Store.save`` (a ``UsageError`` naming both turns).
    """
    return _changes(TURN_EDITORS, truth, turn_form_values(truth), form)
