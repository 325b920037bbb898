"""aggregate.py on a tiny real sweep's records (tests/fixtures/reads): a speedup from outputs that failed their check
is marked where it is shown (grid, CSV, HTML) and its geomean says what it covers; a named figure
(--metric=decode_tokens_per_second) is printed itself, in its unit, not only as a ratio (with one backend, 1.00)."""

import csv
import io
import json
import re
import shutil

import pytest

from helpers import ROOT, call_tool

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

READS = ROOT / "tests" / "fixtures" / "reads"
FAULTS = READS / "faults_verified.jsonl"
LLM = READS / "llm_generate.jsonl"
FAILED = {"drifts_when_armed", "mask_differs_a_lot", "structure_differs"}  # aot_eager's fail_accuracy configs


def test_the_grid_and_csv_mark_each_speedup_whose_check_failed_and_the_geomean_that_holds_them():
    result = call_tool("aggregate.py", FAULTS, "--accelerator=cpu", "--report=latest_grouped", "--format=csv",
                       check_rc=0)
    rows = list(csv.DictReader(io.StringIO(result.stdout.lstrip("# "))))
    assert {row["ModelName"] for row in rows if row.get("Failed(aot_eager)") == "✗fail_accuracy"} == FAILED
    assert next(row for row in rows if row["ModelName"] == "GEOMEAN")["Failed(aot_eager)"] == "✗ 3 in it"
    assert re.search(r"aot_eager: 6 models .*3 failed their check \(✗: drifts_when_armed, mask_differs_a_lot, "
                     r"structure_differs\), in its geomean; over the passing ones only \(the dashboard's rule\): 0\.2\d+",
                     result.stderr), result.stderr
    grid = call_tool("aggregate.py", FAULTS, "--accelerator=cpu", "--report=latest_grouped", "--format=table",
                     check_rc=0).stdout
    assert re.search(r"\| mask_differs_a_lot +\| +1\.00 \| .* \| ✗fail_accuracy \|", grid), grid
    assert "Note: ✗ <status>: the config's outputs failed their check" in grid


def test_the_page_labels_each_geomean_and_marks_a_failed_speedup_with_its_spread_and_graph_breaks(tmp_path):
    page = tmp_path / "report.html"
    call_tool("aggregate.py", FAULTS, "--accelerator=cpu", "--format=html", f"--output={page}", check_rc=0)
    html = page.read_text(encoding="utf-8")
    assert "<th>GeomeanSpeedup (passing configs)</th>" in html
    assert "<th>Geomean speedup, all models</th>" in html and "<th>Geomean speedup, passing only</th>" in html
    geomeans = html[html.index('<table id="geomean">'):]
    aot = re.search(r"<td>aot_eager</td>(.*?)</tr>", geomeans).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", aot)
    assert float(cells[0]) < float(cells[3])  # the failing ones pull the all-models geomean down here
    assert cells[2] == "6" and all(name in cells[4] for name in FAILED)
    models = html[html.index('<table id="models"'):]
    row = re.search(r"<tr><td>mask_differs_a_lot</td>.*?</tr>", models).group(0)
    assert re.search(r"0\.0\d+ <span class=\"failed\">✗fail_accuracy</span> <span class=\"small\">\(0 breaks, "
                     r"roofline [0-9.]+%\)</span>", row), row
    assert re.search(r"\d\.\d{3} <span class=\"small\">±[0-9.]+%!?</span>", row), row
    breaks = re.search(r"<tr><td>falls_back_to_eager</td>.*?</tr>", models).group(0)
    assert "(2 breaks, roofline" in breaks


def test_a_named_figure_is_printed_itself_in_its_unit_even_for_one_backend(tmp_path):
    eager = [json.loads(line) for line in LLM.read_text().splitlines()][:1]  # a sweep of eager alone
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(eager[0]) + "\n")
    tokens = eager[0]["metrics"]["decode_tokens_per_second"]
    expected = sorted(tokens)[1]  # the median of its three timed calls
    result = call_tool("aggregate.py", path, "--accelerator=cpu", "--metric=decode_tokens_per_second",
                       "--format=table", check_rc=0)
    assert f"decode_tokens_per_second itself: {expected:.0f} tokens/s" in result.stdout, result.stdout
    grid = call_tool("aggregate.py", LLM, "--accelerator=cpu", "--metric=decode", "--report=latest_grouped",
                     "--format=csv", check_rc=0).stdout
    [row] = [r for r in csv.DictReader(io.StringIO(grid.lstrip("# "))) if r["ModelName"] == "Qwen/Qwen3-0.6B"]
    assert float(row["decode_tokens_per_second(Inductor[compile-forward,new16,prompt32]) [tokens/s]"]) > 100


def test_the_page_shows_the_llm_rows_figures_as_vllm_prints_them(tmp_path):
    page = tmp_path / "report.html"
    call_tool("aggregate.py", LLM, "--accelerator=cpu", "--format=html", f"--output={page}", check_rc=0)
    html = page.read_text(encoding="utf-8")
    table = html[html.index('<table id="generate-figures">'):]
    row = re.search(r"<tr><td>Qwen/Qwen3-0\.6B</td><td>Inductor\[compile-forward,new16,prompt32\]</td>(.*?)</tr>",
                    table).group(1)
    cells = re.findall(r'<td class="num">(.*?)</td>', row)
    assert [c.split(" ", 1)[-1] if " " in c else c[-1] for c in cells] == ["ms", "ms", "ms", "ms", "tokens/s", "%",
                                                                           "ms"], cells
    assert cells[-1] == "36.6 ms"


@pytest.mark.integration
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (make browser installs Debian's)")
def test_in_chromium_the_marks_the_labelled_geomeans_and_the_llm_figures_show(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (requirements.txt)")
    pages = {}
    for name, path in (("faults", FAULTS), ("llm", LLM)):
        pages[name] = tmp_path / f"{name}.html"
        call_tool("aggregate.py", path, "--accelerator=cpu", "--format=html", f"--output={pages[name]}", check_rc=0)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(pages["faults"].as_uri())
            rows = page.locator("#geomean tbody tr").all_inner_texts()
            aot = next(r.split("\t") for r in rows if r.startswith("aot_eager"))
            assert aot[3] == "6" and float(aot[4]) > float(aot[1]) and "✗ drifts_when_armed" in aot[5], aot
            failed = page.locator("#models tbody tr", has_text="mask_differs_a_lot").inner_text()
            assert "✗fail_accuracy" in failed and "0 breaks" in failed and "±" in failed, failed
            page.goto(pages["llm"].as_uri())
            figures = page.locator("#generate-figures tbody tr").all_inner_texts()
            assert len(figures) == 2 and all("tokens/s" in row and " ms" in row and "%" in row for row in figures)
        finally:
            browser.close()
