"""result_analyzer.py's rows of one byte range: from what range_reader.py read, the lines that are records,
each distinct value (model, config, outcome, environment) reduced once to its cells, the statistics of every
metric computed a column at a time for all rows at once, and the rows as CSV or JSON Lines."""

from __future__ import annotations

from operator import attrgetter

import numpy as np
import orjson

from benchmarks.analyzer import kept_columns, range_reader, refusals
from benchmarks.analyzer.cells import cell, join_rows, numbers_piece, statistics_cells
from benchmarks.analyzer.columns import (BACKEND_COLUMN, DYNAMO_COLUMNS, ENV_COLUMNS, EXPERIMENT_PREFIX,
                                         RECORD_VALUE_COLUMNS, ROUND_COLUMN, STATISTICS, UPSTREAM_COLUMNS,
                                         metric_columns, metric_rank)
from benchmarks.analyzer.kept_columns import Piece
from benchmarks.analyzer.problems import Problems
from benchmarks.analyzer.range_reader import (K_DYNAMO_STATS, K_ENVIRONMENT, K_EXPERIMENT, K_METRICS, K_MODEL,
                                              K_RECORD_VALUES, K_REL_ERROR, K_ROUND, K_TIMESTAMP, LINE_BLANK,
                                              RangeRead)
from benchmarks.analyzer.row_entries import (EXPERIMENT_KEYS, HEADLINE, K_ACCURACY, MAX, MEDIAN, MODEL_KEYS,
                                             NO_DYNAMO_STATS, NO_OUTCOME, OUTCOME_NAMES, PLAIN_KEYS, RUN_KEYS,
                                             Reduced, SAME_AS, SEGMENT_B1, Selection, dynamo_stats_entry,
                                             environment_entry, experiment_entry, model_entry, outcome_combinations,
                                             outcome_entry, plain_entry, texts, warmup_skips)
from benchmarks.results import accuracy_status, record_check, records, stats
from benchmarks.results.measurement import Measurement


class RangeRows:
    """The rows of one byte range: per key, the distinct values read and each row's index into them; each
    distinct value is formatted once, rows hold indexes, and statistics are computed and formatted per
    column, for all rows at once."""

    def __init__(self, read: RangeRead, problems: Problems, hide_errors: bool, fallback_timestamp: float,
                 check_json: bool, chosen=None):
        """check_json: every value a row shows must also be written as JSON (for a JSON Lines report); `chosen`: the
        selection flags' matcher (results/selection.py), None for every record."""
        self.problems = problems
        self.chosen = chosen
        self.left_out = 0  # records the selection left out
        self.hide_errors = hide_errors
        self.fallback_timestamp = fallback_timestamp
        self.check_json = check_json
        self.lines = []  # per row: its line in the range (0-based)
        self.values = []  # per key: its distinct values (the last one: absent)
        self.ids = []  # per key: per row, the index of its value (int32)
        self.entries = {}  # model, experiment, environment: per distinct value, its entry (values, CSV text, ...)
        self.plain = {}  # timestamp, relative error, the record's values: per distinct value, (CSV text, value)
        self.outcomes, self.outcome_ids = [], None  # distinct outcome entries (outcome_entry), per row
        self.xla = self.dynamo = np.zeros(0, dtype=bool)
        self.experiment_keys = []  # the configs' keys beyond upstream's, sorted: experiment_<key> columns
        self.has_round = False  # some record has `round` (--rounds): a round column
        self.has_dynamo_stats = False  # some record has `dynamo_stats`: the DYNAMO_COLUMNS
        self.kept_columns = ()  # the CSV rows' columns (csv_rows: the empty ones of ours left out)
        self.skips = np.zeros(0, dtype=np.intp)
        self.statuses = {}
        self.blocks = {}  # (metric, samples per record) -> [(rows, 2-D samples)]
        self.flat = {}  # a dict-valued metric's column -> (rows, values)
        self.aliases = {}  # metric -> the metric whose samples it has in every row
        if not self._select_records(read.n_lines, read.status, read.values, read.ids, read.dropped,
                                    read.compiled_metrics, read.line_text):
            return
        samples = range_reader.read_samples(read, self.lines, self.values[K_METRICS], self.ids[K_METRICS],
                                            problems)
        self.blocks, self.flat = samples.blocks, samples.flat
        if samples.timed_warmup is not None:
            self.skips[samples.timed_warmup] = 0
        self._alias_equal_metrics()

    def _select_records(self, n_lines: int, status: np.ndarray, parsed: list, ids: list, dropped: set,
                        compiled_metrics: tuple, line_text=None) -> list:
        """The lines that are records (a model and an experiment object, and metrics the shared validation
        accepts), with what their rows need per distinct value; returns their lines."""
        present = [line_ids >= 0 for line_ids in ids]
        for column, line_ids in zip(parsed, ids):  # the last value of each key: absent
            line_ids[line_ids < 0] = len(column)
            column.append(None)
        rows = self._record_lines(status, parsed, ids, dropped)
        refused = refusals.unusable_metrics(parsed[K_METRICS], ids[K_METRICS], compiled_metrics, line_text)
        refused = {line: why for line, why in refused.items() if line in set(rows.tolist())} if refused else {}
        if refused:
            for line, why in sorted(refused.items()):
                self.problems.add("unusable-metrics", line, f"unusable record: {why}; skipped")
            rows = rows[~np.isin(rows, list(refused))]
        if self.chosen is not None and len(rows):
            kept = rows[self._selected(parsed, ids, rows)]
            self.left_out, rows = len(rows) - len(kept), kept
        if not len(rows):
            return []
        if len(rows) < n_lines:
            ids = [line_ids[rows] for line_ids in ids]
            present = [flags[rows] for flags in present]
        outcome_values, outcome_ids = outcome_combinations(parsed, ids)
        selection = Selection(rows, ids, present, outcome_ids)
        # Every distinct value (or combination) reduced once; one that cannot be costs its rows, never the report.
        unreadable = {}
        reduced = self._reduce(parsed, ids, outcome_values, unreadable)
        if unreadable:
            selection = self._drop_unreadable(selection, unreadable)
            if not len(selection.rows):
                return []
        self._keep(parsed, selection, reduced)
        return self.lines

    def _selected(self, parsed: list, ids: list, rows: np.ndarray) -> np.ndarray:
        """Which of `rows` the selection keeps: it reads a record's model and experiment only, so each distinct
        (model, experiment) pair is matched once."""
        pairs = np.stack([ids[K_MODEL][rows], ids[K_EXPERIMENT][rows]], axis=1)
        distinct, inverse = np.unique(pairs, axis=0, return_inverse=True)
        keep = np.fromiter((self.chosen(Measurement({"model": parsed[K_MODEL][model],
                                                     "experiment": parsed[K_EXPERIMENT][experiment]}))
                            for model, experiment in distinct.tolist()), dtype=bool, count=len(distinct))
        return keep[inverse.reshape(-1)]

    def _record_lines(self, status: np.ndarray, parsed: list, ids: list, dropped: set) -> np.ndarray:
        """The lines with a model and an experiment object; any other line that is not blank (nor dropped by the
        reader already) is reported."""
        is_dict = [np.fromiter((type(value) is dict for value in parsed[k]), dtype=bool, count=len(parsed[k]))
                   for k in (K_MODEL, K_EXPERIMENT)]
        is_record = is_dict[0][ids[K_MODEL]] & is_dict[1][ids[K_EXPERIMENT]]
        if not is_record.all():
            for index in np.flatnonzero(~is_record & (status != LINE_BLANK)).tolist():
                if index not in dropped:
                    self.problems.add("not-record", index, "unusable record: no model or experiment; skipped")
        return np.flatnonzero(is_record)

    def _reduce(self, parsed: list, ids: list, outcome_values: list, unreadable: dict) -> "Reduced":
        """Each distinct value the rows use, made its entry once (None: unused); one that can't be is None too, and
        `unreadable[(key, index)]` (key -1: an outcome) says why."""
        check_json = self.check_json

        def entries(k: int, make, values: list, used: np.ndarray, shown=None, check=None) -> list:
            """make(value) of each used value; shown(entry): what a JSON line shows of it, when it must be
            written as JSON too (orjson refuses integers beyond 64 bits, which Python's json reads); check(index):
            why the shared validation refuses the records that hold that value (benchmarks/results/record_check.py)."""
            out = [None] * len(values)
            for index in np.flatnonzero(used).tolist():
                try:
                    refused = check(index) if check is not None else None
                    if refused:
                        raise refusals.UnusableRecord(refused)
                    entry = make(values[index])
                    if shown is not None and check_json:
                        orjson.dumps(shown(entry))
                    out[index] = entry
                except Exception as exc:  # input we did not foresee (text nested deeper than orjson writes ...)
                    unreadable[(k, index)] = exc
            return out

        def of_key(k: int, make, shown) -> list:
            used = np.zeros(len(parsed[k]), dtype=bool)
            used[ids[k]] = True
            values = read = parsed[k]
            name = range_reader.TOP_KEYS[k]
            check = lambda index: record_check.key_problem(name, read[index])  # noqa: E731 (as read: no fallback)
            if k == K_TIMESTAMP:
                values = [self.fallback_timestamp if value is None else value for value in values]
            return entries(k, make, values, used, shown, check)

        values_shown = attrgetter("values")
        return Reduced(
            models=of_key(K_MODEL, model_entry, values_shown),
            experiments=of_key(K_EXPERIMENT, experiment_entry, attrgetter("values", "extra")),
            environments=of_key(K_ENVIRONMENT, environment_entry, values_shown),
            dynamo=of_key(K_DYNAMO_STATS, dynamo_stats_entry, values_shown),
            outcomes=entries(-1, lambda values: outcome_entry(values, self.hide_errors), outcome_values,
                             np.ones(len(outcome_values), dtype=bool), lambda entry: (tuple(entry.row), entry.message),
                             lambda index: refusals.outcome_problem(OUTCOME_NAMES, outcome_values[index])),
            plain={k: of_key(k, plain_entry, attrgetter("value")) for k in PLAIN_KEYS})

    def _drop_unreadable(self, selection: "Selection", unreadable: dict) -> "Selection":
        """The rows whose record has a value that could not be reduced, or that the shared validation refuses,
        skipped (each reported)."""
        keep = np.ones(len(selection.rows), dtype=bool)
        for (k, index), exc in sorted(unreadable.items(), key=lambda item: item[0]):
            hit = (selection.outcome_ids if k < 0 else selection.ids[k]) == index
            if isinstance(exc, refusals.UnusableRecord):  # every tool's words (records.usable_records)
                key, message = ("unusable", str(exc)), f"unusable record: {exc}; skipped"
            else:
                key = ("unreadable", type(exc).__name__)
                message = f"record skipped: {type(exc).__name__}: {records.short_message(str(exc))}"
            for position in np.flatnonzero(hit & keep).tolist():
                self.problems.add(key, int(selection.rows[position]), message)
            keep &= ~hit
        return Selection(selection.rows[keep], [line_ids[keep] for line_ids in selection.ids],
                          [flags[keep] for flags in selection.present], selection.outcome_ids[keep])

    def _keep(self, parsed: list, selection: "Selection", reduced: "Reduced") -> None:
        """What the rows need: their lines, each key's values and their indexes, the entries, the columns only some
        records ask for; then the accuracy derived where it is missing, the statuses counted, the warm-up skips."""
        ids = selection.ids
        self.lines = selection.rows.tolist()
        self.values, self.ids = parsed, ids
        self.outcomes, self.outcome_ids = reduced.outcomes, selection.outcome_ids
        self.entries = {K_MODEL: reduced.models, K_EXPERIMENT: reduced.experiments,
                        K_ENVIRONMENT: reduced.environments, K_DYNAMO_STATS: reduced.dynamo}
        self.plain = {k: [entry.text if entry else b"" for entry in entries] for k, entries in reduced.plain.items()}
        self.experiment_keys = sorted({key for entry in reduced.experiments if entry for key in entry.extra})
        self.has_round = bool(selection.present[K_ROUND].any())
        self.has_dynamo_stats = bool(selection.present[K_DYNAMO_STATS].any())
        self._derive_accuracy()
        experiments = reduced.experiments
        self.xla = np.array([bool(entry and entry.xla) for entry in experiments], dtype=bool)[ids[K_EXPERIMENT]]
        self.dynamo = np.array([bool(entry and entry.dynamo) for entry in experiments], dtype=bool)[ids[K_EXPERIMENT]]
        self._count_statuses()
        self.skips = warmup_skips(parsed, selection)

    def _count_statuses(self) -> None:
        """Rows per status."""
        counts = np.bincount(self.outcome_ids, minlength=len(self.outcomes))
        for entry, count in zip(self.outcomes, counts.tolist()):
            if not count or entry is None:
                continue
            self.statuses[entry.row.status] = self.statuses.get(entry.row.status, 0) + count

    def _derive_accuracy(self) -> None:
        """Rows whose record has no known accuracy status (older records) show the one Measurement.accuracy
        derives from status, failure phase and verification code: one more distinct value per outcome."""
        values, texts, k = self.values[K_ACCURACY], self.plain[K_ACCURACY], K_ACCURACY
        known = np.fromiter((type(value) is str and value in accuracy_status.STATUSES for value in values),
                            dtype=bool, count=len(values))
        derive = ~known[self.ids[k]]
        if not derive.any():
            return
        derived = [accuracy_status.derive({"status": entry.row.status, "error": {"phase": entry.row.error_phase},
                                           "verification_code": entry.row.verification_code}) if entry else None
                   for entry in self.outcomes]
        ids = self.ids[k].copy()
        ids[derive] = len(values) + self.outcome_ids[derive]
        values.extend(derived)
        texts.extend(b"" if value is None else cell(value).encode() for value in derived)
        self.ids[k] = ids

    def _samples_of(self, metric: str) -> dict:
        """{samples per record: (rows, 2-D samples)} of a metric, rows in order."""
        out = {}
        for (name, length), pieces in self.blocks.items():
            if name == metric:
                rows = np.concatenate([r for r, _ in pieces])
                samples = np.concatenate([v for _, v in pieces])
                order = np.argsort(rows, kind="stable")
                out[length] = (rows[order], samples[order])
        return out

    def _alias_equal_metrics(self) -> None:
        """A metric whose samples equal its source's in every row (per-iteration times of one-iteration runs)
        takes the source's statistics instead of computing them again."""
        present = {name for name, _ in self.blocks}
        for name, source in SAME_AS.items():
            if name not in present or source not in present:
                continue
            mine, theirs = self._samples_of(name), self._samples_of(source)
            if mine.keys() != theirs.keys():
                continue
            if all(np.array_equal(mine[n][0], theirs[n][0]) and
                   np.array_equal(mine[n][1], theirs[n][1], equal_nan=True) for n in mine):
                self.aliases[name] = source
                for length in mine:
                    del self.blocks[(name, length)]

    def compute(self) -> tuple:
        """(headline matrix, units): a unit is (column names, rows, values) for one metric's statistics (or one
        entry of a dict-valued metric), in column order, with the rows that have it."""
        n = len(self.lines)
        blocks, flat, aliases = self.blocks, self.flat, self.aliases
        skip = self.skips
        medians = {m: np.full(n, np.nan) for m in ("total_time", "per_iter_time", "trace_per_iter_time")}
        total_max = np.full(n, np.nan)
        warmup_first = np.full(n, np.nan)
        has_warmup_time = np.zeros(n, dtype=bool)
        parts = {}  # metric -> [(rows, statistics table)]
        not_numbers = []  # (metric, rows whose samples hold a null or NaN)
        for (metric, _), pieces in blocks.items():
            rows = np.concatenate([r for r, _ in pieces]) if len(pieces) > 1 else pieces[0][0]
            values = np.concatenate([v for _, v in pieces]) if len(pieces) > 1 else pieces[0][1]
            if metric == "warmup_time":
                warmup_first[rows] = values[:, 0]
                has_warmup_time[rows] = True
            summary = stats.summary_rows(values, skip[rows])
            parts.setdefault(metric, []).append((rows, np.column_stack([summary[s] for s in STATISTICS])))
            not_numbers.append((metric, rows[np.isnan(summary["max"])]))  # null or NaN samples (Python's json: NaN)
        # Reported in column order: the readers read a line's metrics in different orders.
        for metric, rows in sorted(not_numbers, key=lambda item: metric_rank(item[0])):
            for row in rows.tolist():
                self.problems.add(("nan", metric), self.lines[row], f"metric {metric!r} has null or NaN "
                                  "samples; statistics that include them are left empty")
        for name, source in aliases.items():
            if source in parts:
                parts[name] = parts[source]
        if "compile_time" in parts:
            parts["compile_time"] = self._compiled_only(parts["compile_time"])
            if not parts["compile_time"]:
                del parts["compile_time"]
        for metric, column in (("total_time", MEDIAN), ("per_iter_time", MEDIAN), ("trace_per_iter_time", MEDIAN),
                               ("total_time", MAX)):
            target = total_max if column == MAX else medians[metric]
            for rows, table in parts.get(metric, ()):
                target[rows] = table[:, column]
        units, tables = [], {}
        for metric in sorted(parts, key=metric_rank):
            names = metric_columns(metric)
            kept = tuple(STATISTICS.index(name.split("_", 1)[0]) for name in names)
            rows, table = tables.get((id(parts[metric]), kept)) or tables.setdefault(
                (id(parts[metric]), kept), self._unit_table(parts[metric], kept))
            units.append((tuple(names), rows, table))
        for column in sorted(flat):
            rows, values = flat[column]
            units.append(((column,), np.asarray(rows, dtype=np.intp), np.asarray(values, dtype=np.float64)[:, None]))
        xla, dynamo = self.xla, self.dynamo
        compile_time = stats.compile_time_rows(medians["total_time"], total_max, warmup_first, has_warmup_time)
        headline = np.empty((n, len(HEADLINE)))
        headline[:, 0] = medians["total_time"]
        headline[:, 1] = medians["per_iter_time"]
        headline[:, 2] = np.where(xla, medians["trace_per_iter_time"], np.nan)  # upstream computed it, never filled it
        headline[:, 3] = np.where(xla, compile_time, np.nan)
        headline[:, 4] = np.where(dynamo, compile_time, np.nan)
        return headline, units

    def _compiled_only(self, pieces: list) -> list:
        """A generate run's compile_time (its first call beyond a steady one) of the rows that compile (dynamo or
        XLA), at least 0: an eager record written before child/generation.first_call_excess had one, noise that
        could be negative, and its cells are left empty."""
        compiles = self.xla | self.dynamo
        kept = []
        for rows, table in pieces:
            keep = compiles[rows]
            if keep.any():
                kept.append((rows[keep], np.maximum(table[keep], 0.0)))
        return kept

    @staticmethod
    def _unit_table(pieces: list, kept: tuple) -> tuple:
        rows = np.concatenate([r for r, _ in pieces]) if len(pieces) > 1 else pieces[0][0]
        table = np.concatenate([v for _, v in pieces]) if len(pieces) > 1 else pieces[0][1]
        if len(kept) < len(STATISTICS):  # a median among the fixed columns is not repeated
            table = table[:, list(kept)]
        return rows, table

    # -- output

    def csv_rows(self, headline: np.ndarray, units: list, compiled: bool) -> bytes:
        """The CSV rows, each ending with a newline: each distinct value's cells formatted once, joined by
        the rows' indexes; the columns of ours that no row has a value in are left out (kept_columns.py), and
        `kept_columns` names the ones written."""
        n, ids, plain, outcome_ids = len(self.lines), self.ids, self.plain, self.outcome_ids
        outcomes = [entry or NO_OUTCOME for entry in self.outcomes]
        models, experiments, environments = (self.entries[k] for k in (K_MODEL, K_EXPERIMENT, K_ENVIRONMENT))
        up = UPSTREAM_COLUMNS
        pieces = [Piece(up[:1], (plain[K_TIMESTAMP], ids[K_TIMESTAMP])), Piece(up[1:3], (texts(models), ids[K_MODEL])),
                  Piece(up[3:11], (texts(experiments), ids[K_EXPERIMENT])),
                  Piece(up[11:13], ([entry.run_text for entry in outcomes], outcome_ids)),
                  Piece(up[13:14], ([cell(entry.message).encode() for entry in outcomes], outcome_ids)),
                  Piece(HEADLINE, numbers_piece(headline)),
                  Piece(SEGMENT_B1, ([entry.segment_text for entry in outcomes], outcome_ids),
                        [None if entry.row is None else entry.row[2:7] for entry in outcomes]),
                  Piece(("verification_mean_rel_error",), (plain[K_REL_ERROR], ids[K_REL_ERROR])),
                  Piece(("warmup",), ([entry.warmup_text for entry in outcomes], outcome_ids))]
        pieces += [Piece((name,), (plain[k], ids[k])) for name, k in zip(RECORD_VALUE_COLUMNS, K_RECORD_VALUES)]
        pieces += [Piece((ROUND_COLUMN,), (plain[K_ROUND], ids[K_ROUND]))] * self.has_round
        pieces.append(Piece((BACKEND_COLUMN,), ([entry.backend if entry else b"" for entry in experiments],
                                                ids[K_EXPERIMENT])))
        pieces += [Piece((EXPERIMENT_PREFIX + key,), ([entry.extra_cells.get(key, b"") if entry else b""
                                                       for entry in experiments], ids[K_EXPERIMENT]))
                   for key in self.experiment_keys]
        if self.has_dynamo_stats:
            found = [entry or NO_DYNAMO_STATS for entry in self.entries[K_DYNAMO_STATS]]
            pieces.append(Piece(DYNAMO_COLUMNS, ([entry.text for entry in found], ids[K_DYNAMO_STATS]),
                                [entry.values for entry in found]))
        if units:
            pieces.append(Piece(tuple(name for names, _, _ in units for name in names),
                                statistics_cells(n, units, compiled)))
        pieces.append(Piece(ENV_COLUMNS, (texts(environments), ids[K_ENVIRONMENT]),
                            [entry.values if entry else None for entry in environments]))
        pieces = kept_columns.prune(pieces)
        self.kept_columns = tuple(name for piece in pieces for name in piece.names)
        return join_rows([piece.piece for piece in pieces], n, False, compiled)

    def json_lines(self, headline: np.ndarray, units: list) -> list:
        """One object per row: every fixed and environment column (null when unknown), and the statistics
        of the metrics this record has."""
        dumps, option = orjson.dumps, orjson.OPT_APPEND_NEWLINE
        statistics = [[] for _ in self.lines]
        for names, rows, table in units:
            for row, values in zip(rows.tolist(), table.tolist()):
                statistics[row].extend(zip(names, values))
        fallback, values, entries = self.fallback_timestamp, self.values, self.entries
        out = []
        for position, (timestamp, model, experiment, environment, rel_error, outcome_id, h, row_statistics) in enumerate(zip(
                self.ids[K_TIMESTAMP].tolist(), self.ids[K_MODEL].tolist(), self.ids[K_EXPERIMENT].tolist(),
                self.ids[K_ENVIRONMENT].tolist(), self.ids[K_REL_ERROR].tolist(), self.outcome_ids.tolist(),
                headline.tolist(), statistics)):
            outcome = self.outcomes[outcome_id]
            timestamp = values[K_TIMESTAMP][timestamp]
            row = {"timestamp": fallback if timestamp is None else timestamp}
            row.update(zip(MODEL_KEYS, entries[K_MODEL][model].values))
            row.update(zip(EXPERIMENT_KEYS, entries[K_EXPERIMENT][experiment].values))
            row.update(zip(RUN_KEYS, outcome.row[:2]))
            row["error_message"] = outcome.message
            row.update((name, v if v == v else None) for name, v in zip(HEADLINE, h))
            row.update(zip(SEGMENT_B1, outcome.row[2:7]))
            row["verification_mean_rel_error"] = values[K_REL_ERROR][rel_error]
            row["warmup"] = outcome.row.warmup
            for name, k in zip(RECORD_VALUE_COLUMNS, K_RECORD_VALUES):
                row[name] = values[k][self.ids[k][position]]
            if self.has_round:
                row[ROUND_COLUMN] = values[K_ROUND][self.ids[K_ROUND][position]]
            row[BACKEND_COLUMN] = entries[K_EXPERIMENT][experiment].backend.decode()
            extra = entries[K_EXPERIMENT][experiment].extra
            row.update((EXPERIMENT_PREFIX + key, extra.get(key)) for key in self.experiment_keys)
            if self.has_dynamo_stats:
                found = entries[K_DYNAMO_STATS][self.ids[K_DYNAMO_STATS][position]]
                row.update(zip(DYNAMO_COLUMNS, (found or NO_DYNAMO_STATS).values))
            row.update((name, v) for name, v in row_statistics if v == v)
            row.update(zip(ENV_COLUMNS, entries[K_ENVIRONMENT][environment].values))
            out.append(dumps(row, option=option))
        return out
