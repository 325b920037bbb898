"""Pages are inert (issue #52, findings 1, 7 and compare's Markdown): a hostile results file, whose records carry
`javascript:` log links, `<!--<script>` in a torch version, a model name that closes the script and one that is
an <img onerror>, makes pages on which nothing runs. In headless Chromium (one browser for the module):
aggregate's log links are not links at all when the record's path is not a file inside the results folder
(clicking where they were runs nothing), and history's site, whose chart data carries `<!--<script>`, still draws
its charts and sorts its table. compare --format=md shows the names as text: no raw markup from a record."""

import json
import re
import shutil
from pathlib import Path

import pytest

from helpers import GOLDEN, call_tool

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FIXTURE = GOLDEN / "ours_cpu.jsonl"
TITLE_SCRIPT = "</script><script>window.__pwned=1;document.title='PWNED'</script>"
IMG = "<img src=x onerror=\"window.__pwned=1;alert(1)\">"
COMMENT_SCRIPT = "<!--<script>"
# error.log values a record may carry: each would run (or leave the results folder) as a link.
HOSTILE_LOGS = {
    "js_plain": "javascript:window.__pwned=1;document.title='PWNED'",
    "js_space": " javascript:window.__pwned=1",
    "js_tab": "java\tscript:window.__pwned=1",
    "js_upper": "JaVaScRiPt:window.__pwned=1",
    "data_url": "data:text/html,<script>parent.__pwned=1</script>",
    "vbscript": "vbscript:msgbox(1)",
    "absolute": "/etc/passwd",
    "escaping": "logs/../../../secret.log",
    "backslash": "\\\\evil\\share\\x.log",
    "newline_js": "\njavascript:window.__pwned=1",
}
GOOD_LOG = "logs/good/x.log"


# ---------------------------------------------------------------- the one link check and the script escaping

@pytest.mark.parametrize("name", sorted(HOSTILE_LOGS))
def test_the_link_check_refuses_every_hostile_path(name):
    from benchmarks.results import page_links

    assert page_links.record_file_href(HOSTILE_LOGS[name], "/r", "/r") is None


def test_the_link_check_keeps_a_file_inside_and_encodes_what_could_read_as_markup_or_a_scheme():
    from benchmarks.results import page_links

    assert page_links.record_file_href("logs/m/x=1.log", "/r", "/r") == "logs/m/x=1.log"
    assert page_links.record_file_href("logs/m/x.log", "/r", "/r/page") == "../logs/m/x.log"
    # A file really named like a scheme, inside the folder: a link, but never read as the scheme.
    assert page_links.file_href("/r/javascript:alert(1)", "/r") == "javascript%3Aalert(1)"
    assert page_links.file_href("/r/a b#c?d.log", "/r") == "a%20b%23c%3Fd.log"
    assert page_links.web_address("https://example.com/x") == "https://example.com/x"
    for url in ("javascript:alert(1)", "http:/x", " https://x.org", "https://x.org/\tjavascript:", "ftp://x.org"):
        assert page_links.web_address(url) is None


def test_script_json_escapes_every_character_that_can_end_or_bend_a_script():
    from benchmarks.results import html_style

    text = html_style.script_json({"a": "<!--<script></script>&\u2028\u2029>"})
    assert not re.search(r"[<>&\u2028\u2029]", text)
    assert json.loads(text) == {"a": "<!--<script></script>&\u2028\u2029>"}


# ---------------------------------------------------------------- aggregate's page

def hostile_records() -> list:
    """The fixture's newest run, and beside it a failed record per hostile log (plus one good log), whose model
    names, messages and torch version are markup."""
    found = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    newest = max(r["timestamp"] for r in found)
    base = next(r for r in found if r["timestamp"] == newest)
    out = [r for r in found if r["timestamp"] == newest]
    for name, log in list(HOSTILE_LOGS.items()) + [("good_log", GOOD_LOG)]:
        record = json.loads(json.dumps(base))
        record["model"] = {"suite_name": "dummy", "model_name": name}
        record["environment"]["torch"] = COMMENT_SCRIPT + TITLE_SCRIPT
        record.update(status="error", metrics={"error": "boom"},
                      error={"type": "X", "message": IMG + TITLE_SCRIPT, "phase": "run", "log": log})
        out.append(record)
    for name in (TITLE_SCRIPT, IMG, COMMENT_SCRIPT):  # markup as model names, records that ran
        record = json.loads(json.dumps(base))
        record["model"] = {"suite_name": "dummy", "model_name": name}
        out.append(record)
    return out


@pytest.fixture(scope="module")
def aggregate_page(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("hostile") / "results"
    (results / "logs" / "good").mkdir(parents=True)
    (results / "logs" / "good" / "x.log").write_text("the child's output\n")
    (results / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in hostile_records()))
    page = results / "report.html"
    call_tool("aggregate.py", results / "results.jsonl", "--accelerator=cpu", f"--output={page}", check_rc=0)
    return page


def test_aggregate_links_only_the_log_inside_the_results_folder(aggregate_page):
    text = aggregate_page.read_text(encoding="utf-8")
    hrefs = re.findall(r'<a [^>]*href="([^"]*)"', text)
    assert hrefs == [GOOD_LOG]  # the one record whose log is a file inside the folder
    assert "javascript:" not in "".join(hrefs).lower() and "data:" not in "".join(hrefs)
    assert "log: javascript:window.__pwned=1;document.title=&#x27;PWNED&#x27;" in text  # shown, as text


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("no chromium on this machine (make browser installs Debian's)")
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (requirements.txt)")
    with playwright.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        try:
            yield launched
        finally:
            launched.close()


def open_page(browser, path: Path):
    """`path` in a fresh page, offline (anything but file:// refused and counted), dialogs and errors counted."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    seen = {"requests": [], "dialogs": [], "errors": []}
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://")
               else (seen["requests"].append(route.request.url), route.abort()))
    page.on("dialog", lambda dialog: (seen["dialogs"].append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda error: seen["errors"].append(str(error)))
    page.goto(path.as_uri())
    return page, seen


def untouched(page, title: str) -> bool:
    return page.evaluate("() => window.__pwned === undefined") and page.title() == title


@pytest.mark.integration
def test_in_a_real_browser_clicking_where_each_hostile_log_is_shown_runs_nothing(browser, aggregate_page):
    page, seen = open_page(browser, aggregate_page)
    title = page.title()
    try:
        assert untouched(page, title)
        for name in HOSTILE_LOGS:
            cell = page.locator(f'#models tbody tr:has(td:text-is("{name}"))').locator("a, span.msg", has_text="log")
            assert cell.count() == 1, name
            cell.click()
            page.wait_for_timeout(100)
            assert page.url == aggregate_page.as_uri() and untouched(page, title), name
        # Every link left on the page leads to a file, and the good log's link opens it.
        assert all(h.startswith("file://") for h in page.eval_on_selector_all("a[href]", "as => as.map(a => a.href)"))
        page.locator('#models tbody tr:has(td:text-is("good_log")) a', has_text="log").click()
        page.wait_for_url("**/logs/good/x.log")
    finally:
        page.close()
    assert seen == {"requests": [], "dialogs": [], "errors": []}


# ---------------------------------------------------------------- history's site

def site_record(model, run, backend, torch):
    level = 0.01 * (0.5 if backend else 1.0)
    values = [level * (1 + 0.001 * i) for i in range(5)]
    return {"model": {"suite_name": "dummy", "model_name": model},
            "experiment": {"accelerator": "cpu", "accelerator_model": "Test CPU", "xla": None, "xla_flags": None,
                           "dynamo": backend, "torch_xla2": None, "test": "eval", "batch_size": 8,
                           "enable_functionalization": False},
            "repeat": 5, "iterations_per_run": 1, "timestamp": 1.7e9 + run * 86400.0, "schema_version": 1,
            "metrics": {"warmup_time": [level * 3], "per_iter_time": values, "total_time": values,
                        "peak_memory_bytes": [2 ** 20]},
            "verification_code": "PASS", "accuracy": "pass", "status": "ok", "warmup": 1,
            "environment": {"hostname": "ci", "git_commit": f"c{run:02d}", "torch": torch}}


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory):
    """Four nightly runs of a model named `<!--<script>` and one named like a closing script; the newest runs'
    torch version is `<!--<script>` too: every chart's data carries it."""
    root = tmp_path_factory.mktemp("site")
    for run in range(4):
        night = root / "nightly" / f"{run:02d}"
        night.mkdir(parents=True)
        torch = "2.9.1" if run < 2 else "2.10" + COMMENT_SCRIPT
        found = [site_record(model, run, backend, torch) for model in (COMMENT_SCRIPT, "mlp" + TITLE_SCRIPT, "cnn")
                 for backend in (None, "inductor")]
        (night / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in found))
    db = root / "history.sqlite"
    call_tool("history.py", "ingest", root / "nightly", "--db", db, check_rc=0)
    out = root / "out"
    call_tool("history.py", "site", "--db", db, "-o", out, check_rc=0)
    return out


def test_the_sites_chart_data_holds_no_markup(hostile_site):
    for page in [hostile_site / "index.html"] + sorted((hostile_site / "config").glob("*.html")):
        scripts = re.findall(r"<script>(.*?)</script>", page.read_text(encoding="utf-8"), re.S)
        assert scripts and all("<" not in s and ">" not in s for s in scripts), page.name


def drawn(page):
    page.wait_for_function("document.querySelectorAll('.chart').length > 0 && document.querySelectorAll('.chart')"
                           ".length === document.querySelectorAll('.chart[data-drawn]').length", timeout=10000)


@pytest.mark.integration
def test_in_a_real_browser_the_hostile_sites_charts_draw_and_its_tables_sort(browser, hostile_site):
    page, seen = open_page(browser, hostile_site / "index.html")
    try:
        drawn(page)
        title = page.title()
        assert page.locator(".chart canvas").count() == 5 and untouched(page, title)
        page.click("#summary thead th:nth-child(2)")
        assert page.locator("#summary thead th:nth-child(2)").get_attribute("data-order") == "asc"
        page.locator("#summary tbody tr a").first.click()
        page.wait_for_url("**/suite/*.html")
        page.click("#models thead th:nth-child(1)")
        names = [t.removesuffix(" bs=8") for t in page.locator("#models tbody td:first-child").all_inner_texts()]
        assert names == sorted(names) and COMMENT_SCRIPT in names and untouched(page, page.title())
        assert all(h.startswith("file://") for h in page.eval_on_selector_all("a[href]", "as => as.map(a => a.href)"))
        page.locator("#models tbody tr", has_text=COMMENT_SCRIPT).get_by_role("link", name="series").click()
        page.wait_for_url("**/config/*.html")
        drawn(page)  # the torch version and the model name, both `<!--<script>`, are in these charts' data
        assert page.locator(".chart canvas").count() >= 1 and untouched(page, page.title())
        assert COMMENT_SCRIPT in page.locator("h1").inner_text()
    finally:
        page.close()
    assert seen == {"requests": [], "dialogs": [], "errors": []}


# ---------------------------------------------------------------- compare --format=md

def test_compare_markdown_shows_hostile_names_as_text(tmp_path):
    names = [IMG, "a|b", "x](javascript:alert(1))", "[click](javascript:alert(1))", "**bold** `code`",
             "line\nbreak"]
    base = json.loads(FIXTURE.read_text(encoding="utf-8").splitlines()[0])
    control, treatment = [], []
    for name in names:
        for side in (control, treatment):
            record = json.loads(json.dumps(base))
            record["model"]["model_name"] = name
            record["rerun"] = f"python experiment_runner.py -k '{name}' ```\n# forged"
            side.append(record)
        # A new failure, whose error is markup too: its note shows the error, its rerun follows the table.
        treatment[-1].update(status="error", metrics={"error": "boom"},
                             error={"type": "X", "message": IMG + " | [x](javascript:alert(1))", "phase": "run"})
    paths = []
    for side, records in (("control", control), ("treatment", treatment)):
        paths.append(tmp_path / f"{side}.jsonl")
        paths[-1].write_text("".join(json.dumps(r) + "\n" for r in records))
    result = call_tool("compare.py", *paths, "--format=md")
    assert result.returncode == 1, result.stderr  # new failures
    text = result.stdout
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert len(table) == 2 + len(names)  # header, rule and a row per name: no name broke a row
    columns = {line.count("|") - line.count("\\|") for line in table}
    assert len(columns) == 1  # every row has the header's columns: no `|` from a name split a cell
    body = "\n".join(table)
    assert "<" not in body and ">" not in body and "](" not in body.replace("\\](", "")
    assert "&lt;img src=x onerror=" in body and "a\\|b" in body and "\\[click\\]" in body
    fences = [line for line in text.splitlines() if line.startswith("```")]
    # These reruns are not the runner's (rerun_command.trusted_rerun, tests/security/test_sec_audit.py): not shown,
    # so no fence; one that is shown is fenced longer than any run of backticks in it.
    assert not fences or (len(fences) == 2 and fences[0] == fences[1] and len(fences[0]) > 3)
    assert "\n# forged" not in text


def roofline_record(model: str, **roofline) -> dict:
    """An ok record with a roofline and the machine's ceilings, as a sweep writes them (docs/roofline.md)."""
    found = {"flops_per_iteration": 2.4e9, "bytes_per_iteration": 4.7e7, "dtype": "float32",
             "achieved_flops_per_second": 1.5e11, "arithmetic_intensity": 50.3, "bound": "compute",
             "fraction_of_attainable": 0.38, "how": "counted"}
    found.update(roofline)
    return {"model": {"suite_name": "dummy", "model_name": model},
            "experiment": {"accelerator": "cpu", "accelerator_model": "Test CPU", "xla": None, "dynamo": None,
                           "test": "eval", "batch_size": 8},
            "repeat": 3, "iterations_per_run": 1, "timestamp": 1.7e9, "status": "ok", "warmup": 1,
            "metrics": {"warmup_time": [0.1], "per_iter_time": [0.015] * 3, "total_time": [0.015] * 3},
            "roofline": found, "environment": {"ceilings": {"flops_per_second": {"float32": 4e11},
                                                            "bytes_per_second": 3e10}}}


def test_aggregates_roofline_section_shows_hostile_names_and_values_as_text(tmp_path):
    """The roofline table and plot (aggregate/roofline_report.py) take model names and every roofline value from the
    record: markup stays text, and a value of the wrong type costs its cell, never the page."""
    records = [roofline_record("<script>alert(1)</script>", bound="<img src=x onerror=alert(2)>",
                               why_not="</td><script>alert(3)</script>"),
               roofline_record("m2", arithmetic_intensity="<b>x</b>", fraction_of_attainable="1e400",
                               achieved_flops_per_second=[1]),
               dict(roofline_record("m3"), roofline=["<script>"])]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(record) + "\n" for record in records))
    page = tmp_path / "page.html"
    call_tool("aggregate.py", results, "--accelerator=cpu", "--format=html", "-o", page, check_rc=0)
    text = page.read_text()
    assert "Roofline" in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text  # shown, as text
    assert "<script>alert" not in text and "<img src=x" not in text and "<b>x</b>" not in text
