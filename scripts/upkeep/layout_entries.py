"""docs/layout.md's entries made from the declarations (`make docs`, scripts/upkeep/generated_docs.py): under
`  suites/`, one entry per suite module (its SUITE_NAME's module, its DESCRIPTION, in ORDER: suites.declarations),
and under `  features/`, one per feature folder (its keys in the table's order and its child half). A folder's
other entries (a suite's helper modules) stay as written, after the generated ones; its head stays too.
"""

from __future__ import annotations

NAME_WIDTH = 22  # an entry's names are padded to this, so its description starts at the tree's usual column


def entry(name: str, description: str) -> str:
    return f"    {name.ljust(NAME_WIDTH - 1)} {description}" if len(name) < NAME_WIDTH else f"    {name}  {description}"


def suite_entries() -> list:
    from benchmarks import suites

    return [entry(declared.module.rsplit(".", 1)[1] + ".py", declared.description)
            for declared in suites.declarations()]


def feature_entries() -> list:
    from benchmarks.child.feature_methods import feature_child
    from benchmarks.config import axes

    lines = []
    for feature in dict.fromkeys(axis.feature for axis in axes.AXES):
        keys = ", ".join(axis.key for axis in axes.AXES if axis.feature == feature)
        child = feature_child(feature)
        half = "no child half" if child is None else ("child.py: a hook" if hasattr(child, "hook_for") else "child.py")
        lines.append(entry(f"{feature}/", f"{'keys' if ',' in keys else 'key'} {keys}; {half}"))
    return lines


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def with_entries(text: str, folder: str, generated: list, replaces) -> str:
    """`text` with the entries of `  folder/` that `replaces(first name)` claims (and the lines going on from them)
    dropped and `generated` put first, after the folder's head."""
    lines = text.split("\n")
    head = next((i for i, line in enumerate(lines) if line.startswith(f"  {folder}/ ")), None)
    if head is None:
        raise ValueError(f"docs/layout.md has no `  {folder}/` folder")
    end = head + 1
    while end < len(lines) and _indent(lines[end]) > 4:  # the head's description going on
        end += 1
    kept, index, dropping = [], end, False
    while index < len(lines) and lines[index].strip() and not lines[index].startswith("```") \
            and _indent(lines[index]) >= 4:
        line = lines[index]
        if _indent(line) == 4:
            dropping = replaces(line.strip().split(" ", 1)[0])
        if not dropping:
            kept.append(line)
        index += 1
    return "\n".join(lines[:end] + generated + kept + lines[index:])


def with_layout_entries(text: str) -> str:
    from benchmarks import suites

    modules = {declared.module.rsplit(".", 1)[1] + ".py" for declared in suites.declarations()}
    text = with_entries(text, "suites", suite_entries(), lambda name: name in modules)
    return with_entries(text, "features", feature_entries(), lambda name: name.endswith("/"))
