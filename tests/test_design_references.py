"""Every citation of the design in the repository names a part of ``docs/design.md`` that exists.

The code, tests and docs justify a rule by pointing at the design; a citation that points at nothing
tells the reader nothing. The check reads every ``*.py`` and ``*.md`` file of the repository (code,
tests, docs, README, CHANGELOG), comments, docstrings and prose alike, with a line break and a
comment marker read as a space so that a citation wrapped over two lines still counts. The forms:

- ``DESIGN §N``: section N, a ``## N. Title`` heading.
- Several sections, ``DESIGN §N and §M``, ``§N-§M``, ``§N/§M``, ``§N, §M``: each must exist.
- ``DESIGN §N Name``: a named part of section N, a ``###`` (or deeper) heading under ``## N.``. The
  text after the number must start with the heading's title, or with either side of the title's
  first colon ("DESIGN §4 Prioritized scale-down", "DESIGN §4 promise 2", "DESIGN §3 step 5",
  "DESIGN §3 Keep what runs" for "Step 3: keep what runs"); case is ignored.
  Text that starts with a capital letter, or with "promise <digit>" or "step <digit>", is taken as a
  name and must match a heading; other words ("DESIGN §3 splits F.max") are prose, and only the
  section is checked.
- ``DESIGN §N `term```: a term in backquotes right after the number must occur in section N.
- ``DESIGN:`` then a name: a heading anywhere in the document, matched as above.
- ``docs/design.md §N ...``: the same forms as ``DESIGN §N ...``. A link to ``design.md#`` and an
  anchor must name a heading's anchor (GitHub's rule: lower case, punctuation dropped, spaces as
  hyphens).

Not citations: "DESIGN's ..." and "a DESIGN call" speak of the design as a whole. Sub-numbers
(``§4.2``) are refused: the document names its parts instead of numbering them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = ROOT / "docs" / "design.md"
SKIPPED_DIRS = frozenset(
    {".git", ".venv", "venv", "out", "build", "dist", "node_modules", "__pycache__", ".hypothesis"}
)

CITATION = re.compile(r"(?:\bDESIGN|docs/design\.md)(?: ?§(\d+)((?:\s*(?:-|/|,|and|or)\s*§\d+)*)|: )")
MORE_SECTIONS = re.compile(r"§(\d+)")
ANCHOR_LINK = re.compile(r"design\.md#([\w-]+)")
LINE_BREAK = re.compile(r"[ \t]*\n[ \t]*(?:#+ ?|//|\*(?!\*)|>|\"(?=\S))?[ \t]*")
BACKQUOTED = re.compile(r"^ (`+)([^`]+)\1")
LOOKS_LIKE_A_NAME = re.compile(r"^ (?:[A-Z]|(?:promise|step) \d)")
SUB_NUMBER = re.compile(r"^\.\d")


@dataclass
class Section:
    number: int
    text: str = ""
    names: list[str] = field(default_factory=list)


@dataclass
class Design:
    sections: dict[int, Section]
    anchors: set[str]

    def all_names(self) -> Iterator[str]:
        for section in self.sections.values():
            yield from section.names


def heading_names(title: str) -> list[str]:
    """A heading can be cited by its whole title, or by either side of its first colon."""
    names = [title.lower()]
    if ":" in title:
        names += [side.strip().lower() for side in title.split(":", 1)]
    return names


def anchor(title: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces turned into hyphens."""
    kept = re.sub(r"[^\w\- ]", "", title.strip().lower())
    return kept.replace(" ", "-")


def parse_design(markdown: str) -> Design:
    sections: dict[int, Section] = {}
    anchors: set[str] = set()
    current: Section | None = None
    for line in markdown.splitlines():
        top = re.match(r"^## (\d+)\. (.+)$", line)
        sub = re.match(r"^#{3,6} (.+)$", line)
        if top:
            current = sections.setdefault(int(top.group(1)), Section(int(top.group(1))))
            anchors.add(anchor(f"{top.group(1)}. {top.group(2)}"))
        elif line.startswith("## "):
            current = None
            anchors.add(anchor(line[3:]))
        elif sub:
            anchors.add(anchor(sub.group(1)))
            if current is not None:
                current.names.extend(heading_names(sub.group(1)))
        if current is not None:
            current.text += line + "\n"
    return Design(sections, anchors)


def starts_with_a_name(text: str, names: Iterator[str] | list[str]) -> bool:
    lowered = text.lower()
    for name in names:
        if lowered.startswith(name):
            rest = lowered[len(name) :]
            if not rest or not (rest[0].isalnum() or rest[0] == "_"):
                return True
    return False


def check_named_part(design: Design, number: int, rest: str) -> str | None:
    """Why the text after a single section number does not resolve, or None when it does."""
    section = design.sections[number]
    if SUB_NUMBER.match(rest):
        return "sub-numbers are not used: cite the part by its heading"
    term = BACKQUOTED.match(rest)
    if term:
        return None if term.group(2) in section.text else f"`{term.group(2)}` does not occur in §{number}"
    if rest.startswith(" ") and starts_with_a_name(rest[1:], section.names):
        return None
    if LOOKS_LIKE_A_NAME.match(rest):
        return f"no heading in §{number} is named {rest[1:40].strip()!r}"
    return None


def problems_in(text: str, design: Design) -> list[tuple[str, str]]:
    """(citation, what is wrong) for every citation in ``text`` that does not resolve."""
    text = LINE_BREAK.sub(" ", text)
    found: list[tuple[str, str]] = []
    for match in CITATION.finditer(text):
        cited = text[match.start() : match.end() + 40].split("\n")[0]
        rest = text[match.end() : match.end() + 200]
        if match.group(1) is None:  # the colon form, a name with no section
            if not starts_with_a_name(rest, design.all_names()):
                found.append((cited, "no heading of that name"))
            continue
        numbers = [int(match.group(1))] + [int(n) for n in MORE_SECTIONS.findall(match.group(2))]
        missing = [n for n in numbers if n not in design.sections]
        if missing:
            found.append((cited, f"no section §{missing[0]}"))
        elif len(numbers) == 1:
            reason = check_named_part(design, numbers[0], rest)
            if reason:
                found.append((cited, reason))
    for link in ANCHOR_LINK.finditer(text):
        if link.group(1) not in design.anchors:
            found.append((link.group(0), "no heading has that anchor"))
    return found


def repository_files() -> Iterator[Path]:
    """The repository's own files: virtual environments, caches and build output are pruned unread."""
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.endswith((".egg-info", "_cache")))
        yield from (Path(folder) / name for name in sorted(files) if name.endswith((".py", ".md")))


@pytest.fixture(scope="module")
def design() -> Design:
    assert DOCUMENT.is_file(), "docs/design.md is missing: every DESIGN citation points at it"
    return parse_design(DOCUMENT.read_text(encoding="utf-8"))


def test_the_document_has_sections_1_to_6(design: Design) -> None:
    assert sorted(design.sections) == [1, 2, 3, 4, 5, 6]


def test_every_citation_in_the_repository_resolves(design: Design) -> None:
    citations = 0
    broken: list[str] = []
    for path in repository_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        citations += len(CITATION.findall(LINE_BREAK.sub(" ", text)))
        broken += [f"{path.relative_to(ROOT)}: {c!r}: {why}" for c, why in problems_in(text, design)]
    assert not broken, "citations of docs/design.md that point at nothing:\n" + "\n".join(broken)
    assert citations >= 50, f"found only {citations} citations: is the pattern still right?"


# The checker itself, on small documents. Citations are assembled so that this file cites nothing.
D = "DESIGN"
DOC = "docs/design" + ".md"
SMALL = parse_design(
    "## 3. Assignment\nThe `available` count.\n#### Step 5: floor\n## 4. After\n### Prioritized scale-down\n"
    "#### Promise 2: every replica under an HPA\n### divide()\n"
)


@pytest.mark.parametrize(
    "text",
    [
        f"as {D} §3 says",
        f"({D} §4 Prioritized scale-down: pins)",
        f"{D} §4 promise 2: a running cluster",
        f"{D} §3 step 5 raises",
        f"{D} §3 Floor, 5a",
        f"{D} §3 splits F.max by weight",
        f"{D} §3 ``available``: the replicas",
        f"{D} §3 and §4",
        f"{D} §3-§4, with",
        f"({D}: prioritized scale-down)",
        f"{D}'s seed 002",
        f"{DOC} §4 Divide(), as",
        f"# {D} §4\n    # Prioritized scale-down",
        f"[the split]({DOC}#step-5-floor)",
    ],
)
def test_resolving_citations_pass(text: str) -> None:
    assert problems_in(text, SMALL) == []


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (f"{D} §7", "no section §7"),
        (f"{D} §3 and §9", "no section §9"),
        (f"{D} §4 Prioritized scale-up: spill", "no heading in §4"),
        (f"{D} §3 Prioritized scale-down", "no heading in §3"),
        (f"{D} §4 promise 5", "no heading in §4"),
        (f"{D} §3 ``unknown``", "does not occur in §3"),
        (f"{D} §4.2", "sub-numbers"),
        (f"({D}: member writes)", "no heading of that name"),
        (f"{DOC} §8", "no section §8"),
        (f"# as {D} §4\n# Promise 7 says", "no heading in §4"),
        (f"[x]({DOC}#step-6)", "no heading has that anchor"),
    ],
)
def test_citations_that_point_at_nothing_fail(text: str, why: str) -> None:
    problems = problems_in(text, SMALL)
    assert len(problems) == 1 and why in problems[0][1], problems
