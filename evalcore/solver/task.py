"""Solver task files: LatticeFlow's ``multi_turn_solver`` YAML, validated into typed builders.

A task file has the seed's shape::

    definition:
      solver:
        type: "multi_turn_solver"
        message_format: "latticeflow"        # or "open_responses"
        message_builders: [...]              # chat_message, generate, generate_message, loop, load_trace

Everything else in the file (scorers, datasets, a description...) is left alone. ``<< config.KEY >>``
placeholders are filled from the caller's config values before validation of the filled task (a
missing key is a problem naming the key and where it is used). Every problem of a file is reported at
once, in one ``TaskError``, each naming the builder's path and its field::

    message_builders[3].loop.message_builders[0]: model_key: give model_key or model_id, not both
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, ValidationInfo, field_validator
from pydantic_core import ErrorDetails, PydanticCustomError

from evalcore.errors import UsageError
from evalcore.registry import Registry
from evalcore.solver.templates import Templates, syntax_problem

__all__ = [
    "BUILDERS",
    "BUILDER_TYPES",
    "Builder",
    "ChatMessage",
    "Generate",
    "GenerateMessage",
    "InputMessage",
    "LoadTrace",
    "Loop",
    "LoopBuilder",
    "Solver",
    "Task",
    "TaskError",
    "TerminateIf",
    "load_task",
    "parse_task",
]

Role = Literal["system", "user", "assistant"]
#: The message builders, by their ``type``.
BUILDER_TYPES = ("chat_message", "generate", "generate_message", "loop", "load_trace")
_LOOP_TYPES = ("chat_message", "generate", "generate_message", "loop")
#: ``<< config.KEY >>``, filled before the run.
PLACEHOLDER = re.compile(r"<<\s*config\.([A-Za-z_][A-Za-z0-9_.-]*)\s*>>")
_STRICT = ConfigDict(extra="forbid", strict=False)
Loc = tuple[str | int, ...]
#: The most a loop may iterate, and the most message builders one sample may run (loops inside loops multiply).
MAX_ITERATIONS = 1_000
MAX_STEPS = 10_000


class TaskError(UsageError):
    """A task file that cannot be run: ``problems`` lists every one, each naming where it is (also the base of
    ``SamplesError``, a samples file's problems)."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        head = f"{source}: {len(problems)} problem{'s' if len(problems) != 1 else ''}"
        super().__init__(head + "".join(f"\n  {p}" for p in problems))


class TerminateIf(BaseModel):
    """``terminate_if``: met when the builder's message contains ``includes``."""

    model_config = _STRICT

    includes: str = Field(min_length=1)
    #: Inside a loop: keep the messages of the iteration that met it; outside: keep the message itself.
    keep_iteration: bool = True

    def met(self, text: str) -> bool:
        """Whether ``text`` meets the condition."""
        return self.includes in text


class InputMessage(BaseModel):
    """A message of ``extra_input_messages``: a ``chat_message`` given to a ``generate_message``'s model besides
    the conversation (its ``type`` may be left out; it has no ``terminate_if``: it is not part of the conversation)."""

    model_config = _STRICT

    type: Literal["chat_message"] = "chat_message"
    role: Role
    content: str


class ChatMessage(InputMessage):
    """``chat_message``: appends a fixed or templated message."""

    terminate_if: TerminateIf | None = None


class Generate(BaseModel):
    """``generate``: the model under evaluation answers the conversation so far, as the assistant."""

    model_config = _STRICT

    type: Literal["generate"]
    terminate_if: TerminateIf | None = None


class GenerateMessage(BaseModel):
    """``generate_message``: another model (a judge, a simulated user) writes the next message."""

    model_config = _STRICT

    type: Literal["generate_message"]
    model_key: str | None = None
    model_id: str | None = Field(default=None, validate_default=True)
    extra_input_messages: list[InputMessage] = Field(min_length=1)
    include_conversation: bool = True
    output_role: Role = "assistant"
    terminate_if: TerminateIf | None = None

    @field_validator("model_id")
    @classmethod
    def _one_model(cls, value: str | None, info: ValidationInfo) -> str | None:
        if "model_key" not in info.data:
            return value  # model_key itself was bad: reported already
        key = info.data["model_key"]
        if key is not None and value is not None:
            raise PydanticCustomError("evalcore", "give model_key or model_id, not both", {"field": "model_key"})
        if key is None and value is None:
            raise PydanticCustomError("evalcore", "required: give model_key or model_id", {"field": "model_key"})
        return value

    @property
    def model(self) -> str:
        """The model this builder calls."""
        model = self.model_key if self.model_key is not None else self.model_id
        assert model is not None  # (validated)
        return model


class Loop(BaseModel):
    """``loop``: runs its builders again and again until one's ``terminate_if`` is met, at most ``max_iterations``."""

    model_config = _STRICT

    type: Literal["loop"]
    message_builders: list[LoopBuilder] = Field(min_length=1)
    max_iterations: int = Field(default=10, ge=1, le=MAX_ITERATIONS)
    on_max_iterations: Literal["error", "continue"] = "error"

    def can_terminate(self) -> bool:
        """Whether some builder inside (at any depth) has a ``terminate_if``."""
        for builder in self.message_builders:
            if isinstance(builder, Loop):
                if builder.can_terminate():
                    return True
            elif builder.terminate_if is not None:
                return True
        return False

    def fails_at_max(self) -> bool:
        """Whether reaching ``max_iterations`` fails the sample: ``error`` counts only when something can terminate."""
        return self.on_max_iterations == "error" and self.can_terminate()


class LoadTrace(BaseModel):
    """``load_trace``: the sample's ``trace_column`` holds a recorded conversation, added to the history."""

    model_config = _STRICT

    type: Literal["load_trace"]
    trace_column: str = Field(min_length=1)


LoopBuilder = Annotated[ChatMessage | Generate | GenerateMessage | Loop, Field(discriminator="type")]
Builder = Annotated[ChatMessage | Generate | GenerateMessage | Loop | LoadTrace, Field(discriminator="type")]
Loop.model_rebuild()

#: The message builders by their ``type``, in the registry formats and metrics use (a name is taken once).
BUILDERS: Registry[type[BaseModel]] = Registry("message builder")
for _builder in (ChatMessage, Generate, GenerateMessage, Loop, LoadTrace):
    BUILDERS.add(get_args(_builder.model_fields["type"].annotation)[0], _builder)


class Solver(BaseModel):
    """The ``solver:`` block of a task."""

    model_config = _STRICT

    type: Literal["multi_turn_solver"]
    message_format: Literal["latticeflow", "open_responses"] = "latticeflow"
    message_builders: list[Builder] = Field(min_length=1)


class Task(BaseModel):
    """A parsed task: its solver, the config keys it uses and the values they were filled with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    solver: Solver
    #: Each ``<< config.KEY >>`` the file uses, with the places it is used.
    config_keys: dict[str, list[str]] = Field(default_factory=dict)
    #: The values filled in (``None``: not filled yet; run only a filled task, see ``configure``).
    config: dict[str, str] | None = None
    source: str = "task"
    #: The ``solver:`` block as read (placeholders unfilled), for ``configure``.
    raw: dict[str, Any] = Field(default_factory=dict, repr=False)
    _templates: Any = PrivateAttr(default=None)
    _hash: str | None = PrivateAttr(default=None)
    _node: Any = PrivateAttr(default=None)  # the YAML node of the solver block, for the lines of problems

    @property
    def builders(self) -> list[ChatMessage | Generate | GenerateMessage | Loop | LoadTrace]:
        """The top-level message builders."""
        return self.solver.message_builders

    @property
    def filled(self) -> bool:
        """Whether every ``<< config.KEY >>`` is filled (always so for a task that uses none)."""
        return not self.config_keys or self.config is not None

    def configure(self, config: Mapping[str, str]) -> Task:
        """This task with its ``<< config.KEY >>`` filled from ``config``; a missing key is a ``TaskError``."""
        return _build(self.raw, dict(config), self.source, self._node)

    def hash(self) -> str:
        """sha256 of the filled task (its canonical JSON): the same task, filled alike, has the same hash."""
        if self._hash is None:
            canonical = json.dumps(self.solver.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
            self._hash = hashlib.sha256(canonical.encode()).hexdigest()
        return self._hash

    def templates(self) -> Templates:
        """The task's compiled templates (see :mod:`evalcore.solver.templates`), compiled once."""
        if self._templates is None:
            self._templates = Templates.for_task(self)
        templates: Templates = self._templates
        return templates


def load_task(path: str | Path, config: Mapping[str, str] | None = None) -> Task:
    """Read the task file at ``path`` (filled from ``config`` when given); a bad file is a ``TaskError``."""
    path = Path(path)
    try:
        with path.open("rb") as file:
            data = file.read(MAX_TASK_SIZE + 1)  # (a task named /dev/zero is read no further)
        if len(data) > MAX_TASK_SIZE:
            raise TaskError(str(path), [_too_big()])
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(str(path), [f"cannot read the file: {exc}"]) from None
    return parse_task(text, config, source=str(path))


#: The largest task file read (characters of a text; bytes of a file).
MAX_TASK_SIZE = 1_000_000
#: How deep a task file may nest mappings and lists (its aliases expanded).
MAX_NESTING = 100


def _too_big() -> str:
    return f"the file is larger than a task file may be ({MAX_TASK_SIZE:,} bytes)"


def parse_task(text: str, config: Mapping[str, str] | None = None, *, source: str = "task") -> Task:
    """Parse a task file's text. With ``config``, fill ``<< config.KEY >>`` from it (missing keys are problems);
    without, the placeholders stay and ``Task.config_keys`` lists them (``Task.configure`` fills them later).

    Each problem names the builder's path and field, and the line of the file it is on.
    """
    if len(text) > MAX_TASK_SIZE:
        raise TaskError(source, [_too_big()])
    _check_nesting(text, source)  # before the recursive reads below
    try:
        document = yaml.safe_load(text)
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise TaskError(source, [_yaml_problem(exc)]) from None
    except ValueError as exc:  # a number past Python's 4,300 digits, a date that does not exist
        reason = "a number of more than 4,300 digits" if "integer string conversion" in str(exc) else str(exc)
        raise TaskError(source, [f"a value that cannot be read: {reason}"]) from None
    except RecursionError:  # (the nesting was checked: a backstop)
        raise TaskError(source, [f"nested more than {MAX_NESTING} deep"]) from None
    _check_size(document, source)
    solver = _solver_block(document, source)
    node = _child(_child(root, "definition"), "solver")
    duplicates = list(_duplicate_keys(node, ()))
    return _build(solver, None if config is None else dict(config), source, node, duplicates)


#: The most values a task file may hold once its YAML aliases are expanded (a "billion laughs" file holds more).
MAX_VALUES = 100_000


def _too_many() -> str:
    return f"the file holds more than {MAX_VALUES:,} values once its aliases (*name) are expanded"


def _check_nesting(text: str, source: str) -> None:
    """Refuse a file that nests more than ``MAX_NESTING`` deep (counting what its aliases bring where they are used),
    whose alias is inside its own anchor, or that holds more than ``MAX_VALUES`` values, from YAML's events: without
    recursion, and stopping at the first such place (PyYAML reads nesting recursively, and slowly when deep)."""
    heights: dict[str, int] = {}  # each anchor's height: 0 for a scalar, 1 + its tallest part for a collection
    open_: list[list[Any]] = []  # each collection open: [its anchor, the height of its tallest part so far]
    try:
        count = 0
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            line = f"line {event.start_mark.line + 1}: " if event.start_mark is not None else ""
            if isinstance(event, yaml.NodeEvent):  # a scalar, an alias or a collection: one value
                count += 1
                if count > MAX_VALUES:
                    raise TaskError(source, [_too_many()])
            height = 0
            if isinstance(event, yaml.CollectionStartEvent):
                open_.append([event.anchor, 0])
                if len(open_) > MAX_NESTING:
                    raise TaskError(source, [f"{line}nested more than {MAX_NESTING} deep"])
                continue
            if isinstance(event, yaml.CollectionEndEvent):
                anchor, tallest = open_.pop()
                height = tallest + 1
                if anchor is not None:
                    heights[anchor] = height
            elif isinstance(event, yaml.AliasEvent):
                if event.anchor not in heights:
                    raise TaskError(source, [f"{line}the alias *{event.anchor} is inside its own anchor"])
                height = heights[event.anchor]
                if len(open_) + height > MAX_NESTING:
                    reason = f"{line}nested more than {MAX_NESTING} deep once *{event.anchor} is expanded"
                    raise TaskError(source, [reason])
            elif isinstance(event, yaml.ScalarEvent) and event.anchor is not None:
                heights[event.anchor] = 0
            if open_:
                open_[-1][1] = max(open_[-1][1], height)
    except yaml.YAMLError:
        return  # reported as the file is read


def _check_size(document: Any, source: str) -> None:
    """Refuse a document of more than ``MAX_VALUES`` values, counting each alias where it is used (so that
    nested aliases cannot make the checks below run for ever)."""
    stack = [document]
    count = 0
    while stack:
        value = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise TaskError(source, [_too_many()])
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


def _duplicate_keys(node: Any, loc: Loc) -> Iterator[tuple[Loc, str]]:
    """A problem for each key given twice in one mapping (YAML would keep the last one, silently)."""
    kind = getattr(node, "id", None)
    if kind == "sequence":
        for i, item in enumerate(node.value):
            yield from _duplicate_keys(item, (*loc, i))
    if kind != "mapping":
        return
    pairs = [(str(getattr(key, "value", "")), key, value) for key, value in node.value]
    tag = next((getattr(value, "value", None) for name, _, value in pairs if name == "type"), None)
    if loc and isinstance(loc[-1], int) and isinstance(tag, str) and tag in BUILDER_TYPES:
        loc = (*loc, tag)
    seen: set[str] = set()
    for name, key, value in pairs:
        if name in seen:
            yield (*loc, name), f"given again on line {key.start_mark.line + 1} (only the last would be used)"
        seen.add(name)
        yield from _duplicate_keys(value, (*loc, name))


def _yaml_problem(exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    reason = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    if context:
        reason = f"{reason} ({context})"
    if mark is None:
        return f"not valid YAML: {reason}"
    return f"line {mark.line + 1}, column {mark.column + 1}: not valid YAML: {reason}"


def _solver_block(document: Any, source: str) -> dict[str, Any]:
    shape = "expected a task: a mapping with definition: solver: (type: multi_turn_solver)"
    if not isinstance(document, dict):
        raise TaskError(source, [f"{shape}, got {_kind(document)}"])
    definition = document.get("definition")
    if not isinstance(definition, dict):
        got = "no definition" if definition is None else f"definition is {_kind(definition)}"
        raise TaskError(source, [f"{shape}, got {got}"])
    solver = definition.get("solver")
    if not isinstance(solver, dict):
        got = "no definition.solver" if solver is None else f"definition.solver is {_kind(solver)}"
        raise TaskError(source, [f"{shape}, got {got}"])
    kind = solver.get("type")
    if kind != "multi_turn_solver":
        raise TaskError(source, [f"type: only multi_turn_solver is supported, got {kind!r}"])
    return solver


def _build(
    raw: dict[str, Any],
    config: dict[str, str] | None,
    source: str,
    node: Any = None,
    problems: list[tuple[Loc, str]] | None = None,
) -> Task:
    """The task of the ``solver:`` block ``raw`` (``node``: its YAML node, for the lines of problems; ``problems``:
    those found already)."""
    keys: dict[str, list[str]] = {}
    problems = list(problems or [])
    for loc, text in _strings(raw, ()):
        for match in PLACEHOLDER.finditer(text):
            keys.setdefault(match.group(1), []).append(_where(loc))
            if config is not None and match.group(1) not in config:
                key = match.group(1)
                problems.append((loc, f"config key {key!r} is not set (give --config {key}=VALUE)"))
        reason = syntax_problem(text) if loc and loc[-1] == "content" else None
        if reason is not None:
            problems.append((loc, reason))
    filled = raw if config is None else _fill(raw, config)
    try:
        solver = Solver.model_validate(filled)
    except ValidationError as exc:
        problems += [_problem(error) for error in exc.errors()]
    else:
        steps, where = _most_steps(solver.message_builders, ())
        if steps > MAX_STEPS:
            reason = (
                f"one sample could run {_count(steps)} message builders (a loop runs what it holds max_iterations "
                f"times, loops inside loops multiply); at most {MAX_STEPS:,}"
            )
            problems.append(((*where, "max_iterations") if where else ("message_builders",), reason))
    if problems:
        problems.sort(key=lambda problem: [part for part in problem[0] if isinstance(part, int)])
        raise TaskError(source, [f"{_where(loc)}: {reason}{_line(node, loc)}" for loc, reason in problems])
    task = Task(solver=solver, config_keys=keys, config=config, source=source, raw=raw)
    task._node = node
    task.templates()  # every template compiled now (checked above: a syntax error is the file's problem)
    return task


def _most_steps(builders: list[Any], loc: Loc) -> tuple[int, Loc | None]:
    """The most message builders ``builders`` can run for one sample, and where the deepest loop is that can run
    more than ``MAX_STEPS`` on its own (``None``: none can)."""
    total = 0
    where: Loc | None = None
    for i, builder in enumerate(builders):
        if isinstance(builder, Loop):
            here: Loc = (*loc, "message_builders", i, "loop")
            inner, deeper = _most_steps(builder.message_builders, here)
            steps = builder.max_iterations * inner
            total += steps
            if where is None:
                where = deeper if deeper is not None else here if steps > MAX_STEPS else None
        else:
            total += 1
    return total, where


def _count(number: int) -> str:
    """A count as a person reads it (one past 10**30: its order of magnitude)."""
    return f"{number:,}" if number < 10**30 else f"about 10^{len(str(number)) - 1}"


def _strings(value: Any, loc: Loc) -> Iterator[tuple[Loc, str]]:
    """Each string in ``value`` with its location (a builder's type after its index, as pydantic puts it)."""
    if isinstance(value, str):
        yield loc, value
    elif isinstance(value, dict):
        tag = value.get("type")
        if loc and isinstance(loc[-1], int) and isinstance(tag, str) and tag in BUILDER_TYPES:
            loc = (*loc, tag)
        for key, item in value.items():
            yield from _strings(item, (*loc, str(key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, (*loc, i))


def _child(node: Any, step: str | int) -> Any:
    """The YAML node at ``step`` (a key or an index) under ``node``; ``None`` when there is none."""
    kind = getattr(node, "id", None)
    if kind == "mapping" and isinstance(step, str):
        return next((value for key, value in node.value if getattr(key, "value", None) == step), None)
    if kind == "sequence" and isinstance(step, int) and 0 <= step < len(node.value):
        return node.value[step]
    return None


def _line(node: Any, loc: Loc) -> str:
    """`` (line N)``: where ``loc`` (or the deepest part of it the file has) is in the file; empty when unknown."""
    if node is None:
        return ""
    for step in loc:
        child = _child(node, step)
        if child is None:
            if isinstance(step, str) and step in BUILDER_TYPES:
                continue  # the builder's type, which pydantic adds to the path
            break
        node = child
    return f" (line {node.start_mark.line + 1})"


def _fill(value: Any, config: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: str(config.get(m.group(1), m.group(0))), value)
    if isinstance(value, dict):
        return {key: _fill(item, config) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, config) for item in value]
    return value


def _where(loc: Loc) -> str:
    """``message_builders[3].loop.message_builders[0]: model_key``: the builder's path, then its field.

    The tag pydantic puts after a builder's index is left out when it names the builder itself (the
    last one): ``message_builders[0].generate_message.model_key`` reads ``message_builders[0]: model_key``.
    """
    parts = list(loc)
    field = None
    if parts and isinstance(parts[-1], str):
        field = str(parts.pop())
    if len(parts) >= 2 and isinstance(parts[-1], str) and parts[-1] in BUILDER_TYPES and isinstance(parts[-2], int):
        parts.pop()
    path = ""
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else part)
    if field is None:
        return path or "solver"
    return f"{path}: {field}" if path else field


def _problem(error: ErrorDetails) -> tuple[Loc, str]:
    """One pydantic error as a problem: where, then why, in a reviewer's words."""
    loc = tuple(error["loc"])
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "evalcore":
        return (*loc[:-1], str(ctx["field"])), error["msg"]
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        return (*loc, "type"), _tag_reason(loc, error)
    if kind == "extra_forbidden" and loc[-1] == "terminate_if" and len(loc) > 1:
        if loc[-2] in ("loop", "load_trace"):
            return loc, f"not allowed on a {loc[-2]} (a builder inside a loop may have one)"
        if len(loc) > 2 and loc[-3] == "extra_input_messages":
            return loc, "not allowed on an extra input message (put it on the generate_message)"
    return loc, _reason(kind, error)


def _tag_reason(loc: Loc, error: ErrorDetails) -> str:
    inside_loop = "loop" in loc
    expected = ", ".join(_LOOP_TYPES if inside_loop else BUILDER_TYPES)
    if error["type"] == "union_tag_not_found":
        return f"required; one of {expected}"
    tag = (error.get("ctx") or {}).get("tag")
    if inside_loop and tag == "load_trace":
        return "load_trace is not allowed inside a loop: load the trace before the loop"
    return f"unknown builder type {tag!r}; expected one of {expected}"


_REASONS = {
    "missing": "required",
    "extra_forbidden": "unknown field",
    "string_type": "expected a string, got {kind}",
    "bool_type": "expected true or false, got {kind}",
    "bool_parsing": "expected true or false, got {input!r}",
    "int_type": "expected an integer, got {kind}",
    "int_parsing": "expected an integer, got {input!r}",
    "int_from_float": "expected an integer, got {input!r}",
    "list_type": "expected a list, got {kind}",
    "model_type": "expected a mapping, got {kind}",
    "model_attributes_type": "expected a mapping, got {kind}",
    "dict_type": "expected a mapping, got {kind}",
}


def _reason(kind: str, error: ErrorDetails) -> str:
    ctx = error.get("ctx") or {}
    value = error.get("input")
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected', '?')}, got {_shown(value)}"
    if kind == "greater_than_equal":
        return f"must be at least {ctx.get('ge')}, got {_shown(value)}"
    if kind == "less_than_equal":
        return f"must be at most {ctx.get('le'):,}, got {_shown(value)}"
    if kind == "too_short" and isinstance(value, list):
        return "must not be empty"
    if kind == "string_too_short":
        return "must not be empty"
    template = _REASONS.get(kind)
    if template is None:
        return str(error["msg"])
    return template.format(kind=_kind(value), input=_Shown(value))


def _shown(value: Any) -> str:
    """``repr(value)`` as a problem quotes it: a number of more than 30 digits by its size, a long text cut."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 100:
        return f"a number of about {value.bit_length() * 3 // 10:,} digits"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class _Shown:
    """A value in a problem's template: ``{input!r}`` is ``_shown(value)``."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return _shown(self.value)


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__
