"""The README and docs/: every relative link reaches a file and heading that exist, and CI runs the
README's test command."""

import re

import pytest

from harness import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "RESULTS.md"]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def links(text):
    """Link targets outside code: fenced blocks and `inline code` can hold brackets and parentheses."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return LINK.findall(re.sub(r"`[^`\n]*`", "", text))


def anchors(page):
    """GitHub's heading ids: lower case, punctuation but hyphens dropped, spaces to hyphens."""
    headings = re.findall(r"^#+ (.*)$", re.sub(r"```.*?```", "", page.read_text(), flags=re.S), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_links_find_headings_as_github_names_them():
    assert links("[a](x.md#b) `[c](d)` ![e](f.png)") == ["x.md#b", "f.png"]
    page = ROOT / "benchmarks" / "RESULTS.md"
    assert "a-b-f-wall-time-overhead-and-memory" in anchors(page)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_reach_an_existing_file_and_heading(page):
    broken = []
    for target in links(page.read_text()):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists() or (anchor and anchor not in anchors(linked)):
            broken.append(target)
    assert broken == []


def test_ci_runs_the_readme_test_command():
    command = (ROOT / ".ci/run").read_text().strip().splitlines()[-1]
    assert "pytest" in command and f"```sh\n{command}\n```" in (ROOT / "README.md").read_text()
