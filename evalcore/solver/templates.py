"""The solver's templates: Jinja in a sandbox, strict about what is missing.

A message's ``content`` is a Jinja template over ``sample`` (the sample's fields), ``messages`` (the
conversation so far: ``{role, content}`` dicts) and ``loop_index`` (the current iteration of the
innermost loop, from 0). The environment is Jinja's ``ImmutableSandboxedEnvironment`` with bounds
(``evalcore.solver.sandbox``, ``evalcore.solver.limits``): a template cannot reach Python internals
(``{{ ''.__class__ }}``, ``{{ sample.__class__ }}``...) nor change what it is given, nor make a value
past ``MAX_TEXT``, nor run past its deadline; such an attempt fails the sample with a ``TemplateError``
that says so (a run asked to stop raises ``StopRequested`` instead). An undefined variable is an error
naming it and the builder (``StrictUndefined``), never an empty text.

Each distinct template of a task is compiled once, when the task is parsed (a syntax error is then a
problem of the file), and rendered per sample. A content with no Jinja in it is used as it is.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from jinja2 import StrictUndefined, Template, TemplateSyntaxError
from jinja2.exceptions import SecurityError, UndefinedError
from jinja2.utils import missing

from evalcore.errors import EvalcoreError
from evalcore.solver import limits
from evalcore.solver.limits import (
    MAX_SECONDS,
    MAX_TEXT,
    Allowance,
    Budget,
    OverBudget,
    StopRequested,
    TooLarge,
)
from evalcore.solver.sandbox import SandboxEnvironment

if TYPE_CHECKING:
    from evalcore.solver.task import InputMessage, Task

__all__ = ["MessagesView", "SampleView", "TemplateError", "Templates", "message_templates", "syntax_problem"]


class TemplateError(EvalcoreError):
    """A template could not be rendered for a sample: a variable it uses is missing, it tried to reach
    what the sandbox keeps away, or it failed. The message names the builder and the reason."""


class SampleView(dict[str, Any]):
    """A sample's fields as the templates see them (a dict, named so that a missing field is reported as one)."""


class MessagesView(list[dict[str, Any]]):
    """The conversation as the templates see it: ``{role, content}`` dicts (a list, named for its errors)."""


class _Undefined(StrictUndefined):
    """``StrictUndefined`` whose message names a missing sample field, or message, as such."""

    __slots__ = ()

    @property
    def _undefined_message(self) -> str:
        hint = self._undefined_hint
        if hint:
            return hint
        obj, name = self._undefined_obj, self._undefined_name
        if isinstance(obj, SampleView):
            fields = ", ".join(sorted(map(str, obj))) or "none"
            return f"the sample has no field {name!r} (its fields: {fields})"
        if isinstance(obj, MessagesView):
            return f"messages has no element {name!r} (the conversation has {len(obj)} messages)"
        if obj is missing:
            return f"{name!r} is undefined"
        return str(super()._undefined_message)


_ENV = SandboxEnvironment(undefined=_Undefined, autoescape=False, keep_trailing_newline=True)
_OUTSIDE_LOOP = _Undefined(hint="'loop_index' is undefined: it is defined only inside a loop", name="loop_index")


def _bounded(template: Template, variables: dict[str, Any], allowance: Allowance | None) -> str:
    """``template`` rendered within its bounds (``evalcore.solver.limits``): at most ``MAX_TEXT`` characters,
    ``MAX_SECONDS`` (or what is left of the sample's ``allowance``), and stopped when the run is asked to stop."""
    seconds, late = MAX_SECONDS, f"the template ran for more than {MAX_SECONDS:g} s"
    if allowance is not None and allowance.seconds - allowance.spent < seconds:
        seconds = max(allowance.seconds - allowance.spent, 0.0)
        late = f"the sample's templates ran for more than {allowance.seconds:g} s in all"
    current = Budget(seconds, late, allowance.should_stop if allowance is not None else None)
    started = time.monotonic()
    parts: list[str] = []
    size = 0
    token = limits.start(current)
    try:
        current.tick()
        for part in template.generate(variables):  # (its loops and calls look at the time)
            parts.append(part)
            size += len(part)
            if size > MAX_TEXT:
                raise TooLarge(f"a text of more than {MAX_TEXT:,} characters")
    finally:
        limits.stop(token)
        if allowance is not None:
            allowance.spent += time.monotonic() - started
    return "".join(parts)


def _is_template(source: str) -> bool:
    return "{{" in source or "{%" in source or "{#" in source


def syntax_problem(source: str) -> str | None:
    """Why ``source`` is not a valid template (``None``: it is one)."""
    if not _is_template(source):
        return None
    try:
        _ENV.parse(source)
    except TemplateSyntaxError as exc:
        return f"template syntax error on its line {exc.lineno}: {exc.message}"
    except (RecursionError, SyntaxError, MemoryError):
        return _TOO_DEEP
    return None


#: What a template nested too deep to compile is told (Jinja and Python compile it recursively).
_TOO_DEEP = "the template nests too deeply to compile (brackets, blocks or filters inside one another)"


def message_templates(task: Task) -> Iterator[tuple[str, InputMessage]]:
    """Every ``chat_message`` of ``task`` (extra input messages included), with its path."""
    from evalcore.solver.task import ChatMessage, GenerateMessage, Loop

    def walk(builders: list[Any], prefix: str) -> Iterator[tuple[str, InputMessage]]:
        for i, builder in enumerate(builders):
            path = f"{prefix}message_builders[{i}]"
            if isinstance(builder, ChatMessage):
                yield path, builder
            elif isinstance(builder, GenerateMessage):
                for j, extra in enumerate(builder.extra_input_messages):
                    yield f"{path}.generate_message.extra_input_messages[{j}]", extra
            elif isinstance(builder, Loop):
                yield from walk(builder.message_builders, f"{path}.loop.")

    return walk(task.builders, "")


class Templates:
    """A task's templates, compiled once; ``render`` fills one for a sample."""

    def __init__(self) -> None:
        self._compiled: dict[str, Template] = {}

    @classmethod
    def for_task(cls, task: Task) -> Templates:
        """Compile every template of ``task``; syntax errors are a ``TaskError`` listing them all."""
        from evalcore.solver.task import TaskError

        templates = cls()
        problems = []
        for path, message in message_templates(task):
            try:
                templates.compile(message.content)
            except TemplateSyntaxError as exc:
                problems.append(f"{path}: content: template syntax error on its line {exc.lineno}: {exc.message}")
            except (RecursionError, SyntaxError, MemoryError):
                problems.append(f"{path}: content: {_TOO_DEEP}")
        if problems:
            raise TaskError(task.source, problems)
        return templates

    def compile(self, source: str) -> Template | None:
        """The compiled template of ``source`` (``None``: plain text, used as it is)."""
        if not _is_template(source):
            return None
        template = self._compiled.get(source)
        if template is None:
            template = self._compiled[source] = _ENV.from_string(source)
        return template

    def render(
        self,
        source: str,
        where: str,
        *,
        sample: Mapping[str, Any],
        messages: list[dict[str, Any]],
        loop_index: int | None = None,
        allowance: Allowance | None = None,
    ) -> str:
        """``source`` filled for one sample; ``where`` (the builder's path and field) names it in errors.

        ``allowance``: what the sample's templates may still take (their time in all, the run's ``should_stop``);
        a stop asked for raises ``StopRequested`` (not a ``TemplateError``: the sample did not fail)."""
        try:
            template = self.compile(source)
        except TemplateSyntaxError as exc:
            raise TemplateError(f"{where}: template syntax error on its line {exc.lineno}: {exc.message}") from None
        except (RecursionError, SyntaxError, MemoryError):
            raise TemplateError(f"{where}: {_TOO_DEEP}") from None
        if template is None:
            return source
        view = sample if isinstance(sample, SampleView) else SampleView(sample)
        index: Any = _OUTSIDE_LOOP if loop_index is None else loop_index
        try:
            return _bounded(template, {"sample": view, "messages": messages, "loop_index": index}, allowance)
        except StopRequested:
            raise
        except SecurityError as exc:
            raise TemplateError(f"{where}: the template may not reach Python internals ({exc})") from None
        except UndefinedError as exc:
            raise TemplateError(f"{where}: undefined variable: {exc}") from None
        except OverBudget as exc:
            raise TemplateError(f"{where}: {exc}") from None
        except OverflowError as exc:
            raise TemplateError(f"{where}: the template asks for too large a value ({exc})") from None
        except Exception as exc:  # a template's own failure (1/0, a bad filter argument): the sample's error
            raise TemplateError(f"{where}: the template failed: {type(exc).__name__}: {exc}") from None
