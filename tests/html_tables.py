"""The tables of a report page, parsed for assertions (tests/report and tests/run share it)."""

from __future__ import annotations

from html.parser import HTMLParser


class _Tables(HTMLParser):
    """Every <table> of a page as (title, rows of cell texts)."""

    def __init__(self):
        super().__init__()
        self.tables, self._title, self._text, self._cell, self._row = [], "", [], None, None

    def handle_starttag(self, tag, attrs):
        if tag in ("h3", "td", "th"):
            self._text = []
        if tag == "table":
            self.tables.append((self._title, []))
        if tag == "tr":
            self._row = []

    def handle_endtag(self, tag):
        text = "".join(self._text).strip()
        if tag == "h3":
            self._title = text
        elif tag in ("td", "th") and self._row is not None:
            self._row.append(text)
        elif tag == "tr" and self.tables:
            self.tables[-1][1].append(self._row)
            self._row = None

    def handle_data(self, data):
        self._text.append(data)


def parse_tables(page: str) -> dict[str, list[list[str]]]:
    parser = _Tables()
    parser.feed(page)
    return {title: rows for title, rows in parser.tables}
