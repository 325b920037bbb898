"""docs/layout.md's tree held to the checkout: every module of benchmarks/ and scripts/ is named in it (a
package's __init__.py may go unnamed, its folder not), and every name it gives exists where its indentation
puts it. So the inventory cannot drift: a new module fails here until the tree names it. The modules inside a
feature's folder (benchmarks/features/<key>/) are the one exception: the folders' entries, like the suites', are
generated from their declarations (`make docs`, scripts/upkeep/layout_entries.py), so a new feature is its folder
alone and a new suite its module alone, plus that command.

The tree is the first fenced block of docs/layout.md. An entry line is indented two spaces under its folder
(`name/`); its names come first, several joined by " / " or ", ", then two spaces or more and what they do.
A name may be a path below its folder (`allocator/child.py` names the folder and its child half). A line
indented deeper than an entry's place is the entry's description going on."""

import re

import pytest

from helpers import ROOT

LAYOUT = ROOT / "docs" / "layout.md"
TREES = ("benchmarks", "scripts")  # every module under these must be named
NAME = re.compile(r"[\w.\-]+(?:/[\w.\-]+)*/?")


def tree_lines(text: str) -> list:
    block = re.search(r"^```\w*\n(.*?)^```", text, re.S | re.M)
    assert block, "docs/layout.md has no fenced tree"
    return block.group(1).splitlines()


def entry_names(head: str):
    """The names an entry line starts with, or None when its head is not names only."""
    names = [part.strip() for part in re.split(r" / |, ", head)]
    return names if names and all(NAME.fullmatch(name) for name in names) else None


def parse_tree(lines: list) -> tuple:
    """(named paths relative to the root, problems): each name with its folders; a line that sits where an
    entry must but does not start with names is a problem, as is an indentation no folder opens."""
    named, problems = set(), []
    folders = []  # (indent, path) of the open folders, innermost last
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        while folders and folders[-1][0] >= indent:
            folders.pop()
        place = folders[-1][0] + 2 if folders else 0
        if indent > place:
            continue  # a description going on
        if indent < place or indent % 2:
            problems.append(f"line {number}: indented {indent}, no folder opens that place: {line.strip()!r}")
            continue
        head = re.split(r" {2,}", line.strip(), maxsplit=1)[0]
        names = entry_names(head)
        if names is None:
            problems.append(f"line {number}: an entry must start with names (`a.py / b.py  what they do`): {head!r}")
            continue
        base = folders[-1][1] if folders else ""
        for name in names:
            path = base + name.rstrip("/")
            parts = path.split("/")
            named.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
        if len(names) == 1 and names[0].endswith("/"):
            folders.append((indent, base + names[0]))
    return named, problems


def modules_in_checkout() -> tuple:
    """(modules, package folders) under TREES, relative to the root; __init__.py files are left out."""
    modules, packages = set(), set()
    for tree in TREES:
        for path in (ROOT / tree).rglob("*.py"):
            relative = path.relative_to(ROOT)
            if "__pycache__" in relative.parts or _in_a_feature(relative):
                continue
            if path.name == "__init__.py":
                packages.add(relative.parent.as_posix())
            else:
                modules.add(relative.as_posix())
    return modules, packages


def _in_a_feature(relative) -> bool:
    """A module of a feature's own folder (benchmarks/features/<key>/...), not its __init__.py (the folder is named)."""
    return relative.parts[:2] == ("benchmarks", "features") and len(relative.parts) > 3 \
        and relative.name != "__init__.py"


def drift(text: str) -> list:
    """What docs/layout.md's tree gets wrong about the checkout, one line each."""
    named, problems = parse_tree(tree_lines(text))
    modules, packages = modules_in_checkout()
    problems += [f"{path}: in the checkout, not in docs/layout.md (a suite module or a feature folder: run "
                 "`python -m scripts.upkeep.generated_docs`; any other module: add its line by hand)"
                 for path in sorted((modules | packages) - named)]
    problems += [f"{path}: named in docs/layout.md, no such file or folder" for path in sorted(named)
                 if not (ROOT / path).exists()]
    return problems


def layout_text() -> str:
    return LAYOUT.read_text(encoding="utf-8")


def test_the_layout_names_every_module_and_only_what_exists():
    problems = drift(layout_text())
    assert not problems, "docs/layout.md has drifted:\n" + "\n".join(problems)


def test_a_module_left_out_of_the_layout_is_found():
    text = layout_text()
    line = next(line for line in tree_lines(text) if line.strip().startswith("probe.py "))
    assert any("benchmarks/runner/probe.py: in the checkout" in problem for problem in drift(text.replace(line + "\n", "")))


def test_a_name_the_checkout_lacks_is_found():
    text = layout_text().replace("    probe.py ", "    probe.py / gone_module.py ", 1)
    assert "benchmarks/runner/gone_module.py: named in docs/layout.md, no such file or folder" in drift(text)


def test_a_name_at_the_wrong_indentation_is_found():
    """probe.py written one level up is benchmarks/probe.py, which does not exist."""
    text = layout_text().replace("    probe.py ", "  probe.py   ", 1)
    assert "benchmarks/probe.py: named in docs/layout.md, no such file or folder" in drift(text)


@pytest.mark.parametrize("head, names", [
    ("summary_page.py / suite_page.py / config_page.py", ["summary_page.py", "suite_page.py", "config_page.py"]),
    ("site.js, vendor/", ["site.js", "vendor/"]),
    ("allocator/child.py", ["allocator/child.py"]),
    ("the cells and rows joined", None),
])
def test_entry_names(head, names):
    assert entry_names(head) == names
