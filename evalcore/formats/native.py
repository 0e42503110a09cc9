"""``evalcore``: our own JSON Lines, one canonical session a line, lossless."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evalcore.errors import RecordError
from evalcore.formats._records import build_session, expect_dict
from evalcore.formats.base import Format, register
from evalcore.schema import SCHEMA_VERSION, Session
from evalcore.schema.session import TRUTH_FIELDS

_VERSION_PREFIX = f'{{"schema_version":{SCHEMA_VERSION}'


@register
class EvalcoreFormat(Format):
    """One ``Session`` a line, with a ``schema_version``.

    Everything is written but ``provenance``, which every read sets to the file it reads.
    """

    name = "evalcore"
    description = "our own JSONL, one session a line, lossless"
    writable = True

    keeps_truth = frozenset({*TRUTH_FIELDS, "turn_truth"})
    lossless = True

    def carries(self, block: dict[str, Any]) -> bool:
        return True  # lossless

    priority = 0

    def sniff(self, value: Any) -> bool:
        # The version evalcore writes is a whole number: a row of another format may carry a "schema_version" of its
        # own ("1.0"), and is not taken for ours (and refused as newer).
        version = value.get("schema_version") if isinstance(value, dict) else None
        return isinstance(version, int) and not isinstance(version, bool)

    def parse(self, value: Any) -> Session:
        data = dict(expect_dict(value, "record"))
        version = data.pop("schema_version", SCHEMA_VERSION)
        if not isinstance(version, int) or version > SCHEMA_VERSION:
            raise RecordError(
                f"schema_version {version!r} is newer than this evalcore understands "
                f"({SCHEMA_VERSION}); upgrade evalcore",
                "schema_version",
            )
        return build_session(data)

    def write(self, session: Session) -> Iterable[Any]:
        # Provenance describes the file a session was read from, and is set anew by every read.
        data = session.model_dump(mode="json", exclude_defaults=True, exclude={"provenance"})
        return [{"schema_version": SCHEMA_VERSION, **data}]

    def serialise(self, session: Session) -> list[str]:
        # The same as ``write`` then ``dumps``, in one pass of pydantic's serialiser.
        body = session.model_dump_json(exclude_defaults=True, exclude={"provenance"})
        return [_VERSION_PREFIX + ("}" if body == "{}" else "," + body[1:])]
