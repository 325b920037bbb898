"""The record as it is filled (benchmarks/results/record.py): every key and metric looked up in the one table (the
schema's core keys, each feature's RECORD_KEYS, the metric catalog) when it is set, an undeclared or mistyped one
refused at that line naming where to declare it; a user's sweep warned and its record written all the same."""

import json
import logging
import os

import pytest

from helpers import ROOT

from benchmarks.features.channels_last import child as channels_last_child
from benchmarks.results import record, record_check, records
from benchmarks.results.record import Metrics, Record, Samples
from benchmarks.results.record_check import RecordSchemaError

CORE = "benchmarks/results/record_schema.py"
CATALOG = "benchmarks/results/metric_catalog.py"


def a_record() -> Record:
    """A record as the child starts it (records.new_record)."""
    return records.new_record({"suite_name": "dummy", "model_name": "mlp"}, {"accelerator": "cpu", "test": "eval"},
                              repeat=2, iterations_per_run=1, warmup=1, timestamp=1750000000.0, verify=False,
                              requested_batch_size=None, environment={"python": "3.12"})


def test_the_record_a_writer_starts_is_a_record_and_its_metrics_checked():
    started = a_record()
    assert isinstance(started, Record) and list(started)[:5] == ["model", "experiment", "repeat",
                                                                 "iterations_per_run", "metrics"]
    started["metrics"] = {"total_time": [0.5]}  # a measured loop's dict becomes the record's Metrics
    assert isinstance(started["metrics"], Metrics)
    started["metrics"].add_samples("total_time", [0.25])
    assert started["metrics"] == {"total_time": [0.5, 0.25]}


@pytest.mark.parametrize("write", [
    lambda r: r.set("speed_of_light", 299792458),
    lambda r: r.__setitem__("speed_of_light", 299792458),
    lambda r: r.update(speed_of_light=299792458),
    lambda r: r.setdefault("speed_of_light", 299792458),
], ids=["set", "item", "update", "setdefault"])
def test_an_undeclared_key_is_refused_where_it_is_set_naming_where_to_declare_it(write):
    started = a_record()
    with pytest.raises(RecordSchemaError) as raised:
        write(started)
    assert "record key 'speed_of_light' is not declared" in str(raised.value)
    assert CORE in str(raised.value) and "RECORD_KEYS" in str(raised.value)
    assert "speed_of_light" not in started  # strict: nothing set


def test_an_undeclared_key_set_by_a_features_code_names_that_features_record_keys():
    # the line runs as code of features/channels_last/ (its file name): the feature is the writer
    path = os.path.join(ROOT, "benchmarks", "features", "channels_last", "child.py")
    code = compile("record['channels_last_extra'] = 1", path, "exec")
    with pytest.raises(RecordSchemaError, match=r"declare it in the RECORD_KEYS of "
                                                r"benchmarks/features/channels_last/__init__\.py"):
        exec(code, {"record": a_record()})


def test_a_features_declared_key_is_accepted_from_its_hook():
    started = a_record()
    channels_last_child.ChannelsLast().finish(started)  # the hook's own line writes memory_format
    assert started["memory_format"]["format"] == "channels_last"


@pytest.mark.parametrize("key, value, where", [
    ("run_seconds", "3.2", f"run_seconds is str, not a number (declared in {CORE})"),
    ("memory_format", "channels_last", "memory_format is str, not an object (declared in the RECORD_KEYS of "
                                       "benchmarks/features/channels_last/__init__.py)"),
    ("environment", {"launch": 1}, f"environment.launch is int, not text (declared in {CORE})"),
])
def test_a_mistyped_value_is_refused_naming_its_declaration(key, value, where):
    with pytest.raises(RecordSchemaError) as raised:
        a_record()[key] = value
    assert where in str(raised.value)


def test_a_key_inside_a_section_is_held_to_its_declared_type_and_the_section_stays_open():
    started = a_record()
    started.set("environment.usable_cores", 4)
    started.set("environment.a_fact_of_this_machine", "kept")  # sections are open
    assert started["environment"] == {"python": "3.12", "usable_cores": 4, "a_fact_of_this_machine": "kept"}
    with pytest.raises(RecordSchemaError, match="environment.usable_cores is str"):
        started.set("environment.usable_cores", "4")
    with pytest.raises(RecordSchemaError, match="'speed_of_light' is not declared"):
        started.set("speed_of_light.c", 1)


@pytest.mark.parametrize("write", [
    lambda m: m.add_samples("widgets_per_second", [1.0]),
    lambda m: m.set("widgets_per_second", [1.0]),
    lambda m: m.__setitem__("widgets_per_second", [1.0]),
    lambda m: m.update(widgets_per_second=[1.0]),
], ids=["add_samples", "set", "item", "update"])
def test_an_undeclared_metric_is_refused_naming_the_catalog(write):
    with pytest.raises(RecordSchemaError, match=f"metric 'widgets_per_second' is not declared: declare it in "
                                                f"{CATALOG}"):
        write(a_record()["metrics"])


def test_a_figure_the_tools_compute_is_no_metric_of_a_record():
    with pytest.raises(RecordSchemaError, match="metric 'pass_rate' is not declared"):
        a_record()["metrics"].set("pass_rate", [1.0])  # the catalog declares it in_record=False


def test_a_mistyped_metric_is_refused():
    metrics = a_record()["metrics"]
    with pytest.raises(RecordSchemaError, match=f"metric total_time is float, not a list \\(declared in {CATALOG}\\)"):
        metrics.set("total_time", 0.5)
    with pytest.raises(RecordSchemaError, match="metric error is list, not text"):
        metrics.set("error", ["one line"])


def test_a_timed_loops_samples_refuse_a_new_name_at_its_append():
    samples = Samples()
    samples["per_iter_time"].append(0.5)  # as collections.defaultdict(list) did
    assert samples == {"per_iter_time": [0.5]}
    with pytest.raises(RecordSchemaError, match="metric 'per_iter_tme' is not declared"):
        samples["per_iter_tme"].append(0.5)


def test_an_adopted_record_is_kept_as_it_came_and_checked_from_then_on():
    child = json.loads(json.dumps(a_record()))
    adopted = Record.adopt(child)
    assert adopted == child and list(adopted) == list(child) and isinstance(adopted["metrics"], Metrics)
    with pytest.raises(RecordSchemaError):
        adopted["speed_of_light"] = 1


def test_a_record_is_written_as_the_plain_dict_it_holds(tmp_path):
    started = a_record()
    started["metrics"].add_samples("per_iter_time", [0.5, 0.25])
    plain = json.loads(json.dumps(started))
    assert json.dumps(started) == json.dumps(plain)
    path = tmp_path / "results.jsonl"
    with records.ResultsWriter(str(path)) as writer:
        writer.append(record_check.written(started, logging.getLogger("test")))
    assert [json.loads(line) for line in path.read_text().splitlines()] == [plain]


def test_a_users_sweep_is_warned_and_its_record_written(monkeypatch, caplog, tmp_path):
    monkeypatch.delenv(record_check.STRICT_ENV)
    monkeypatch.setattr(record, "_warned", set())
    started = a_record()
    with caplog.at_level(logging.WARNING):
        started["a_users_own_key"] = 1
        started["metrics"].add_samples("a_users_own_metric", [1.0])
        started["metrics"].add_samples("a_users_own_metric", [2.0])  # warned once
    assert started["a_users_own_key"] == 1 and started["metrics"]["a_users_own_metric"] == [1.0, 2.0]
    warned = [r.getMessage() for r in caplog.records if r.name == "benchmarks.results.record"]
    assert warned == [f"record schema: record key 'a_users_own_key' is not declared: declare it: "
                      f"{record_check.UNDECLARED_KEY}",
                      f"record schema: metric 'a_users_own_metric' is not declared: declare it in {CATALOG}"]
    path = tmp_path / "results.jsonl"
    with records.ResultsWriter(str(path)) as writer:
        writer.append(record_check.written(started, logging.getLogger("test")))
    (kept,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert kept["a_users_own_key"] == 1 and kept["metrics"]["a_users_own_metric"] == [1.0, 2.0]
    assert kept["warnings"] == [f"record schema: a_users_own_key is not declared ({record_check.UNDECLARED_KEY}); "
                                f"metrics.a_users_own_metric is not declared ({CATALOG})"]


def test_a_metric_declared_in_the_catalog_alone_is_accepted(monkeypatch):
    from benchmarks.results import metric_catalog

    widgets = metric_catalog.Metric("widgets_per_second", metric_catalog.RATE, "widgets/s", "widgets made per second",
                                    higher_is_better=True)
    monkeypatch.setitem(metric_catalog.CATALOG, widgets.name, widgets)
    started = a_record()
    started["metrics"].add_samples(widgets.name, [3.0, 4.0])
    assert started["metrics"][widgets.name] == [3.0, 4.0]
    assert record_check.writer_problems(started) == []


def test_a_users_sweep_names_the_feature_whose_code_set_an_undeclared_key_in_the_child_and_the_parent(monkeypatch):
    from benchmarks.child import hand_back

    monkeypatch.delenv(record_check.STRICT_ENV)
    monkeypatch.setattr(record, "_warned", set())
    started = a_record()
    path = os.path.join(ROOT, "benchmarks", "features", "channels_last", "child.py")
    exec(compile("record['channels_last_extra'] = 1", path, "exec"), {"record": started})
    started["a_users_own_key"] = 2  # set by no feature's code
    assert started.undeclared_by == {"channels_last_extra": "channels_last"}
    owned = ("channels_last_extra is not declared (set by the code of feature channels_last: declare it in the "
             "RECORD_KEYS of benchmarks/features/channels_last/__init__.py)")
    anyones = f"a_users_own_key is not declared ({record_check.UNDECLARED_KEY})"
    assert record_check.writer_problems(started) == [owned, anyones]  # a config run by hand: its own Record
    # a sweep's: the child hands who set the key beside the record, never in it, and the parent adopts both
    read_fd, write_fd = os.pipe()
    hand_back.Channel(write_fd).send_record(started)
    with os.fdopen(read_fd, encoding="utf-8") as pipe:
        (message,) = [json.loads(line) for line in pipe]
    assert message["record"] == json.loads(json.dumps(started))
    assert message["undeclared_by"] == {"channels_last_extra": "channels_last"}
    adopted = Record.adopt(message["record"], message["undeclared_by"])
    assert record_check.writer_problems(adopted) == [owned, anyones]
    assert record_check.writer_problems(Record.adopt(message["record"])) == [
        f"channels_last_extra is not declared ({record_check.UNDECLARED_KEY})", anyones]
    # what the pipe says is checked: a name that is no feature, or a key the record lacks, names nothing
    assert Record.adopt(message["record"], {"channels_last_extra": "../elsewhere", "absent": "precision"}
                        ).undeclared_by == {}


def test_a_record_without_an_undeclared_key_is_handed_back_alone():
    from benchmarks.child import hand_back

    read_fd, write_fd = os.pipe()
    hand_back.Channel(write_fd).send_record(a_record())
    with os.fdopen(read_fd, encoding="utf-8") as pipe:
        (message,) = [json.loads(line) for line in pipe]
    assert list(message) == ["record"]
