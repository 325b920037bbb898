"""`history bisect`'s flags and its run (the search itself is bisect.py)."""

from __future__ import annotations

import os

from benchmarks.config.flags import Group, tool_parser
from benchmarks.plumbing import safe_paths
from benchmarks.plumbing.cli_support import LOG_LEVELS, BadNews, UsageError, epilog, fraction, positive_int, shown

# The runner flags bisect sets itself.
OWN_RUNNER_FLAGS = ("--output-dirname", "--rounds", "--output-basename", "--no-resume")


def flags() -> list:
    """bisect's flags (config/flags.py's one form); the runner flags after `--` are split off before parsing."""
    top = Group("")
    return [top.arg("--repo", required=True, metavar="DIR", help="the git repository of the code under test"),
            top.arg("--good", required=True, metavar="REV", help="a commit known to be fast"),
            top.arg("--bad", required=True, metavar="REV", help="a later commit known to be slow"),
            top.arg("--setup", metavar="CMD", help="shell command run in the checkout before each measurement "
                                                   "(build, install); a failure skips the commit"),
            top.arg("--rounds", type=positive_int, default=3, metavar="R",
                    help="processes per commit to start with, and added while unsure (default 3)"),
            top.arg("--max-rounds", type=positive_int, default=9, metavar="R",
                    help="most processes per commit before the nearer end decides (default 9)"),
            top.arg("--threshold", type=fraction, default=0.02,
                    help="smallest change that counts, as 0.02 or 2%% (compare.py's; default 2%%)"),
            top.arg("--output-dirname", default="./output/", metavar="DIR",
                    help="the bisection's checkout, runs and state go to DIR/bisect/ (default: ./output/)"),
            top.arg("--log-level", default="warning", choices=LOG_LEVELS, help="messages on stderr")]


def add_parser(sub) -> None:
    p = sub.add_parser(
        "bisect", help="the first commit of a git repository at which a sweep subset got slower",
        usage="history.py bisect --repo DIR --good REV --bad REV [--setup CMD] [options] -- RUNNER-FLAGS",
        description="Check commits of --repo out in a clone of their own (the repository itself is only "
                    "read), build each with --setup, run experiment_runner.py RUNNER-FLAGS --rounds R there, and "
                    "decide good or bad with compare.py's statistics against both ends, adding rounds while "
                    "unsure. Commits that fail to build or run are skipped. Everything stays under "
                    "OUTPUT_DIRNAME/bisect/; a re-run resumes. In RUNNER-FLAGS, {checkout} names the checkout "
                    "(the runner also runs there, so relative paths work).",
        epilog=epilog(ok="the first bad commit was named, with its evidence",
                      bad_news="the bad end is not slower than the good one, or skipped commits leave several "
                               "candidates for the first bad commit (named on stderr)",
                      examples=["history.py bisect --repo ~/models --good v1.2 --bad main --setup 'pip install -e .' "
                                "-- --suite-name=files --search-dir=. --dynamo=inductor --test=eval"]))
    tool_parser(flags(), None, parser=p)
    p.set_defaults(runner_flags=[])


def split_runner_flags(argv: list) -> tuple:
    """(history's own arguments, the runner flags after the first `--`)."""
    if "--" not in argv:
        return argv, []
    at = argv.index("--")
    return argv[:at], argv[at + 1:]


def _commit(repo: str, flag: str, rev: str) -> str:
    """The commit `rev` names in `repo`; a UsageError naming the flag and the revision when it names none."""
    from benchmarks.history import git_checkout

    try:
        return git_checkout.resolve(repo, rev)
    except git_checkout.GitError:
        raise UsageError(f"--repo {repo}: {flag} {rev} is not a commit of this git repository") from None


def run(options) -> int:
    from benchmarks.history import bisect, git_checkout

    if not options.runner_flags:
        raise UsageError("bisect: give the runner's flags after `--` (e.g. -- --suite-name=files --search-dir=.)")
    own = [flag.split("=")[0] for flag in options.runner_flags if flag.split("=")[0] in OWN_RUNNER_FLAGS]
    if own:
        raise UsageError(f"bisect sets {', '.join(own)} itself: leave it out of the runner flags")
    if options.max_rounds < options.rounds:
        raise UsageError(f"--max-rounds {options.max_rounds} is below --rounds {options.rounds}")
    if not os.path.isdir(options.repo):
        raise UsageError(f"--repo {options.repo}: no such directory")
    good, bad = (_commit(options.repo, flag, rev) for flag, rev in (("--good", options.good), ("--bad", options.bad)))
    settings = bisect.Settings(repo=options.repo, good=good, bad=bad, setup=options.setup,
                               runner_flags=options.runner_flags,
                               directory=os.path.abspath(os.path.join(options.output_dirname, "bisect")),
                               rounds=options.rounds, max_rounds=options.max_rounds, threshold=options.threshold)
    try:
        safe_paths.inside(options.output_dirname, "bisect")  # PathEscapes: OUTPUT/bisect is a link leading out
        search = bisect.Bisection(settings)
        first_bad, candidates = search.run()
    except (git_checkout.GitError, ValueError, safe_paths.LinkRefused) as exc:  # a damaged state, a planted link
        raise UsageError(str(exc)) from None
    except bisect.EndError as exc:
        raise BadNews(str(exc)) from None
    if first_bad is None:
        raise BadNews(f"skipped commits leave {len(candidates)} candidates for the first bad commit: "
                      + " ".join(c[:12] for c in candidates))
    evidence = search.state["verdicts"].get(first_bad, {}).get("evidence", "the bad end itself")
    print(f"first bad commit: {first_bad} {git_checkout.subject(options.repo, first_bad)}")
    print(f"evidence: {shown(evidence)}")
    return 0
