"""`history site` keeps to its folder (issue #52, finding 2), with real files and symlinks: the state file
(.history-site.json) is data to check, so a page it lists is removed only when it is one of the site's pages
inside the site (`../victim.txt` and an absolute path are left alone, with a warning); a page folder or page that
is a link leading out stops the build with one line and exit 2 before anything is written there; the site's
own folder may be a link the user named; a damaged state is rebuilt from, never obeyed or crashed on."""

import json
import os

import pytest

from helpers import call_tool, nightly_history, nightly_record

STATE = ".history-site.json"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """A history of three nightly runs of two models."""
    return nightly_history(tmp_path_factory.mktemp("history"))


def site(db, out, check_rc=0):
    return call_tool("history.py", "site", "--db", db, "-o", out, check_rc=check_rc)


def everything_under(path) -> dict:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_a_state_file_naming_files_outside_or_not_pages_removes_nothing_of_them(db, tmp_path):
    out = tmp_path / "site"
    site(db, out)
    victims = [tmp_path / "victim.txt", tmp_path / "absolute_victim.txt", out / "notes.txt",
               out / "config" / "mine.txt"]
    for victim in victims:
        victim.write_text("the user's\n")
    state = json.loads((out / STATE).read_text())
    for listed in ("../victim.txt", str(tmp_path / "absolute_victim.txt"), "notes.txt", "config/mine.txt",
                   "config/../../victim.txt", "config/1.html/../../../victim.txt", "assets/..", "assets/../.."):
        state["pages"][listed] = "0" * 64
    stale = out / "config" / "999.html"  # a page of an earlier build: removed, as before
    stale.write_text("old page")
    state["pages"]["config/999.html"] = "0" * 64
    # sealed with this user's key (issue #61): even a state of our own is checked entry by entry
    from benchmarks.history.site import writer
    from benchmarks.plumbing import state_seal

    state["seal"] = state_seal.seal(writer.canonical(state))
    (out / STATE).write_text(json.dumps(state))
    result = site(db, out)
    assert all(victim.read_text() == "the user's\n" for victim in victims)
    assert not stale.exists() and "1 removed" in result.stdout
    warnings = [line for line in result.stderr.splitlines() if "not a page of this site: left alone" in line]
    assert len(warnings) == 8 and "'../victim.txt'" in result.stderr
    assert "../victim.txt" not in json.loads((out / STATE).read_text())["pages"]  # the next state is ours


@pytest.mark.parametrize("folder", ["config", "suite", "assets"])
def test_a_page_folder_that_links_outside_stops_the_build_in_one_line(db, tmp_path, folder):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept.txt").write_text("the user's\n")
    out = tmp_path / "site"
    out.mkdir()
    os.symlink(outside, out / folder)
    result = site(db, out, check_rc=2)
    assert result.stderr.count("\n") == 1 and f"{folder} leads outside the site" in result.stderr
    assert "Traceback" not in result.stderr
    assert everything_under(outside) == {"kept.txt": b"the user's\n"}  # nothing written there
    assert not (out / "index.html").exists()  # refused before the first page


def test_a_page_that_links_outside_is_refused_and_its_target_kept(db, tmp_path):
    out = tmp_path / "site"
    site(db, out)
    target = tmp_path / "target.html"
    target.write_text("the user's\n")
    (out / "index.html").unlink()
    os.symlink(target, out / "index.html")
    result = site(db, out, check_rc=2)
    assert result.stderr.count("\n") == 1 and "index.html leads outside the site" in result.stderr
    assert target.read_text() == "the user's\n"


def test_a_state_file_that_links_outside_is_refused_and_its_target_kept(db, tmp_path):
    out = tmp_path / "site"
    out.mkdir()
    target = tmp_path / "settings.json"
    target.write_text('{"version": 1, "pages": {"../settings.json": "x"}}')
    os.symlink(target, out / STATE)
    result = site(db, out, check_rc=2)
    assert STATE in result.stderr and result.stderr.count("\n") == 1
    assert target.read_text() == '{"version": 1, "pages": {"../settings.json": "x"}}'


def test_the_sites_own_folder_may_be_a_link_the_user_named(db, tmp_path):
    real = tmp_path / "published" / "site"
    real.mkdir(parents=True)
    os.symlink(real, tmp_path / "site")
    site(db, tmp_path / "site")
    assert (real / "index.html").is_file() and len(list((real / "config").glob("*.html"))) == 2
    assert "0 page(s) written" in site(db, tmp_path / "site").stdout  # and its state is read back through it


@pytest.mark.parametrize("state", [
    [1, 2], {"version": 1, "pages": ["index.html"]}, {"version": 1, "pages": {"index.html": 7}, "detections": [1]},
    {"version": 1, "pages": {}, "detections": {"k": [["a", "b", "c", "d"]], "j": "x", "i": [[0, 1, "nan", 1.0]]}},
])
def test_a_damaged_state_file_is_ignored_not_obeyed(db, tmp_path, state):
    out = tmp_path / "site"
    out.mkdir()
    (out / STATE).write_text(json.dumps(state))
    site(db, out)
    assert (out / "index.html").is_file() and json.loads((out / STATE).read_text())["version"] == 1


def test_a_cached_change_naming_runs_the_series_has_not_is_found_again(tmp_path):
    """The state's change point cache is keyed by a series' values (anyone can compute a key): an entry naming a
    run the series has not (row 999) is tested again, not trusted into an IndexError."""
    nightly = tmp_path / "nightly"
    for run in range(12):
        (nightly / f"{run:02d}").mkdir(parents=True)
        found = nightly_record("mlp", run)
        found["metrics"]["per_iter_time"] = [v * (1.5 if run >= 6 else 1.0) for v in found["metrics"]["per_iter_time"]]
        (nightly / f"{run:02d}" / "results.jsonl").write_text(json.dumps(found) + "\n")
    db, out = tmp_path / "history.sqlite", tmp_path / "site"
    call_tool("history.py", "ingest", nightly, "--db", db, check_rc=0)
    site(db, out)
    state = json.loads((out / STATE).read_text())
    assert state["detections"]  # the series are long enough to be tested and cached
    state["detections"] = {key: [[0, 999, 0.001, 2.0]] for key in state["detections"]}
    (out / STATE).write_text(json.dumps(state))
    assert "series tested for changes" in site(db, out).stdout
    assert json.loads((out / STATE).read_text())["detections"] != state["detections"]
