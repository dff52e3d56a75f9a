"""Text from outside (a Flink job's name, an exception Flink reports, a file's field, a topic) on the user's
terminal: shown, never obeyed.

Ways such a string could act instead of being shown: as Rich markup (a job named `[/oops]` crashed
`job list` with a MarkupError; `[link=...]` would make a link), as terminal control sequences (a name
holding `\\x1b]0;pwned\\x07\\x1b[2J` retitles the window and clears the screen), as bidirectional controls (a
U+202E in a name prints the rest of the line reversed: a column that reads as another value), and as a lone
surrogate (no encoding can write one: the print fails). So chronos's consoles parse no markup and no emoji
codes at all (its own few styled words are passed as styles, not markup), every string they render has those
characters spelled out as escapes, and no secret in force is ever rendered (chronos.errors.said).
"""

from __future__ import annotations

import os
import re
from typing import Any

from rich.console import Console
from rich.text import Text

from chronos.errors import said

# C0 controls but newline and tab, DEL, and C1 (0x9b is a CSI on terminals that read 8-bit controls); the
# bidirectional marks, embeddings, overrides and isolates; lone surrogates.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_INVISIBLE = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def shown(text: str) -> str:
    """`text` with every control character written out (`\\x1b`, `\\u202e`), so it prints as what it is, and no
    secret in force in it."""
    text = _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", said(text))
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def one_line(text: str) -> str:
    """`text` as one printable line: whitespace runs (newlines included) become one space, controls escaped."""
    return shown(" ".join(text.split()))


# The width a console writes at when it is not a terminal (a file, a pipe, CI's log) and nobody said one (COLUMNS):
# Rich would assume 80 and squeeze a wide table's every cell to "1,…", which no one reading a file can widen.
UNBOUNDED_WIDTH = 1000


class TerminalConsole(Console):
    """A Rich console that treats every string as plain text: no markup, no emoji codes, controls escaped. Off a
    terminal it writes whole values (UNBOUNDED_WIDTH) rather than a terminal's 80 columns."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(markup=False, emoji=False, **kwargs)
        if "width" not in kwargs and not os.environ.get("COLUMNS") and not self.is_terminal:
            self.width = UNBOUNDED_WIDTH

    def render_str(self, text: str, **kwargs: Any) -> Text:
        kwargs["markup"] = False
        kwargs["emoji"] = False
        return super().render_str(shown(text), **kwargs)


def styled(*parts: str | tuple[str, str]) -> Text:
    """A line of plain parts and (text, style) parts, each shown as text: chronos's own emphasis without markup."""
    return Text.assemble(*((shown(p[0]), p[1]) if isinstance(p, tuple) else shown(p) for p in parts))
