"""The multi-turn solver: run conversation scenarios (LatticeFlow's ``multi_turn_solver`` task files)
against any OpenAI-compatible model.

``load_task`` / ``parse_task`` read a task file into typed message builders (``TaskError`` lists every
problem); ``load_samples`` reads the samples; ``solve`` runs them concurrently through a ``ChatModel``
(``evalcore.model.ModelClient``), giving a ``SampleResult`` per sample. Task files are treated as hostile: their
templates run in a bounded sandbox (``evalcore.solver.sandbox``, its bounds in ``evalcore.solver.limits``).
"""

from evalcore.solver.run import (
    CallRecord,
    ChatModel,
    Completion,
    SampleResult,
    SolveError,
    StopRequested,
    sample_key,
    solve,
    solve_sample,
)
from evalcore.solver.samples import SamplesError, load_samples, parse_samples, read_samples
from evalcore.solver.task import (
    BUILDER_TYPES,
    ChatMessage,
    Generate,
    GenerateMessage,
    InputMessage,
    LoadTrace,
    Loop,
    Solver,
    Task,
    TaskError,
    TerminateIf,
    load_task,
    parse_task,
)
from evalcore.solver.templates import TemplateError

__all__ = [
    "BUILDER_TYPES",
    "CallRecord",
    "ChatMessage",
    "ChatModel",
    "Completion",
    "Generate",
    "GenerateMessage",
    "InputMessage",
    "LoadTrace",
    "Loop",
    "SampleResult",
    "SamplesError",
    "SolveError",
    "Solver",
    "StopRequested",
    "Task",
    "TaskError",
    "TemplateError",
    "TerminateIf",
    "load_samples",
    "load_task",
    "parse_samples",
    "parse_task",
    "read_samples",
    "sample_key",
    "solve",
    "solve_sample",
]
