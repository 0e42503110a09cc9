"""What the browser tests share: the running server as a test sees it, and the gestures a reviewer makes.

Streamlit draws tables (``st.dataframe``, ``st.data_editor``) on a canvas: a cell is clicked by its
position inside the ``stDataFrame`` element, and read from the hidden accessible table the grid keeps
in step with the canvas (``glide-cell-COLUMN-ROW``; column 0 is the row marker when rows can be
ticked or added).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from app_server import settle, streamlit_server
from dbutil import query
from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from evalcore.store import open_store

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DATA = ROOT / "sample_data"

#: The grids' geometry (Streamlit's defaults): the header row, then rows of 35 px.
HEADER_PX = 36
ROW_PX = 35


@dataclass
class Server:
    """A running app: its URL, its database (a SQLite file, or a PostgreSQL URL) and its log."""

    url: str
    db: Path | str
    log: Path
    folder: Path

    @property
    def engine(self) -> str:
        return "postgresql" if str(self.db).startswith("postgresql://") else "sqlite"

    def shot_name(self, name: str) -> str:
        """A screenshot's name: the page's, marked ``pg-`` when the app runs on PostgreSQL."""
        return name if self.engine == "sqlite" else f"pg-{name}"

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Rows straight from the database, as another program would read them (``?`` placeholders)."""
        if self.engine == "sqlite":
            with closing(sqlite3.connect(self.db)) as db:
                return db.execute(sql, params).fetchall()
        with open_store(self.db) as store:
            return query(store, sql, list(params))

    def import_sessions(self, dataset: str, lines: list[Any], name: str) -> list[str]:
        """Write ``lines`` to a file called ``name``, import it with evalcore's importer; the sessions' refs."""
        from evalcore.importing import import_file

        path = self.folder / name
        path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
        with open_store(self.db) as store:
            report = import_file(store, path, dataset)
            assert report.new == len(lines), report
            return [store.sessions.get(pk).ref for pk in store.sessions.pks(dataset)]

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def start_server(tmp_path_factory: Any, *, samples: Path | None = None, db: str | None = None) -> Iterator[Server]:
    """The app on a new database (in a temporary folder, else ``db``, a PostgreSQL database's URL): a fixture's
    body, it yields, then stops the server."""
    folder = tmp_path_factory.mktemp("e2e")
    where: Path | str = db or folder / "e2e.db"
    log = folder / "streamlit.log"
    with streamlit_server(where, samples=samples, log=log, folder=folder) as url:
        yield Server(url, where, log, folder)


def on_loopback(url: str) -> bool:
    """Whether a request stays on this machine: to 127.0.0.1 (the app, a test's own servers), or inline
    (``data:``, ``blob:``, ``about:``)."""
    parts = urlsplit(url)
    return parts.scheme in ("data", "blob", "about") or parts.hostname == "127.0.0.1"


def ragas_lines() -> list[str]:
    """The five ragas sample sessions: tool calls with their results, references, reference tool calls."""
    return (SAMPLE_DATA / "ragas.jsonl").read_text().splitlines()


def review_path(dataset: str, ref: str) -> str:
    return f"/review?dataset={quote(dataset, safe='')}&session={quote(ref, safe='')}"


def heading(page: Page) -> Locator:
    """The page's heading: a page's title, or the session's ref on Review."""
    return page.locator('[data-testid="stMain"] h1, [data-testid="stMain"] h3').first


def set_reviewer(page: Page, name: str) -> None:
    """Be ``name`` (one-person mode): give the name the sidebar asks for once, or change it (the "You" button)."""
    sidebar = page.get_by_test_id("stSidebar")
    you = sidebar.get_by_role("button", name=re.compile(r"^(badge)?\s*You: "))
    asked = sidebar.get_by_role("textbox", name="Your name")
    expect(you.or_(asked).first).to_be_visible()

    def shown() -> str:  # what the button says, as a reader sees it (without the word joiners that stop links)
        text = you.locator('[data-testid="stMarkdownContainer"]').inner_text().replace("\u2060", "")
        return " ".join(text.split())

    if asked.count():
        asked.fill(name)
        sidebar.get_by_role("button", name="Save name").click()
    elif shown() != f"You: {name}":
        you.click()
        box = page.get_by_role("dialog").get_by_role("textbox", name="Your name")
        box.fill(name)
        page.get_by_role("dialog").get_by_role("button", name="Save name").click()
        settle(page)
        page.keyboard.press("Escape")  # (the popover stays open after the rerun)
    settle(page)
    expect(you).to_be_visible()
    assert shown() == " ".join(f"You: {name}".split()), shown()


def alert(page: Page, text: str | re.Pattern[str]) -> Locator:
    """A message box (success, info, warning, error) holding ``text``."""
    return page.locator('[data-testid="stAlert"]').filter(has_text=text)


def toast(page: Page, text: str | re.Pattern[str]) -> Locator:
    """A toast (how a save that went well is told) holding ``text``."""
    return page.locator('[data-testid="stToast"]').filter(has_text=text)


def text_area(page: Page, label: str) -> Locator:
    return page.get_by_role("textbox", name=label, exact=True)


def expander(page: Page, label: str) -> Locator:
    return page.locator('[data-testid="stExpander"]').filter(has=page.locator("summary").filter(has_text=label))


def open_expander(page: Page, label: str) -> Locator:
    box = expander(page, label)
    if box.locator("details").get_attribute("open") is None:
        box.locator("summary").click()
    expect(box.locator("details")).to_have_attribute("open", "")
    settle(page)
    return box


def grid_with(page: Page, column: str) -> Locator:
    """The table (``st.dataframe`` or ``st.data_editor``) that has a column headed ``column``."""
    return page.locator('[data-testid="stDataFrame"]').filter(
        has=page.locator('th[role="columnheader"]', has_text=column)
    )


def cell(grid: Locator, column: int, row: int) -> Locator:
    """A cell's text as the grid's accessible table holds it."""
    return grid.locator(f'[data-testid="glide-cell-{column}-{row}"]')


def cell_point(row: int, x: float) -> dict[str, float]:
    """Where to click in a grid for data row ``row`` (0 is the first row under the header)."""
    return {"x": x, "y": HEADER_PX + ROW_PX * row + ROW_PX / 2}


def choose(page: Page, label: str, option: str) -> None:
    """Pick ``option`` in the select box labelled ``label``."""
    page.get_by_role("combobox", name=label, exact=True).click()
    page.get_by_role("option", name=option, exact=True).click()
    settle(page)


def edit_cell(page: Page, grid: Locator, row: int, x: float, text: str) -> None:
    """Double-click a cell of a data editor, replace its text with ``text``, and press Enter.

    Right after a save the grid's first double-click only selects the cell (a quirk of Streamlit's
    grid, reported by the browser tests); a person double-clicks again, and so does this.
    """
    grid.scroll_into_view_if_needed()
    overlay = page.locator("textarea.gdg-input")
    for _ in range(2):
        grid.dblclick(position=cell_point(row, x))
        try:
            overlay.wait_for(state="visible", timeout=1_500)
            break
        except PlaywrightTimeoutError:
            continue
    expect(overlay).to_be_visible()
    page.keyboard.press("ControlOrMeta+A")
    page.keyboard.type(text)
    expect(overlay).to_have_value(text)
    page.wait_for_timeout(150)  # the grid takes the typed text a moment after the textarea shows it
    page.keyboard.press("Enter")
    expect(overlay).to_have_count(0)
