"""history.py ingest takes PyTorch OSS benchmark ("v3") files as runs (issue 63): ours come back as the configs they
were written from; rows exported from the HUD (a stored file in the dynamo harness's shape) join the database's config
of the same model, backend, mode, dtype and device, on the HUD's machine, and what matches none is listed."""

import json
import sqlite3

from helpers import GOLDEN, ROOT, call_tool

OURS = GOLDEN / "ours_cpu.jsonl"
HUD = ROOT / "tests" / "fixtures" / "oss_v3" / "hud_inductor_export.json"


def configs(db) -> dict:
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT key, suite, model, backend, test, batch_size, accelerator_model FROM configs")
        return {row[0]: row[1:] for row in rows}


def test_our_v3_file_ingests_as_the_configs_and_medians_it_came_from(tmp_path):
    v3 = tmp_path / "oss.jsonl.gz"
    call_tool("result_analyzer.py", OURS, "--format=oss-benchmark", "-o", v3, check_rc=0)
    call_tool("history.py", "ingest", OURS, "--db", tmp_path / "a.sqlite", check_rc=0)
    call_tool("history.py", "ingest", v3, "--db", tmp_path / "b.sqlite", check_rc=0)
    originals, read_back = configs(tmp_path / "a.sqlite"), configs(tmp_path / "b.sqlite")
    assert read_back and set(read_back) <= set(originals)  # failures are not written as v3: fewer, never others
    query = ("SELECT c.key, r.timestamp, m.median_s FROM measurements m JOIN configs c ON c.id = m.config_id "
             "JOIN runs r ON r.id = m.run_id WHERE m.status = 'ok'")
    with sqlite3.connect(tmp_path / "a.sqlite") as a, sqlite3.connect(tmp_path / "b.sqlite") as b:
        assert sorted(b.execute(query).fetchall()) == sorted(a.execute(query).fetchall())


def test_a_hud_export_joins_our_config_on_its_own_machine_and_the_rest_is_listed(tmp_path):
    db = tmp_path / "h.sqlite"
    call_tool("history.py", "ingest", OURS, "--db", db, check_rc=0)
    result = call_tool("history.py", "ingest", HUD, "--db", db, check_rc=0)
    assert "3 record(s) added" in result.stdout + result.stderr
    assert ("1 v3 config(s) match no config of the database by model, backend, mode, dtype and device (stored as "
            "their own): resnet50 inductor[bf16] eval bf16 cuda") in result.stderr
    found = configs(db)
    ours = {json.loads(key)[0]: labels for key, labels in found.items() if labels[-1] != "AMD EPYC 9654"}
    hud = {json.loads(key)[0]: labels for key, labels in found.items() if labels[-1] == "AMD EPYC 9654"}
    assert len(hud) == 2 and set(hud) <= set(ours)  # mlp and cnn: our configs' fingerprints, the HUD's machine
    assert sorted(labels[:5] for labels in hud.values()) == [("dummy", "cnn", "inductor", "eval", "8"),
                                                            ("dummy", "mlp", "inductor", "eval", "16")]
    shown = call_tool("history.py", "show", "--db", db, "-k", "mlp", "--backend", "inductor", "--test", "eval",
                      check_rc=0).stdout
    assert "dummy/mlp inductor eval bs=16  [AMD EPYC 9654]" in shown
