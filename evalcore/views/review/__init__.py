"""What the Review page shows and edits, worked out without drawing anything.

- :mod:`~evalcore.views.review.transcript`: a session laid out turn by turn, calls paired with results;
- :mod:`~evalcore.views.text`: text as Markdown that Streamlit shows literally;
- :mod:`~evalcore.views.review.diff`: a word diff of an answer against its reference;
- :mod:`~evalcore.views.review.weights`: Gaussia's turn weights explained in words;
- :mod:`~evalcore.views.review.fields`: the editable fields, and a form's values turned into a save's changes.
"""

from evalcore.views.review.diff import DiffPart, WordDiff, diff_markdown, word_diff
from evalcore.views.review.fields import (
    RUBRIC_SCALE_NAMES,
    SESSION_EDITORS,
    TURN_EDITORS,
    FieldKind,
    FieldProblem,
    FieldSpec,
    FormResult,
    calls_from_conversation,
    form_values,
    guidelines_text,
    rubric_rows,
    session_changes,
    tool_call_rows,
    turn_changes,
    turn_form_values,
)
from evalcore.views.review.transcript import (
    LONG_CHARS,
    LONG_LINES,
    CallView,
    Item,
    MessageView,
    TranscriptView,
    TurnView,
    is_long,
    pretty_json,
    transcript,
    turn_count,
)
from evalcore.views.review.weights import WeightsExplanation, explain_weights, format_number
from evalcore.views.text import WORD_JOINER, code_span, escape_inline, literal_markdown

__all__ = [
    "LONG_CHARS",
    "LONG_LINES",
    "RUBRIC_SCALE_NAMES",
    "SESSION_EDITORS",
    "TURN_EDITORS",
    "WORD_JOINER",
    "CallView",
    "DiffPart",
    "FieldKind",
    "FieldProblem",
    "FieldSpec",
    "FormResult",
    "Item",
    "MessageView",
    "TranscriptView",
    "TurnView",
    "WeightsExplanation",
    "WordDiff",
    "calls_from_conversation",
    "code_span",
    "diff_markdown",
    "escape_inline",
    "explain_weights",
    "form_values",
    "format_number",
    "guidelines_text",
    "is_long",
    "literal_markdown",
    "pretty_json",
    "rubric_rows",
    "session_changes",
    "tool_call_rows",
    "transcript",
    "turn_changes",
    "turn_count",
    "turn_form_values",
    "word_diff",
]
