"""Every supported file format, registered by name, with detection from content.

``read`` streams sessions out of a file; ``write_sessions`` streams them into one.
"""

from evalcore.formats import (  # noqa: F401  (importing registers each format)
    databricks,
    gaussia,
    langchain,
    mlflow_trace,
    native,
    open_responses,
    openai,
    ragas,
    swarm,
    tau_bench,
)
from evalcore.formats.base import Format, Reader, formats, get_format, register
from evalcore.formats.files import ReadResult, detect_format, read, read_path, writer_for

__all__ = [
    "Format",
    "ReadResult",
    "Reader",
    "detect_format",
    "formats",
    "get_format",
    "read",
    "read_path",
    "register",
    "writer_for",
]
