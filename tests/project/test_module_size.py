"""No module of benchmarks/ or scripts/ is over 500 lines: a module holds one job, and a job that outgrows a module
is split into modules named by what each does (DESIGN.md: small modules with one job)."""

from helpers import ROOT

FOLDERS = ("benchmarks", "scripts")
MOST_LINES = 500


def long_modules(paths, most: int = MOST_LINES) -> dict:
    """path -> lines, for every file of `paths` over `most` lines."""
    found = {}
    for path in paths:
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > most:
            found[str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)] = lines
    return found


def test_no_module_of_benchmarks_or_scripts_is_over_500_lines():
    paths = [path for folder in FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))]
    assert len(paths) > 200, "the folders were not found"
    assert not long_modules(paths)


def test_a_long_module_is_found_and_one_at_the_limit_is_not(tmp_path):
    at_limit, over = tmp_path / "at_limit.py", tmp_path / "over.py"
    at_limit.write_text("x = 1\n" * 500)
    over.write_text("x = 1\n" * 500 + "y = 2")  # the 501st line has no newline: still a line
    assert long_modules([at_limit, over]) == {str(over): 501}
