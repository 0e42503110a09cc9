"""The solver's templates: Jinja in a sandbox, strict about what is missing.

A message's ``content`` is a Jinja template over ``sample`` (the sample's fields), ``messages`` (the
conversation so far: ``{role, content}`` dicts) and ``loop_index`` (the current iteration of the
innermost loop, from 0). The environment is Jinja's ``ImmutableSandboxedEnvironment``: a template
cannot reach Python internals (``{{ ''.__class__ }}``, ``{{ sample.__class__ }}``...) nor change
what it is given; such an attempt fails the sample with a ``TemplateError`` that says so. An
undefined variable is an error naming it and the builder (``StrictUndefined``), never an empty text.

Each distinct template of a task is compiled once, when the task is parsed (a syntax error is then a
problem of the file), and rendered per sample. A content with no Jinja in it is used as it is.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from jinja2 import StrictUndefined, Template, TemplateSyntaxError, Undefined
from jinja2.exceptions import SecurityError, TemplateRuntimeError, UndefinedError
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment, safe_range
from jinja2.utils import missing

from evalcore.errors import EvalcoreError

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


#: The longest text or list a template may make with ``*``, and the largest exponent of ``**``.
MAX_REPEAT = 1_000_000
MAX_EXPONENT = 1_000
#: The longest text a template may render, and the longest it may take (checked as its output comes).
MAX_TEXT = 1_000_000
MAX_SECONDS = 5.0


class _TooLarge(TemplateRuntimeError):
    """A template asked for a value too large to make (``'a' * 10**10``, ``7 ** 100000``, a huge text)."""


#: The render under way on this thread or task: when it must end (``range`` looks, as loops go round).
_DEADLINE: ContextVar[float] = ContextVar("template_deadline", default=float("inf"))


def _timed_range(*args: int) -> Iterator[int]:
    """The sandbox's ``range`` (at most ``MAX_RANGE`` items), given up past the render's deadline: loops that
    write nothing are bounded in time too."""
    deadline = _DEADLINE.get()
    for n, value in enumerate(safe_range(*args)):
        if n % 1024 == 0 and time.monotonic() > deadline:
            raise _TooLarge(f"more than {MAX_SECONDS:g} s of rendering")
        yield value


class _Environment(ImmutableSandboxedEnvironment):
    """The sandbox, where an attribute or item of something undefined stays that first undefined (so the
    error names the first missing or forbidden step, not the last); ``*``, ``**`` and ``+`` refuse values
    past their bounds, and loops over ``range`` past the render's time. (A template can still grow a text
    with ``~`` in a loop over a ``namespace``: task files are the user's own, like scripts; a text rendered
    past ``MAX_TEXT`` is refused.)"""

    intercepted_binops = frozenset({"*", "**", "+"})

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        sequences = isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple)
        if operator == "+" and sequences and len(left) + len(right) > MAX_TEXT:
            raise _TooLarge(f"a value of {len(left) + len(right):,} items; at most {MAX_TEXT:,}")
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                if isinstance(seq, str | list | tuple) and isinstance(times, int) and len(seq) * times > MAX_REPEAT:
                    raise _TooLarge(f"a value of {len(seq) * times:,} items; at most {MAX_REPEAT:,}")
        elif operator == "**" and isinstance(right, int) and abs(right) > MAX_EXPONENT and left not in (0, 1, -1):
            raise _TooLarge(f"an exponent of {right:,}; at most {MAX_EXPONENT:,}")
        return super().call_binop(context, operator, left, right)

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, Undefined):
            return obj
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        if isinstance(obj, Undefined):
            return obj
        return super().getitem(obj, argument)


_ENV = _Environment(undefined=_Undefined, autoescape=False, keep_trailing_newline=True)
_ENV.globals["range"] = _timed_range
_OUTSIDE_LOOP = _Undefined(hint="'loop_index' is undefined: it is defined only inside a loop", name="loop_index")


def _bounded(template: Template, variables: dict[str, Any]) -> str:
    """``template`` rendered, given up past ``MAX_TEXT`` characters or ``MAX_SECONDS`` (a loop that writes)."""
    deadline = time.monotonic() + MAX_SECONDS
    token = _DEADLINE.set(deadline)
    parts: list[str] = []
    size = 0
    try:
        for part in template.generate(variables):
            parts.append(part)
            size += len(part)
            if size > MAX_TEXT:
                raise _TooLarge(f"a text of more than {MAX_TEXT:,} characters")
            if time.monotonic() > deadline:
                raise _TooLarge(f"more than {MAX_SECONDS:g} s of rendering")
    finally:
        _DEADLINE.reset(token)
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
    return None


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
    ) -> str:
        """``source`` filled for one sample; ``where`` (the builder's path and field) names it in errors."""
        try:
            template = self.compile(source)
        except TemplateSyntaxError as exc:
            raise TemplateError(f"{where}: template syntax error on its line {exc.lineno}: {exc.message}") from None
        if template is None:
            return source
        view = sample if isinstance(sample, SampleView) else SampleView(sample)
        index: Any = _OUTSIDE_LOOP if loop_index is None else loop_index
        try:
            return _bounded(template, {"sample": view, "messages": messages, "loop_index": index})
        except SecurityError as exc:
            raise TemplateError(f"{where}: the template may not reach Python internals ({exc})") from None
        except UndefinedError as exc:
            raise TemplateError(f"{where}: undefined variable: {exc}") from None
        except (_TooLarge, OverflowError) as exc:
            raise TemplateError(f"{where}: the template asks for too large a value ({exc})") from None
        except Exception as exc:  # a template's own failure (1/0, a bad filter argument): the sample's error
            raise TemplateError(f"{where}: the template failed: {type(exc).__name__}: {exc}") from None
