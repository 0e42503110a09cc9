"""Every supported file format, registered by name, with detection from content.

``read`` streams sessions out of a file; ``write_sessions`` streams them into one. The format modules
(``BUILTIN_FORMATS``) are imported on the registry's first lookup, not with this package.
"""

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
