"""evalcore: review, annotate, score and export multi-turn LLM agent conversations.

The library never imports streamlit; the app in ``app.py`` and ``app_pages/`` sits on top of it.
"""

from typing import TYPE_CHECKING

from evalcore._infra.lazy import lazy_names
from evalcore.errors import (
    ConversionError,
    EvalcoreError,
    FormatDetectionError,
    RecordError,
    RegistryError,
    UnknownNameError,
    UsageError,
)

if TYPE_CHECKING:
    from evalcore.convert import ConvertReport, FileProblem, convert_file, validate_file
    from evalcore.formats import Format, ReadResult, formats, get_format, read, read_path, writer_for
    from evalcore.schema import (
        ContextChunk,
        Message,
        Problem,
        Provenance,
        Session,
        ToolCall,
        Turn,
        TurnTruth,
        validate_session,
    )

# Imported on first use: a command that only scores (say) does not pay for every format's module.
_LAZY = {
    **dict.fromkeys(["ConvertReport", "FileProblem", "convert_file", "validate_file"], "evalcore.convert"),
    **dict.fromkeys(
        ["Format", "ReadResult", "formats", "get_format", "read", "read_path", "writer_for"], "evalcore.formats"
    ),
    **dict.fromkeys(
        [
            "ContextChunk",
            "Message",
            "Problem",
            "Provenance",
            "Session",
            "ToolCall",
            "Turn",
            "TurnTruth",
            "validate_session",
        ],
        "evalcore.schema",
    ),
}

__getattr__ = lazy_names(__name__, globals(), _LAZY)


__version__ = "0.1.0"

__all__ = [
    "ContextChunk",
    "ConversionError",
    "ConvertReport",
    "EvalcoreError",
    "FileProblem",
    "Format",
    "FormatDetectionError",
    "Message",
    "Problem",
    "Provenance",
    "ReadResult",
    "RecordError",
    "RegistryError",
    "Session",
    "ToolCall",
    "Turn",
    "TurnTruth",
    "UnknownNameError",
    "UsageError",
    "__version__",
    "convert_file",
    "formats",
    "get_format",
    "read",
    "read_path",
    "validate_file",
    "validate_session",
    "writer_for",
]
