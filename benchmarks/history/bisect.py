"""`history bisect`: the first commit of a git repository at which a sweep subset got slower.

Each tested commit is checked out in its own clone (git_checkout.py), built with --setup (a failure is a
skip, as `git bisect skip`), and run with experiment_runner.py --rounds R into runs/<commit>/ under the
output directory. Its records are compared with both ends' by compare.py's statistics (the bootstrap over
processes and its outcomes, results/change_words.py): good when it is faster than the bad end and not slower than the
good one, bad when it is slower than the good end and not faster than the bad one. While neither, rounds are added
(the runner resumes and runs only the new ones) up to --max-rounds; then the nearer end decides and the
evidence says it was unsure. Each commit's finding (good, bad or skip, as git bisect says) goes to state.json as it
is reached: a re-run resumes. The state is data to check, not to obey (the output folder may come from elsewhere): one
that is not a regular file of JSON shaped as this module writes it (the ends, flags and setup of this bisection;
verdicts good, bad or skip per commit) is refused with one line, exit 2; the logs and runs are not written through
a link (safe_paths.open_no_follow, safe_paths.inside).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import shlex
import subprocess
import sys
from typing import Optional

from benchmarks.history import git_checkout, records_view
from benchmarks.plumbing import disk_writes, safe_reads
from benchmarks.plumbing.safe_paths import inside, open_no_follow
from benchmarks.plumbing.machine_facts import PROJECT_ROOT
from benchmarks.results import records
from benchmarks.results.change_words import Word

log = logging.getLogger("benchmarks.history")

GOOD, BAD, SKIP = "good", "bad", "skip"


@dataclasses.dataclass
class Settings:
    repo: str
    good: str
    bad: str
    setup: Optional[str]
    runner_flags: list
    directory: str  # the bisection's own directory under the output directory
    rounds: int = 3
    max_rounds: int = 9
    threshold: float = 0.02
    confidence: float = 0.95


@dataclasses.dataclass
class Finding:
    verdict: str  # good, bad or skip: the key state.json has always had (a bisection started earlier resumes)
    rounds: int
    evidence: str
    vs_good: Optional[float] = None


def _valid_state(state) -> bool:
    """Whether `state` is shaped as Bisection writes it: a dict whose verdicts map commits to findings."""
    if not isinstance(state, dict) or not isinstance(state.get("verdicts"), dict):
        return False
    return all(isinstance(commit, str) and isinstance(found, dict) and found.get("verdict") in (GOOD, BAD, SKIP)
               and isinstance(found.get("evidence", ""), (str, type(None)))
               for commit, found in state["verdicts"].items())


def _log_file(path: str, mode_flag: int):
    """A log in the bisection's folder, opened for writing without following a link at its name (LinkRefused, an
    OSError: one line), so a link planted there does not lead the setup's or the runner's output elsewhere."""
    return os.fdopen(open_no_follow(path, os.O_WRONLY | os.O_CREAT | mode_flag, 0o644), "w", encoding="utf-8")


class Bisection:
    def __init__(self, settings: Settings, say=print):
        self.settings = settings
        self.say = say
        self.checkout_dir = os.path.join(settings.directory, "checkout")
        self.state_path = os.path.join(settings.directory, "state.json")
        self.commits = git_checkout.commits_between(settings.repo, settings.good, settings.bad)
        self.state = self._load_state()
        git_checkout.owned_checkout(settings.directory)  # a checkout we did not make: refused before any work

    # ------------------------------------------------------------ state (resume)

    def _load_state(self) -> dict:
        fresh = {"repo": os.path.abspath(self.settings.repo), "good": self.settings.good, "bad": self.settings.bad,
                 "runner_flags": self.settings.runner_flags, "setup": self.settings.setup, "verdicts": {}}
        try:  # a regular file only (a FIFO would hang the bisection), not through a link, JSON not too deep
            state = safe_reads.load_json(self.state_path, follow_links=False)
        except FileNotFoundError:
            return fresh
        except (OSError, ValueError) as exc:
            raise ValueError(f"{self.state_path} is not a bisection's state ({exc}): remove it or use another "
                             "--output-dirname") from None
        if not _valid_state(state):
            raise ValueError(f"{self.state_path} is not a bisection's state (damaged: not the shape this tool "
                             "writes): remove it or use another --output-dirname")
        if any(state.get(k) != fresh[k] for k in ("good", "bad", "runner_flags", "setup")):
            raise ValueError(f"{self.settings.directory} holds another bisection (other ends, flags or setup): "
                             "use another --output-dirname")
        return state

    def _save(self) -> None:
        os.makedirs(self.settings.directory, exist_ok=True)
        disk_writes.write_json(self.state_path, self.state, indent=1)

    # ------------------------------------------------------------ running one commit

    def run_dir(self, commit: str) -> str:
        """runs/<commit> in the bisection's directory; PathEscapes (a ValueError: one line) when a link leads out."""
        relative = os.path.join("runs", commit[:12])
        inside(self.settings.directory, relative)
        return os.path.join(self.settings.directory, relative)

    def build(self, commit: str) -> Optional[str]:
        """Check `commit` out and run --setup there; None when it built, else why not."""
        git_checkout.checkout(self.settings.repo, self.checkout_dir, commit)
        if not self.settings.setup:
            return None
        log_path = os.path.join(self.run_dir(commit), "setup.log")
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
        with _log_file(log_path, os.O_TRUNC) as log_file:
            done = subprocess.run(self.settings.setup, shell=True, cwd=self.checkout_dir, stdout=log_file,
                                  stderr=subprocess.STDOUT, env={**os.environ, "HISTORY_COMMIT": commit})
        return None if done.returncode == 0 else f"--setup exited {done.returncode} (log: {log_path})"

    def measure(self, commit: str, rounds: int) -> dict:
        """config key -> processes (each a list of per-iteration samples) of `commit`'s first `rounds` rounds."""
        flags = [flag.replace("{checkout}", self.checkout_dir) for flag in self.settings.runner_flags]
        command = [sys.executable, os.path.join(PROJECT_ROOT, "experiment_runner.py"), *flags,
                   f"--output-dirname={self.run_dir(commit)}", f"--rounds={rounds}", "--log-level=warning"]
        log.info("%s: %s", commit[:12], shlex.join(command))
        os.makedirs(self.run_dir(commit), exist_ok=True)
        with _log_file(os.path.join(self.run_dir(commit), "runner.log"), os.O_APPEND) as log_file:
            subprocess.run(command, cwd=self.checkout_dir, stdout=log_file, stderr=subprocess.STDOUT)
        results = os.path.join(self.run_dir(commit), "results.jsonl")
        found: dict = {}
        if os.path.exists(results):
            for record in records.read_results_files([results]):
                view, _ = records_view.view(record)
                if view is not None and view.samples and view.round < rounds:
                    found.setdefault(view.config_key, []).append(view.samples)
        return found

    # ------------------------------------------------------------ deciding

    def compare(self, control: dict, treatment: dict) -> tuple:
        """config key -> (compare's outcome, ratio, interval) of treatment against control."""
        import numpy as np

        from benchmarks.compare import bootstrap, outcomes

        out = {}
        for key in sorted(set(control) & set(treatment)):
            sides = [[np.asarray(p) for p in side[key]] for side in (control, treatment)]
            a, b = bootstrap.side_draws(sides, 2000, np.random.default_rng(0))
            found = bootstrap.ratio(a, b, self.settings.confidence)
            outcome, _ = outcomes.timing(found.value, found.ci, self.settings.threshold, a.n_processes, b.n_processes)
            out[key] = (outcome, found.value, found.ci)
        return out

    def decide(self, good: dict, bad: dict, candidate: dict, final: bool) -> Optional[tuple]:
        """(good or bad, evidence, ratio to good) of a candidate, or None while unsure and rounds can be added."""
        vs_good, vs_bad = self.compare(good, candidate), self.compare(bad, candidate)
        if not vs_good or set(vs_good) != set(vs_bad):
            return SKIP, "no config measured at both ends and here", None
        calls, worst = [], None
        for key in vs_good:
            (to_good, ratio_good, ci_good), (to_bad, ratio_bad, ci_bad) = vs_good[key], vs_bad[key]
            text = (f"x{ratio_good:.3f} [{ci_good[0]:.3f}, {ci_good[1]:.3f}] of good, "
                    f"x{ratio_bad:.3f} [{ci_bad[0]:.3f}, {ci_bad[1]:.3f}] of bad")
            if to_good == Word.SLOWER and to_bad == Word.FASTER:  # between the ends: the nearer one
                step = math.log(ratio_good) - math.log(ratio_bad)
                call = BAD if math.log(ratio_good) > step / 2 else GOOD
            elif to_bad == Word.FASTER and to_good != Word.SLOWER:
                call = GOOD
            elif to_good == Word.SLOWER and to_bad != Word.FASTER:
                call = BAD
            elif final:
                call = BAD if abs(math.log(ratio_bad)) < abs(math.log(ratio_good)) else GOOD
                text += " (unsure: the nearer end decided)"
            else:
                return None
            calls.append((call, text))
            worst = ratio_good if worst is None else max(worst, ratio_good)
        call = BAD if any(c == BAD for c, _ in calls) else GOOD
        return call, "; ".join(text for _, text in calls), worst

    def measure_until_sure(self, commit: str, ends: dict) -> Finding:
        rounds = self.settings.rounds
        while True:
            found = self.measure(commit, rounds)
            if not found:
                return Finding(SKIP, rounds, "no successful record (it does not run at this commit)")
            decided = self.decide(ends[GOOD], ends[BAD], found, rounds >= self.settings.max_rounds)
            if decided is not None:
                return Finding(decided[0], rounds, decided[1], decided[2])
            rounds = min(self.settings.max_rounds, rounds + self.settings.rounds)
            for end in (GOOD, BAD):  # the ends get as many processes as the candidate
                ends[end] = self.measure_at(self.state[end], rounds) or ends[end]
            self.build(commit)

    def measure_at(self, commit: str, rounds: int) -> dict:
        """Check out and build `commit`, then measure it ({} when it does not build)."""
        return {} if self.build(commit) else self.measure(commit, rounds)

    def ends(self) -> dict:
        """The ends' measurements, after checking that the bad end is slower than the good one."""
        measured = {}
        for end in (GOOD, BAD):
            commit = self.state[end]
            found = self.measure_at(commit, self.settings.rounds)
            if not found:
                raise EndError(f"the {end} commit {commit[:12]} does not build or run (see {self.run_dir(commit)})")
            measured[end] = found
        rounds = self.settings.rounds
        while True:
            compared = self.compare(measured[GOOD], measured[BAD])
            if not compared:
                raise EndError("the good and bad commits measured no config in common")
            if any(outcome == Word.SLOWER for outcome, _, _ in compared.values()):
                return measured
            if rounds >= self.settings.max_rounds:
                ratios = ", ".join(f"x{r:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" for _, r, ci in compared.values())
                raise EndError(f"the bad commit is not slower than the good one ({ratios}): nothing to bisect")
            rounds = min(self.settings.max_rounds, rounds + self.settings.rounds)
            for end in (GOOD, BAD):
                measured[end] = self.measure_at(self.state[end], rounds) or measured[end]

    def test(self, index: int, ends: dict) -> str:
        commit = self.commits[index]
        if commit in self.state["verdicts"]:
            return self.state["verdicts"][commit]["verdict"]
        problem = self.build(commit)
        finding = Finding(SKIP, 0, problem) if problem else self.measure_until_sure(commit, ends)
        self.state["verdicts"][commit] = dataclasses.asdict(finding)
        self._save()
        self.say(f"{commit[:12]} {finding.verdict:4}  {git_checkout.subject(self.settings.repo, commit)[:50]:50}  "
                 f"{finding.evidence}")
        return finding.verdict

    def run(self) -> tuple:
        """(first bad commit or None, the candidates when skips leave several)."""
        self.state["good"], self.state["bad"] = self.settings.good, self.settings.bad
        self._save()
        self.say(f"bisecting {len(self.commits) - 1} commit(s) after {self.settings.good[:12]} up to "
                 f"{self.settings.bad[:12]}; runs in {self.settings.directory}")
        ends = self.ends()
        low, high = 0, len(self.commits) - 1
        while high - low > 1:
            untested = [i for i in range(low + 1, high)
                        if self.state["verdicts"].get(self.commits[i], {}).get("verdict") != SKIP]
            if not untested:
                break
            middle = (low + high) / 2
            index = min(untested, key=lambda i: (abs(i - middle), i))
            call = self.test(index, ends)
            if call == GOOD:
                low = index
            elif call == BAD:
                high = index
        if high - low == 1:
            return self.commits[high], []
        return None, self.commits[low + 1:high + 1]


class EndError(Exception):
    """An end of the bisection that can't be used (does not run, or bad is not slower): exit status 1."""
