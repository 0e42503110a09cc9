"""The canonical conversation model: every supported format reads into it and writes out of it."""

from evalcore.schema.labels import Label, LabelComment, LabelQuestion, Labels
from evalcore.schema.message import Content, Message, Role, ToolCall, block_text
from evalcore.schema.session import (
    SCHEMA_VERSION,
    STATUSES,
    TRUTH_FIELDS,
    ContextChunk,
    LabelledSession,
    Provenance,
    Session,
    Status,
    ToolLinks,
    Turn,
    TurnTruth,
    call_ids,
    labels_of,
    link_tool_results,
    tool_links,
)
from evalcore.schema.validation import MAX_DEPTH, Problem, check_storable, resolve_weights, validate_session

__all__ = [
    "MAX_DEPTH",
    "SCHEMA_VERSION",
    "STATUSES",
    "TRUTH_FIELDS",
    "Content",
    "Label",
    "LabelComment",
    "LabelQuestion",
    "LabelledSession",
    "Labels",
    "ContextChunk",
    "Message",
    "Problem",
    "Provenance",
    "Role",
    "Session",
    "Status",
    "ToolCall",
    "ToolLinks",
    "Turn",
    "TurnTruth",
    "block_text",
    "call_ids",
    "labels_of",
    "check_storable",
    "link_tool_results",
    "resolve_weights",
    "tool_links",
    "validate_session",
]
