"""aggregate.py --format=html: one self-contained page (no external resource), whose geomeans are
aggregate.py's own numbers, whose per-model table shows every config of the newest run (failures with
status, phase, message and a link to their log), and whose table sorts and filters in a real browser."""

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from helpers import GOLDEN, call_tool, read_jsonl, run_runner, run_tool

FIXTURE = GOLDEN / "ours_cpu.jsonl"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def geomeans_from_csv(*inputs) -> dict:
    """Backend title -> geomean speedup, from aggregate.py's own latest_grouped CSV."""
    result = call_tool("aggregate.py", *inputs, "--accelerator=cpu", "--report=latest_grouped", "--format=csv",
                      check_rc=0)
    rows = list(csv.reader(io.StringIO(result.stdout)))
    header, geomean = rows[0], rows[-1]
    assert geomean[0] == "GEOMEAN"
    return {re.match(r"Speedup\((.+)/Oldest", name).group(1): float(value)
            for name, value in zip(header, geomean) if name.startswith("Speedup(") and value}


def render(tmp_path, *inputs) -> str:
    page = tmp_path / "report" / "report.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    call_tool("aggregate.py", *inputs, "--accelerator=cpu", f"--output={page}", check_rc=0)
    return page


@pytest.fixture(scope="module")
def fixture_page(tmp_path_factory) -> str:
    """The fixture's page, written once for the tests that only read it (a page is about 0.4 s of plotting)."""
    return render(tmp_path_factory.mktemp("page"), FIXTURE).read_text(encoding="utf-8")


def test_the_page_is_self_contained_and_says_what_was_run(fixture_page):
    text = fixture_page
    # Every plot inline: the dashboard over time (the fixture has several runs), speedup over time, the newest run.
    assert text.startswith("<!DOCTYPE html>") and text.count("<svg") == 3
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", text)  # nothing fetched
    assert "@import" not in text and not re.search(r"url\((?!#)", text)  # only the SVG's own #clip-paths
    for fact in ("Suites", "dummy", "Runs", "2025-06-16 15:06 UTC", "torch 2.9.1", "Backends", "Inductor"):
        assert fact in text


def test_geomeans_are_aggregates_own_numbers(fixture_page):
    text = fixture_page
    expected = geomeans_from_csv(FIXTURE)
    shown = dict(re.findall(r'<tr><td>([^<]+)</td><td class="num" data-backend="[^"]+">([0-9.]+)</td>', text))
    assert set(shown) == set(expected) and len(expected) == 4
    for backend, value in expected.items():
        assert float(shown[backend]) == pytest.approx(value, abs=5e-5)


def test_html_format_follows_the_selection_flags(tmp_path):
    page = tmp_path / "inductor.html"
    call_tool("aggregate.py", FIXTURE, "--accelerator=cpu", "--format=html", f"--output={page}", "--backends", "eager",
             "inductor", check_rc=0)
    text = page.read_text(encoding="utf-8")
    assert "Inductor ms" in text and "aot_eager ms" not in text
    result = call_tool("aggregate.py", FIXTURE, "--accelerator=cpu", "-k", "no_such_model", "--format=html")
    assert result.returncode == 1 and "match the selection (" in result.stderr


@pytest.fixture(scope="module")
def real_sweep(tmp_path_factory):
    """A real small sweep with a failing config, and its page written beside the results."""
    out = tmp_path_factory.mktemp("sweep")
    common = ["--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "--repeat=2", "--warmup=1",
              f"--output-dirname={out}", "--timestamp=1790000000"]  # one run, as a resumed sweep
    run_runner(*common, "-k", "^(mlp|cnn)$", check_rc=0)
    run_runner(*common, "--suite-name=faults", "-k", "^raise_on_load$", check_rc=1)
    page = out / "report.html"
    run_tool("aggregate.py", out / "results.jsonl", "--accelerator=cpu", f"--output={page}", check_rc=0)
    return out, page


@pytest.mark.integration
def test_failed_configs_show_status_phase_message_and_a_link_to_their_log(real_sweep):
    out, page = real_sweep
    text = page.read_text(encoding="utf-8")
    failed = [r for r in read_jsonl(out / "results.jsonl") if r["status"] != "ok"]
    assert len(failed) == 1
    log = failed[0]["error"]["log"]
    assert f'href="{log}"' in text and (page.parent / log).exists()  # relative to the page, beside the results
    assert '<span class="failed">error in load</span>' in text and "fails while it is built, on purpose" in text


@pytest.mark.integration
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (make browser installs Debian's)")
def test_in_a_real_browser_offline_the_numbers_rows_and_sorting_work(real_sweep, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (requirements.txt)")
    out, page_path = real_sweep
    expected = geomeans_from_csv(out / "results.jsonl")
    requests = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            # No network: anything but the file itself is refused (and would be counted).
            page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://")
                       else (requests.append(route.request.url), route.abort()))
            page.goto(page_path.as_uri())
            rows = page.locator("#geomean tbody tr").all_inner_texts()
            shown = {r.split("\t")[0]: float(r.split("\t")[1]) for r in rows}
            assert shown == pytest.approx(expected, abs=5e-5)
            models = lambda: [r.split("\t")[0] for r in page.locator("#models tbody tr").all_inner_texts()]  # noqa
            assert sorted(models()) == ["cnn", "mlp", "raise_on_load"]
            column = "#models tbody tr td:nth-child(3)"  # Eager ms
            # each time is followed by its spread (`0.269 ±0.67%`)
            shown_ms = lambda: [float(t.split()[0]) for t in page.locator(column).all_inner_texts()  # noqa
                                if t[:1].isdigit()]
            page.click("#models thead th:nth-child(3)")
            ascending = models()
            assert ascending[-1] == "raise_on_load"  # a failure has no time: last, whatever the order
            assert shown_ms() == sorted(shown_ms()) and len(shown_ms()) == 2
            page.click("#models thead th:nth-child(3)")
            assert models() == list(reversed(ascending[:2])) + ["raise_on_load"]
            assert shown_ms() == sorted(shown_ms(), reverse=True)
            page.fill("#filter", "raise")
            visible = [r for r in page.locator("#models tbody tr").all() if r.is_visible()]
            assert len(visible) == 1 and "error in load" in visible[0].inner_text()
            page.fill("#filter", "")
            screenshot = tmp_path / "report.png"
            page.screenshot(path=str(screenshot), full_page=True)
            assert screenshot.stat().st_size > 10_000
        finally:
            browser.close()
    assert requests == []


def test_failure_text_is_escaped(tmp_path):
    record = json.loads(FIXTURE.read_text(encoding="utf-8").splitlines()[0])
    record["model"] = {"suite_name": "dummy", "model_name": "broken_model"}
    record.update(status="error", error={"type": "X", "message": "<script>alert(1)</script>", "phase": "run",
                                        "log": "logs/m/x.log"})
    record["timestamp"] = max(json.loads(line)["timestamp"] for line in FIXTURE.read_text().splitlines())
    bad = tmp_path / "bad.jsonl"
    bad.write_text(FIXTURE.read_text(encoding="utf-8") + json.dumps(record) + "\n", encoding="utf-8")
    text = render(tmp_path, bad).read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def one_run(tmp_path) -> Path:
    """The fixture's newest run alone: one timestamp."""
    found = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    newest = max(r["timestamp"] for r in found)
    path = tmp_path / "one_run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in found if r["timestamp"] == newest), encoding="utf-8")
    return path


def test_speedup_over_time_is_plotted_from_two_runs_on_and_one_run_says_why_not(fixture_page, tmp_path):
    several = fixture_page
    assert "<h2>Speedup over time</h2>" in several and 'id="no-over-time"' not in several
    single = render(tmp_path / "single", one_run(tmp_path)).read_text(encoding="utf-8")
    assert "Speedup over time</h2>" not in single and "Geomean speedup over oldest" not in single  # its plot's title
    assert single.count("<svg") == 1  # the newest run's per-model plot only (no dashboard-over-time either)
    why = re.search(r'<p class="small" id="no-over-time">([^<]+)</p>', single).group(1)
    assert why.startswith("No speedup-over-time plot: these results hold one run.")


def test_every_note_is_said_once_as_text_and_not_inside_the_plots(fixture_page):
    text = fixture_page
    said = re.findall(r'<p class="small">([^<]+)</p>', text)
    assert len(said) == len(set(said))
    for note in ("Speedup = Eager time / backend time (above 1 is faster)", "Time: median per iteration",
                 "Pass rate = configs whose accuracy is pass"):
        assert text.count(note) == 1, note
    for svg in re.findall(r"<svg.*?</svg>", text, re.S):
        assert "Speedup = " not in svg and "Time: median" not in svg


def test_the_page_says_at_its_top_how_to_open_and_share_it(fixture_page):
    text = fixture_page
    share = re.search(r'<p class="small" id="share">([^<]+)</p>', text)
    assert share and share.start() < text.index('id="dashboard"')
    assert "One self-contained file" in share.group(1) and "open report.html in any browser" in share.group(1)
    assert "attach it" in share.group(1)
