"""experiment_runner.py's command (also `python -m benchmarks` and the experiment-runner console script).

The flags are parsed once (config/run_options.py); then either this process is the parent and runs a sweep
(runner/), or, with --model-config and --experiment-config (how the parent starts each child, or a config
run by hand), it runs that one config (child/). This is the one module that knows both sides: each is
imported only once chosen, so a sweep's parent never loads child code (docs/architecture.md, "Layout").
"""

import logging
import sys

from benchmarks.config.run_options import build_parser, check_combinations
from benchmarks.plumbing.cli_support import UsageError, run_main, setup_logging
from benchmarks.plumbing.safe_paths import PathEscapes
from benchmarks.suites import all_suites


def main(argv=None) -> int:
    parser = build_parser(all_suites())
    options = parser.options(argv)
    setup_logging(options.log_level)
    try:
        check_combinations(options)
        if options.single_config:
            from benchmarks.child import single_config

            return single_config.main(options)
        from benchmarks.runner import cli

        # The sweep ends as every tool does (docs/command-line.md); a child keeps its traceback for its log.
        return run_main(parser.prog, lambda: cli.run(options), logging.getLogger("benchmarks"))
    except (UsageError, PathEscapes) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
