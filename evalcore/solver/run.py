"""Running a task's message builders for samples: the multi-turn solver itself.

What each builder does (LatticeFlow's ``multi_turn_solver``):

- ``chat_message`` appends its templated message.
- ``generate`` calls the model under evaluation (``default_model``) with the conversation so far and appends
  its answer as the assistant.
- ``generate_message`` calls its own model (``model_key`` or ``model_id``) with the conversation (when
  ``include_conversation``) followed by its templated ``extra_input_messages``, and appends the answer with
  ``output_role``. The extra messages are the judge's instructions: they are not part of the conversation.
- ``loop`` runs its builders again and again, ``loop_index`` counting from 0, until one of them meets its
  ``terminate_if``; then execution goes on after the loop. Reaching ``max_iterations`` goes on too with
  ``on_max_iterations: continue``; with ``error`` the sample fails. The seed: "This option is only meaningful
  when at least one nested message_builder has a termination condition. If no nested message_builder has a
  termination condition, the enum value is ignored and the behavior is always treated as continue." A
  ``terminate_if`` at any depth counts (one in an inner loop too, though it only ever ends the inner loop).
- ``load_trace`` reads a recorded conversation from the sample's ``trace_column`` (in any format evalcore
  reads: a Trace object or its JSON text, OpenAI, Anthropic or LangChain messages...) into the history.

Termination (``terminate_if``), checked on the text of the message a builder appended. The seed says:
"Within a loop, determines if all messages in the current iteration are kept or not, if the termination
condition is met. Outside of a loop, decides if the message is kept or not if the termination condition is
met." So:

- inside a loop, the innermost loop ends; with ``keep_iteration: false`` every message of its current
  iteration is dropped, with ``true`` they stay; execution continues after that loop (an enclosing loop goes
  on with its iteration). The seed's judge example: "The conversation continues until the judge outputs
  <done>, at which point the loop terminates and that turn is discarded.";
- outside a loop, the conversation ends there: the builders after it do not run; with ``keep_iteration:
  false`` the message that met the condition is dropped, with ``true`` it is the last message. This is our
  reading of the seed's clarification example: its judge answers ``<done>`` once the model has answered (a
  non-European country, answered directly); running the final ``generate`` after that would make the model
  answer its own answer again. When the judge says "Yes" instead, nothing is met and the final ``generate``
  gives the answer ("Vienna").

A sample that fails (a model error after retries, a timeout, a missing template variable, a loop that
reached ``max_iterations`` with ``on_max_iterations: error``, a trace that cannot be read) keeps the
conversation so far and the calls made, with the error; the other samples are not affected.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from evalcore.errors import EvalcoreError, UsageError
from evalcore.formats._chat import chat_message_out
from evalcore.formats.jsonio import loads
from evalcore.schema import Message, Session, call_ids
from evalcore.solver.limits import Allowance, StopRequested
from evalcore.solver.task import (
    ChatMessage,
    Generate,
    GenerateMessage,
    InputMessage,
    LoadTrace,
    Loop,
    Task,
    TaskError,
    TerminateIf,
)
from evalcore.solver.templates import MessagesView, SampleView, Templates

__all__ = [
    "MAX_CONVERSATION",
    "CallRecord",
    "ChatModel",
    "Completion",
    "SampleResult",
    "SolveError",
    "StopRequested",
    "sample_key",
    "solve",
    "solve_sample",
]


class SolveError(EvalcoreError):
    """A sample could not be solved; the message names the builder and why."""


class Completion(Protocol):
    """What the solver reads of a model's answer (``evalcore.model.Completion`` has these)."""

    @property
    def text(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def input_tokens(self) -> int | None: ...
    @property
    def output_tokens(self) -> int | None: ...
    @property
    def cost(self) -> float | None: ...
    @property
    def latency_ms(self) -> float: ...
    @property
    def warning(self) -> str | None: ...


class ChatModel(Protocol):
    """A chat model endpoint (``evalcore.model.ModelClient``): ``model=None`` is its configured model."""

    async def complete(self, messages: list[dict[str, Any]], *, model: str | None = None) -> Completion: ...


@dataclass(frozen=True)
class CallRecord:
    """One model call of a sample: which builder made it, to which model, what it cost."""

    builder: str
    model: str
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None
    latency_ms: float
    #: What the client had to say about the answer (usage figures that cannot be true, say).
    warning: str | None = None


@dataclass
class SampleResult:
    """A solved (or failed) sample: the conversation, the calls, the error."""

    sample: dict[str, Any]
    messages: list[Message]
    calls: list[CallRecord]
    task_hash: str
    model: str
    message_format: str = "latticeflow"
    #: Why the sample failed (``messages`` then holds the conversation so far); ``None`` when it was solved.
    error: str | None = None
    #: With ``message_format: open_responses``, the conversation as an Open Responses Trace (``{"items": [...]}``).
    trace: dict[str, Any] | None = None
    #: Wall time of the whole sample.
    latency_ms: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether the sample was solved."""
        return self.error is None

    @property
    def models(self) -> list[str]:
        """The models called, each once, in the order first called."""
        return list(dict.fromkeys(call.model for call in self.calls))

    @property
    def input_tokens(self) -> int | None:
        """Input tokens of all calls (``None`` when no call reported any)."""
        return _total([call.input_tokens for call in self.calls])

    @property
    def output_tokens(self) -> int | None:
        """Output tokens of all calls (``None`` when no call reported any)."""
        return _total([call.output_tokens for call in self.calls])

    @property
    def cost(self) -> float | None:
        """Cost of all calls (``None`` when no call was priced)."""
        costs = [call.cost for call in self.calls if call.cost is not None]
        return sum(costs) if costs else None

    def session(self) -> Session:
        """The result as a session: the conversation, the sample's ``target`` as the reference answer, the
        sample's fields under ``metadata["sample"]`` and the run under ``metadata["solver"]``."""
        target = self.sample.get("target")
        reference = target if isinstance(target, str) or target is None else json.dumps(target, ensure_ascii=False)
        solver = {
            "task_hash": self.task_hash,
            "model": self.model,
            "models": self.models,
            "message_format": self.message_format,
            "error": self.error,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": self.cost,
            "latency_ms": self.latency_ms,
            "calls": [asdict(call) for call in self.calls],
        }
        return Session(
            messages=self.messages,
            reference=reference,
            trace=self.trace,
            metadata={"sample": self.sample, "solver": solver},
        )


def _total(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def sample_key(task_hash: str, model: str, sample: dict[str, Any]) -> str:
    """A sample's identity in a run: the same task (hash), model and sample give the same key (a re-run skips it)."""
    canonical = json.dumps([task_hash, model, sample], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


#: The most characters one sample's conversation may hold (its messages' texts).
MAX_CONVERSATION = 10_000_000


class _Conversation:
    """The messages so far, kept three ways: canonical, as chat dicts for the model, as the templates see them."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.chat: list[dict[str, Any]] = []
        self.view = MessagesView()
        self.size = 0  # characters of the messages' texts

    def __len__(self) -> int:
        return len(self.messages)

    def add(self, message: Message, chat: dict[str, Any] | None = None, where: str = "") -> None:
        """Add ``message``; one that would make the conversation hold more than ``MAX_CONVERSATION`` characters is
        a ``SolveError`` naming ``where`` it came from."""
        text = message.text
        if self.size + len(text) > MAX_CONVERSATION:
            raise SolveError(
                f"{where}: the conversation would hold more than {MAX_CONVERSATION:,} characters "
                f"(it holds {self.size:,} in {len(self.messages):,} messages)"
            )
        self.messages.append(message)
        self.chat.append(chat if chat is not None else {"role": message.role, "content": message.content})
        self.view.append({"role": message.role, "content": text})
        self.size += len(text)

    def truncate(self, length: int) -> None:
        self.size -= sum(len(seen["content"]) for seen in self.view[length:])
        del self.messages[length:], self.chat[length:], self.view[length:]


class _Run:
    """One sample's run through the builders."""

    def __init__(
        self,
        task: Task,
        sample: dict[str, Any],
        model: ChatModel,
        default_model: str,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        self.task = task
        self.templates: Templates = task.templates()
        self.sample = SampleView(sample)
        self.model = model
        self.default_model = default_model
        self.conversation = _Conversation()
        self.calls: list[CallRecord] = []
        self.allowance = Allowance(should_stop=should_stop)  # the sample's templates' time, the run's stop

    async def run(self) -> None:
        met = await self.builders(self.task.builders, "", None)
        if met is not None and not met.keep_iteration:
            self.conversation.truncate(len(self.conversation) - 1)  # outside a loop: that one message

    async def builders(
        self,
        builders: Sequence[ChatMessage | Generate | GenerateMessage | Loop | LoadTrace],
        prefix: str,
        loop_index: int | None,
    ) -> TerminateIf | None:
        """Run ``builders`` in order; stop at the first whose ``terminate_if`` is met, and return that condition."""
        for i, builder in enumerate(builders):
            path = f"{prefix}message_builders[{i}]"
            self.allowance.check()
            if isinstance(builder, Loop):
                await self.loop(builder, path)
                continue
            if isinstance(builder, LoadTrace):
                self.load_trace(builder, path)
                continue
            message = await self.message(builder, path, loop_index)
            self.conversation.add(message, where=path)
            condition = builder.terminate_if
            if condition is not None and condition.met(message.text):
                return condition
        return None

    async def loop(self, loop: Loop, path: str) -> None:
        for index in range(loop.max_iterations):
            start = len(self.conversation)
            met = await self.builders(loop.message_builders, f"{path}.loop.", index)
            if met is not None:
                if not met.keep_iteration:
                    self.conversation.truncate(start)
                return
        if loop.fails_at_max():
            raise SolveError(
                f"{path}: the loop reached max_iterations ({loop.max_iterations}) and no terminate_if was met "
                "(on_max_iterations: error)"
            )

    async def message(
        self, builder: ChatMessage | Generate | GenerateMessage, path: str, loop_index: int | None
    ) -> Message:
        if isinstance(builder, ChatMessage):
            return Message(role=builder.role, content=self.render(builder, f"{path}: content", loop_index))
        if isinstance(builder, Generate):
            text = await self.call(list(self.conversation.chat), self.default_model, path)
            return Message(role="assistant", content=text)
        extra = [
            {"role": m.role, "content": self.render(m, f"{path}.extra_input_messages[{j}]: content", loop_index)}
            for j, m in enumerate(builder.extra_input_messages)
        ]
        history = list(self.conversation.chat) if builder.include_conversation else []
        text = await self.call(history + extra, builder.model, path)
        return Message(role=builder.output_role, content=text)

    def render(self, message: InputMessage, where: str, loop_index: int | None) -> str:
        return self.templates.render(
            message.content,
            where,
            sample=self.sample,
            messages=self.conversation.view,
            loop_index=loop_index,
            allowance=self.allowance,
        )

    async def call(self, messages: list[dict[str, Any]], model: str, path: str) -> str:
        try:
            completion = await self.model.complete(messages, model=model)
        except EvalcoreError as exc:
            raise SolveError(f"{path}: the model {model!r} failed: {exc}") from None
        self.calls.append(
            CallRecord(
                builder=path,
                model=model,
                input_tokens=completion.input_tokens,
                output_tokens=completion.output_tokens,
                cost=completion.cost,
                latency_ms=completion.latency_ms,
                warning=completion.warning,
            )
        )
        return completion.text

    def load_trace(self, builder: LoadTrace, path: str) -> None:
        for message, chat in load_trace_messages(self.sample, builder.trace_column, path):
            self.conversation.add(message, chat, path)


def load_trace_messages(sample: dict[str, Any], column: str, path: str) -> list[tuple[Message, dict[str, Any]]]:
    """The messages of the trace in ``sample[column]``, each with its chat dict; read as any evalcore format."""
    from evalcore.formats import detect_format

    where = f"{path}: trace_column {column!r}"
    if column not in sample:
        fields = ", ".join(sorted(map(str, sample))) or "none"
        raise SolveError(f"{where}: the sample has no such field (its fields: {fields})")
    value = sample[column]
    if isinstance(value, str):
        try:
            value = loads(value)
        except ValueError as exc:
            raise SolveError(f"{where}: the text is not JSON ({exc})") from None
    if value is None or value == [] or value == {}:
        raise SolveError(f"{where}: the trace is empty")
    try:
        fmt = detect_format(value)
        reader = fmt.reader()
        sessions = [session for _, session in [*reader.feed(value, 1), *reader.close()]]
    except EvalcoreError as exc:
        raise SolveError(f"{where}: the trace cannot be read: {exc}") from None
    if reader.failures:  # a part of it could not be read: the conversation would miss it
        raise SolveError(f"{where}: the trace cannot be read: {reader.failures[0][1]}")
    if not sessions:
        raise SolveError(f"{where}: the trace ({fmt.name}) holds no conversation")
    messages = sessions[0].messages_with_context()
    ids = call_ids(messages)
    return [(m, chat_message_out(m, ids, f"{where}.messages[{i}]")) for i, m in enumerate(messages)]


def _trace(messages: list[Message]) -> dict[str, Any]:
    from evalcore.formats import get_format

    (trace,) = get_format("open-responses").write(Session(messages=messages))
    return dict(trace)


def _ready(task: Task) -> None:
    if not task.filled:
        keys = ", ".join(sorted(task.config_keys))
        raise TaskError(task.source, [f"config keys not filled: {keys} (give --config KEY=VALUE for each)"])


async def solve_sample(
    task: Task,
    sample: dict[str, Any],
    model: ChatModel,
    *,
    default_model: str,
    should_stop: Callable[[], bool] | None = None,
) -> SampleResult:
    """Run ``task``'s builders for one sample with ``model`` (the model under evaluation: ``default_model``).

    A failure of the sample is in the result's ``error`` (with the conversation so far), not raised; a task
    whose ``<< config.KEY >>`` are not filled is a ``TaskError``. ``should_stop()`` is asked between builders and
    while a template renders (every 0.1 s at most): True raises ``StopRequested`` (the sample is not finished).
    """
    _ready(task)
    started = time.perf_counter()
    run = _Run(task, sample, model, default_model, should_stop)
    error = None
    try:
        await run.run()
    except StopRequested:
        raise
    except EvalcoreError as exc:
        error = str(exc)
    messages = run.conversation.messages
    return SampleResult(
        sample=sample,
        messages=messages,
        calls=run.calls,
        task_hash=task.hash(),
        model=default_model,
        message_format=task.solver.message_format,
        error=error,
        trace=_trace(messages) if task.solver.message_format == "open_responses" else None,
        latency_ms=(time.perf_counter() - started) * 1000,
    )


OnResult = Callable[[int, SampleResult], Awaitable[object] | object]


async def solve(
    task: Task,
    samples: Sequence[dict[str, Any]],
    model: ChatModel,
    *,
    default_model: str,
    concurrency: int = 1,
    on_result: OnResult | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> list[SampleResult]:
    """Solve every sample, at most ``concurrency`` at a time; ``on_result(index, result)`` is called (and
    awaited, when it returns an awaitable) as each finishes. Returns the results in the samples' order.

    A sample's failure is its result's ``error``; an exception of ``on_result`` stops the run (the samples in
    flight are cancelled) and is raised. ``should_stop()`` is asked every 0.1 s (between builders, while a
    template renders, while a model answers): once it says True the samples in flight are given up and
    ``StopRequested`` is raised (those finished were given to ``on_result``).
    """
    _ready(task)
    if concurrency < 1:
        raise UsageError(f"concurrency must be at least 1, got {concurrency}")
    task.templates()
    if not samples:
        return []
    results: list[SampleResult | None] = [None] * len(samples)
    todo = iter(enumerate(samples))

    async def worker() -> None:
        for index, sample in todo:  # shared by the workers: each takes the next sample when it is free
            result = await solve_sample(task, sample, model, default_model=default_model, should_stop=should_stop)
            results[index] = result
            if on_result is not None:
                returned = on_result(index, result)
                if inspect.isawaitable(returned):
                    await returned

    async def watch(stop: Callable[[], bool]) -> None:  # for samples waiting on a model (templates look themselves)
        while not stop():
            await asyncio.sleep(STOP_POLL)
        raise StopRequested("the run was asked to stop")

    workers = [asyncio.ensure_future(worker()) for _ in range(min(concurrency, len(samples)))]
    everything = [*workers, *([asyncio.ensure_future(watch(should_stop))] if should_stop is not None else [])]
    try:
        waiting = set(everything)
        while not all(w.done() for w in workers):
            done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            for finished in done:
                finished.result()  # the first failure (or the stop), raised
    finally:
        for running in everything:
            running.cancel()
        await asyncio.gather(*everything, return_exceptions=True)  # (each one's end retrieved: none left to log)
    return [r for r in results if r is not None]


#: Seconds between two looks at ``should_stop`` while samples wait on a model.
STOP_POLL = 0.1
