"""The sandbox solver templates run in: Jinja's ``ImmutableSandboxedEnvironment``, with every way a template has to
make a large value, or to run for long, bounded (the bounds: ``evalcore.solver.limits``).

- Nothing is evaluated when a template is compiled (the optimizer is off, ``finalize`` and every filter need the
  render's context): ``{{ '%3000000000d'|format(1) }}`` cannot allocate when a task is loaded.
- When it renders: the operators that can make large values (``*``, ``**``, ``+``, ``%``) and every call go
  through ``call_binop`` and ``call``; every filter is wrapped; the template's own parts are rewritten before
  they are compiled (``_Guard``): each loop iterates through ``_ec_loop`` (the deadline, looked at every
  iteration), each list, tuple and dict it writes and each ``~`` is weighed (``_ec_made``, ``_ec_concat``), and a
  macro's or a loop body's constant text is counted as it is output. The guards are filters by names no template
  can write (``evalcore:loop``...). Each of these looks at the render's deadline
  and at the run's ``should_stop`` (``limits.Budget.tick``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import update_wrapper
from types import BuiltinMethodType, MethodType
from typing import Any

from jinja2 import nodes, pass_context, pass_environment
from jinja2.filters import make_attrgetter
from jinja2.runtime import Context, LoopContext, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEscapeFormatter, SandboxedFormatter
from jinja2.utils import Cycler, Namespace, _PassArg, generate_lorem_ipsum
from jinja2.visitor import NodeTransformer
from markupsafe import Markup

from evalcore.solver.limits import (
    MAX_ARGS,
    MAX_EXPONENT,
    MAX_INT_BITS,
    MAX_MADE,
    MAX_TEXT,
    TooLarge,
    budget,
    check_size,
    check_weight,
    current,
    printf_size,
    spec_size,
    take,
    weigh,
)

__all__ = ["SandboxEnvironment"]

_TEXT = (str, bytes)
#: The guards' names as filters: not names a template can write (``x|evalcore:made`` does not parse).
_GUARDS = {
    name: f"evalcore:{name.removeprefix('_ec_')}" for name in ("_ec_loop", "_ec_count", "_ec_made", "_ec_concat")
}


# -- the template's own parts, rewritten ---------------------------------------------------------------------------


def _wrap(node: nodes.Expr, guard: Callable[..., Any], *args: int) -> nodes.Filter:
    """``node|guard(*args)``: one of the guards below around ``node``, by a name no template can write."""
    name = _GUARDS[guard.__name__]
    return nodes.Filter(node, name, [nodes.Const(a) for a in args], [], None, None, lineno=node.lineno)


def _constant_output(body: list[nodes.Node]) -> int:
    """The characters of constant text ``body`` outputs each time it runs (its loops and macros count their own)."""
    size = 0
    stack: list[nodes.Node] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, nodes.TemplateData):
            size += len(node.data)
        elif isinstance(node, nodes.For):
            stack.extend(node.else_)
        elif not isinstance(node, nodes.Macro | nodes.CallBlock):
            stack.extend(node.iter_child_nodes())
    return size


class _Guard(NodeTransformer):
    """Rewrites a parsed template so that its loops, literals, ``~`` and repeated constant text are bounded."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        if node.recursive:  # its deeper levels iterate what `loop(...)` is given: the body counts itself
            self._count(node)
            node.iter = _wrap(node.iter, _ec_loop)  # type: ignore[arg-type]
        else:
            node.iter = _wrap(node.iter, _ec_loop, _constant_output(node.body))  # type: ignore[arg-type]
        return node

    def _count(self, node: nodes.Macro | nodes.CallBlock | nodes.For) -> None:
        """The constant text of ``node``'s body counted each time the body runs (an output of nothing, first)."""
        size = _constant_output(node.body)
        if size:
            node.body.insert(0, nodes.Output([_wrap(nodes.Const(""), _ec_count, size)], lineno=node.lineno))

    def _body(self, node: nodes.Macro | nodes.CallBlock) -> nodes.Node:
        self.generic_visit(node)
        self._count(node)
        return node

    visit_Macro = _body
    visit_CallBlock = _body

    def _made(self, node: nodes.Expr) -> nodes.Node:
        self.generic_visit(node)
        return _wrap(node, _ec_made)

    visit_List = _made
    visit_Dict = _made

    def visit_Tuple(self, node: nodes.Tuple) -> nodes.Node:
        self.generic_visit(node)
        return _wrap(node, _ec_made) if node.ctx == "load" else node

    def visit_Output(self, node: nodes.Output) -> nodes.Node:
        """A constant output (``{{ 'x' }}``, ``{{ 3 }}``) is the template's own text, as Jinja would fold it (which
        it cannot here: ``finalize`` needs the render): counted with the rest, not weighed each time."""
        node.nodes = [
            nodes.TemplateData(str(child.value), lineno=child.lineno)
            if isinstance(child, nodes.Const) and (child.value is None or isinstance(child.value, str | int | float))
            else child
            for child in node.nodes
        ]
        self.generic_visit(node)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return _wrap(nodes.Tuple(node.nodes, "load", lineno=node.lineno), _ec_concat)


@pass_context
def _ec_loop(context: Context, iterable: Iterable[Any], constant: int = 0) -> Iterator[Any]:
    """A loop's items, taken 16 at a time: before each 16 the deadline is looked at and the body's constant text
    counted for each of them."""
    render = current()
    if render is None:
        yield from iterable
        return
    items = iter(iterable)
    while chunk := tuple(itertools.islice(items, 16)):
        render.tick()
        if constant > 0:
            render.make(constant * len(chunk))
        yield from chunk


@pass_context
def _ec_count(context: Context, value: str, size: int) -> str:
    """Counts ``size`` characters of constant text about to be output (a macro's body)."""
    current = budget()
    if current is not None and size > 0:
        current.make(size)
    return value


@pass_context
def _ec_made(context: Context, value: Any) -> Any:
    """A list, tuple or dict the template wrote: weighed, refused past ``MAX_TEXT``."""
    size = check_weight(value)
    current = budget()
    if current is not None:
        current.make(size)
    return value


@pass_context
def _ec_concat(context: Context, parts: tuple[Any, ...]) -> str:
    """``a ~ b ~ c``, refused before it is joined when it would be past ``MAX_TEXT``."""
    size = sum(weigh(part) for part in parts)
    check_size(size, "a text")
    current = budget()
    if current is not None:
        current.make(size)
    return "".join(map(str, parts))


@pass_context
def _finalize(context: Context, value: Any) -> Any:
    """Each value a template outputs: weighed before it is printed, refused past ``MAX_TEXT`` (and counted: the
    time is looked at by the loop it is in, or the render around it)."""
    if isinstance(value, str):
        size = len(value)
        if size > MAX_TEXT:
            check_size(size, "a text")
    else:
        size = check_weight(value)
    render = current()
    if render is not None:
        render.made += size
        if render.made > MAX_MADE:
            render.make(0)  # (says so)
    return value


# -- filters -------------------------------------------------------------------------------------------------------


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str, default: Any = None) -> Any:
    """A filter's argument, given by position (``index``, after the value) or by ``name``."""
    return args[index] if len(args) > index else kwargs.get(name, default)


def _count_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Refuses a call given more than ``MAX_ARGS`` arguments (``f(*x, *x)`` doubles a list each time)."""
    if len(args) + len(kwargs) > MAX_ARGS:
        raise TooLarge(f"a call with {len(args) + len(kwargs):,} arguments; at most {MAX_ARGS:,}")


def _width(value: Any, what: str = "a text", unit: str = "characters") -> None:
    """Refuses a width, count or length past ``MAX_TEXT`` (what it would make: ``what`` of that many ``unit``)."""
    if isinstance(value, int) and value > MAX_TEXT:
        check_size(value, what, unit)


Checked = tuple[Any, tuple[Any, ...], dict[str, Any]]


def _check_center(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Checked:
    _width(_arg(args, kwargs, 0, "width"))
    return value, args, kwargs


def _check_format(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Checked:
    check_size(printf_size(str(value), kwargs or args), "a text")
    return value, args, kwargs


def _check_indent(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Checked:
    width = _arg(args, kwargs, 0, "width", 4)
    _width(width)
    pad = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
    check_size(len(str(value)) + (str(value).count("\n") + 1) * pad, "a text")
    return value, args, kwargs


def _check_wordwrap(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Checked:
    wrap = _arg(args, kwargs, 2, "wrapstring")
    if isinstance(wrap, str) and len(wrap) > 1:
        check_size(len(str(value)) + (len(str(value)) + 1) * len(wrap), "a text")
    return value, args, kwargs


def _replaced(text: str | bytes, old: Any, new: Any, count: Any) -> None:
    """Refuses ``text.replace(old, new, count)`` before it is made when it would be past ``MAX_TEXT``."""
    if not (isinstance(old, str | bytes) and isinstance(new, str | bytes)):
        return
    try:
        found = text.count(old) if old else len(text) + 1  # type: ignore[arg-type]
    except TypeError:
        return  # str and bytes mixed: Python says so
    if isinstance(count, int) and count >= 0:
        found = min(found, count)
    if len(new) > len(old):
        check_size(len(text) + found * (len(new) - len(old)), "a text")


def _check_replace(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Checked:
    if len(args) >= 2 or {"old", "new"} <= set(kwargs):
        old, new = _arg(args, kwargs, 0, "old"), _arg(args, kwargs, 1, "new")
        _replaced(str(value), str(old), str(new), _arg(args, kwargs, 2, "count"))
    return value, args, kwargs


def _check_join(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Checked:
    items = take(value)
    joint = _arg(args, kwargs, 0, "d", "")
    check_size(sum(weigh(item) for item in items) + len(str(joint)) * max(len(items) - 1, 0), "a text")
    return items, args, kwargs


def _check_fill(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any], count: str) -> Checked:
    times, fill = _arg(args, kwargs, 0, count), _arg(args, kwargs, 1, "fill_with")
    if isinstance(times, int):
        _width(times, "a list", "items")
        if fill is not None:
            check_size(weigh(fill) * times, "a list")  # (of that many copies of fill_with)
    return value, args, kwargs


def _check_tojson(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Checked:
    indent = _arg(args, kwargs, 0, "indent")
    step = len(indent) if isinstance(indent, str) else indent if isinstance(indent, int) else 0
    _width(step, "an indent")
    check_size(weigh(value, indent=step), "a text")
    return value, args, kwargs


def _check_pprint(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Checked:
    check_size(weigh(value, indent=1), "a text")
    return value, args, kwargs


@pass_environment
def _sum(environment: Any, iterable: Any, attribute: Any = None, start: Any = 0) -> Any:
    """``sum``: lists and tuples are chained (in linear time, not one copy per item), refused past ``MAX_TEXT``."""
    items = take(iterable)
    if attribute is not None:
        getter = make_attrgetter(environment, attribute)
        items = [getter(item) for item in items]
    if isinstance(start, list | tuple) and all(type(item) is type(start) for item in items):
        check_size(weigh(start) + sum(weigh(item) for item in items), "a list")
        return type(start)(itertools.chain(start, *items))
    if any(isinstance(item, list | tuple | str) for item in items):
        check_size(weigh(start) + sum(weigh(item) for item in items), "a value")
    return sum(items, start)


#: Filters that can make a value much larger than what they are given, with what they check first.
_CHECKS: dict[str, Callable[..., Checked]] = {
    "center": _check_center,
    "format": _check_format,
    "indent": _check_indent,
    "wordwrap": _check_wordwrap,
    "replace": _check_replace,
    "join": _check_join,
    "batch": lambda value, args, kwargs: _check_fill(value, args, kwargs, "linecount"),
    "slice": lambda value, args, kwargs: _check_fill(value, args, kwargs, "slices"),
    "tojson": _check_tojson,
    "pprint": _check_pprint,
}
#: Filters that make a new text: what they are given is weighed first (unless it is a text), what they make after.
_TEXT_FILTERS = frozenset(
    {
        "capitalize", "center", "e", "escape", "filesizeformat", "forceescape", "format", "indent", "join", "lower",
        "pprint", "replace", "safe", "string", "striptags", "title", "tojson", "trim", "truncate", "upper",
        "urlencode", "urlize", "wordwrap", "xmlattr",
    }
)  # fmt: skip


def _items(iterator: Iterator[Any]) -> Iterator[Any]:
    """A filter's items as they come, each counted, the deadline looked at before each."""
    for item in iterator:
        current = budget()
        if current is not None:
            current.make(1)
        yield item


def _result(name: str, result: Any, value: Any, args: tuple[Any, ...]) -> Any:
    """What a filter gave, counted; a new text past ``MAX_TEXT`` is refused."""
    if result is value or any(result is arg for arg in args):
        return result
    current = budget()
    if isinstance(result, _TEXT):
        if name in _TEXT_FILTERS:
            check_size(len(result), "a text")
        if current is not None:
            current.make(len(result))
    elif isinstance(result, Iterator):
        return _items(result)
    elif isinstance(result, list | tuple | dict) and current is not None:
        current.make(len(result))
    return result


def _bounded_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` (Jinja's filter ``name``) with its bounds: it runs only in a render (never when compiling)."""
    kind = _PassArg.from_obj(func)
    check = _CHECKS.get(name)
    text = name in _TEXT_FILTERS

    @pass_context
    def bounded(context: Context, value: Any, *args: Any, **kwargs: Any) -> Any:
        budget()
        _count_args(args, kwargs)
        if text and not isinstance(value, _TEXT):
            check_weight(value)
        if check is not None:
            value, args, kwargs = check(value, args, kwargs)
        if kind is _PassArg.context:
            result = func(context, value, *args, **kwargs)
        elif kind is _PassArg.eval_context:
            result = func(context.eval_ctx, value, *args, **kwargs)
        elif kind is _PassArg.environment:
            result = func(context.environment, value, *args, **kwargs)
        else:
            result = func(value, *args, **kwargs)
        return _result(name, result, value, args)

    bounded.__name__ = bounded.__qualname__ = f"{name}_bounded"
    return bounded


# -- calls, operators, str.format ----------------------------------------------------------------------------------


def _check_call(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Refuses a call of a method that makes a value much larger than its parts, before it is made; returns the
    arguments to call it with (an iterable ``join`` is given, read once)."""
    if not isinstance(obj, BuiltinMethodType | MethodType):
        return args
    owner, name = getattr(obj, "__self__", None), getattr(obj, "__name__", "")
    if isinstance(owner, str | bytes):
        if name in ("center", "ljust", "rjust", "zfill"):
            _width(_arg(args, kwargs, 0, "width"))
        elif name == "expandtabs":
            size = _arg(args, kwargs, 0, "tabsize", 8)
            if isinstance(size, int) and size > 1:
                tabs = owner.count(b"\t") if isinstance(owner, bytes) else owner.count("\t")
                check_size(len(owner) + tabs * size, "a text")
        elif name == "replace" and len(args) >= 2:
            _replaced(owner, args[0], args[1], args[2] if len(args) > 2 else kwargs.get("count"))
        elif name == "join" and args:
            items = take(args[0])
            check_size(sum(weigh(item) for item in items) + len(owner) * max(len(items) - 1, 0), "a text")
            return (items, *args[1:])
        elif name == "translate" and args and isinstance(args[0], Mapping):
            longest = max((len(v) for v in args[0].values() if isinstance(v, str | bytes)), default=1)
            check_size(len(owner) * longest, "a text")
    elif isinstance(owner, int) and name == "to_bytes":
        _width(_arg(args, kwargs, 0, "length", 1), "a value", "bytes")
    elif isinstance(owner, dict | type) and name == "fromkeys" and args:
        items = take(args[0])
        fill = args[1] if len(args) > 1 else None
        check_size(len(items) * (weigh(fill) + 2), "a dict")
        return (items, *args[1:])
    return args


def _made_text(obj: Any, result: Any, args: tuple[Any, ...]) -> bool:
    """Whether the text ``result`` of calling ``obj`` was made by the call: not its object nor an argument given
    back, nor what a container holds (``sample.get('trace')``)."""
    owner = getattr(obj, "__self__", None)
    if isinstance(owner, Mapping | list | tuple):
        return False
    return not (result is owner or any(result is arg for arg in args))


#: The globals whose calls make containers of what they are given: their results are weighed.
_MAKERS = (dict, Cycler, Namespace)


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    """Jinja's ``lipsum``, at most 100 paragraphs of at most 1,000 words."""
    if not (isinstance(n, int) and isinstance(max, int)) or n > 100 or max > 1000:
        raise TooLarge("lipsum gives at most 100 paragraphs of at most 1,000 words")
    return str(generate_lorem_ipsum(n, html, min, max))


class _Formatting:
    """``str.format``'s fields, each weighed before it is formatted; refused once the text passes ``MAX_TEXT``."""

    size = 0

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion in ("r", "a"):
            check_size(weigh(value) * 10, "a text")
        return super().convert_field(value, conversion)  # type: ignore[misc]

    def format_field(self, value: Any, format_spec: str) -> Any:
        budget()
        self.size += spec_size(format_spec) + weigh(value)
        check_size(self.size, "a text")
        return super().format_field(value, format_spec)  # type: ignore[misc]


class _Formatter(_Formatting, SandboxedFormatter):
    pass


class _EscapeFormatter(_Formatting, SandboxedEscapeFormatter):
    pass


class SandboxEnvironment(ImmutableSandboxedEnvironment):
    """The solver's sandbox (see the module): where an attribute or item of something undefined stays that first
    undefined (so an error names the first missing or forbidden step, not the last)."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(optimized=False, finalize=_finalize, **options)
        self.globals["lipsum"] = _lipsum
        self.filters = {name: _bounded_filter(name, func) for name, func in self.filters.items()}
        self.filters["sum"] = _bounded_filter("sum", _sum)
        for guard in (_ec_loop, _ec_count, _ec_made, _ec_concat):
            self.filters[_GUARDS[guard.__name__]] = guard

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = _Guard().visit(super()._parse(source, name, filename))
        tree.set_environment(self)
        return tree  # type: ignore[no-any-return]

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        current = budget()
        size = 0
        if operator == "+" and isinstance(left, str | bytes | list | tuple) and isinstance(right, type(left)):
            size = weigh(left) + weigh(right)
            check_size(size, "a text" if isinstance(left, str | bytes) else "a value")
        elif operator == "*":
            for seq, times in ((left, right), (right, left)):
                if isinstance(seq, str | bytes | list | tuple) and isinstance(times, int) and times > 0:
                    sequence = isinstance(seq, list | tuple)
                    size = weigh(seq) * times if sequence else len(seq) * times
                    check_size(size, "a value" if sequence else "a text")
            if isinstance(left, int) and isinstance(right, int):
                bits = left.bit_length() + right.bit_length()
                if bits > MAX_INT_BITS:
                    raise TooLarge(f"a number of {bits:,} bits; at most {MAX_INT_BITS:,}")
        elif operator == "**" and isinstance(left, int) and isinstance(right, int) and left not in (0, 1, -1):
            if abs(right) > MAX_EXPONENT:
                raise TooLarge(f"an exponent of {right:,}; at most {MAX_EXPONENT:,}")
            if right > 0 and left.bit_length() * right > MAX_INT_BITS:
                raise TooLarge(f"a number of {left.bit_length() * right:,} bits; at most {MAX_INT_BITS:,}")
        elif operator == "%" and isinstance(left, str | bytes):
            size = printf_size(left, right)
            check_size(size, "a text")
        if current is not None and size:
            current.make(size)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        current = budget()
        _count_args(args, kwargs)
        args = _check_call(__obj, args, kwargs)
        if isinstance(__obj, LoopContext) and args:  # a recursive loop's next level
            args = (_ec_loop(__context, args[0]), *args[1:])
        if current is not None:
            current.enter()
        try:
            result = super().call(__context, __obj, *args, **kwargs)
        finally:
            if current is not None:
                current.leave()
        if any(__obj is maker for maker in _MAKERS):
            size = check_weight(result)
        elif isinstance(result, _TEXT) and _made_text(__obj, result, args):
            size = len(result)
            check_size(size, "a text")
        else:
            return result
        if current is not None:
            current.make(size)
        return result

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """``str.format`` and ``str.format_map`` of a text, sandboxed as Jinja does, each field bounded."""
        if not isinstance(value, MethodType | BuiltinMethodType) or value.__name__ not in ("format", "format_map"):
            return None
        owner = value.__self__
        if not isinstance(owner, str):
            return None
        kind = type(owner)
        mapping = value.__name__ == "format_map"

        def wrapper(*args: Any, **kwargs: Any) -> str:
            formatter = _EscapeFormatter(self, escape=owner.escape) if isinstance(owner, Markup) else _Formatter(self)
            if mapping:
                if kwargs:
                    raise TypeError("format_map() takes no keyword arguments")
                if len(args) != 1:
                    raise TypeError(f"format_map() takes exactly one argument ({len(args)} given)")
                kwargs, args = args[0], ()
            return kind(formatter.vformat(owner, args, kwargs))

        return update_wrapper(wrapper, value)

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, Undefined):
            return obj
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        if isinstance(obj, Undefined):
            return obj
        return super().getitem(obj, argument)
