"""What the command lines share: the one UsageError, one-line argparse errors, number and size types,
logging set-up, and the conventions of docs/command-line.md (exit statuses and the --help paragraph that
states them, hidden aliases of old spellings, one way to end a tool's run, one way to write a report to
-o/--output, never over one of the tool's inputs, one way to show a command line)."""

from __future__ import annotations

import argparse
import datetime
import difflib
import logging
import math
import re
import shlex
import sys
import textwrap

# Exit statuses, the same in every tool (docs/command-line.md).
EXIT_OK = 0
EXIT_BAD_NEWS = 1  # the answer is bad news: a regression, a failed config, nothing to report
EXIT_USAGE = 2  # bad usage or bad input: a bad flag, an unreadable or invalid input, an I/O error on output
EXIT_INTERNAL = 3  # the tool itself failed (a bug, a worker killed): never mistaken for bad news
EXIT_INTERRUPTED = 130


def command_line(argv) -> str:
    """`argv` as one line to paste into a POSIX shell (bash, zsh): each word quoted by shlex, so a model file named
    `$(touch PWNED).py` is a name, never a command (subprocess.list2cmdline quotes for Windows, where `$(...)` in
    double quotes still runs); shlex.split gives back `argv`. Every command line a tool prints or logs is this."""
    return shlex.join(str(word) for word in argv)


def shown(text) -> str:
    """`text` (a model name, a message read from a file) as it goes into one line a person reads: as is when every
    character prints, else Python's repr of it (a newline shown as \\n, a terminal escape as \\x1b), so a name
    can't forge a log line of its own, break a table, or move the terminal's cursor."""
    text = str(text)
    return text if text.isprintable() else repr(text)


class UsageError(Exception):
    """Bad input (flags, files): reported as one line on stderr, exit status 2."""


class BadNews(Exception):
    """The inputs were fine but the answer is bad news (nothing to report, ...): one line, exit status 1."""


def close_matches(name: str, known) -> list:
    """Up to five names of `known` close to `name` (difflib), else those that contain it: the one way every
    tool suggests what a mistyped name meant (models, backends, choices)."""
    known = [str(k) for k in known]
    close = difflib.get_close_matches(name, known, n=5, cutoff=0.6)
    if not close and name:  # e.g. a prefix: convnext_tinny -> convnext_tiny_hnf ...
        lowered = name.lower()
        close = [k for k in known if lowered in k.lower()][:5]
    return close


def unknown_name(what: str, name: str, known) -> str:
    """The one line that refuses `name` as a `what`, naming the close matches ("no close match" for none)."""
    close = close_matches(name, known)
    hint = f"close matches: {', '.join(close)}" if close else "no close match"
    return f"{what} {name!r}: unknown; {hint}"


_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<name>[^']*)' \(choose from (?P<known>.*)\)$")


class _Formatter(argparse.HelpFormatter):
    """argparse's, but a description or epilog keeps its line breaks: each line is wrapped on its own, an
    indented one under its own text (the exit-status table stays a table)."""

    def _fill_text(self, text, width, indent):
        out = []
        for line in text.splitlines():
            stripped = line.lstrip(" ")
            lead = indent + " " * (len(line) - len(stripped))
            label = len(re.match(r"\S*\s*", stripped).group())  # a table row's "2    " (an example's: 4)
            hang = lead + " " * (label if label <= 6 else 4) if stripped != line else lead
            out.append(textwrap.fill(stripped, width, initial_indent=lead, subsequent_indent=hang,
                                     break_on_hyphens=False) if stripped else "")
        return "\n".join(out)


def refuse_or_warn(problem: str, allow_empty: bool, log: logging.Logger) -> None:
    """An unknown name in the flags: exit 2 (UsageError), or under --allow-empty a warning, the name left out."""
    if not allow_empty:
        raise UsageError(f"{problem} (--allow-empty: leave it out and go on)")
    log.warning("%s: left out (--allow-empty)", problem)


def examples_text(examples) -> str:
    """The examples a --help starts with: (what it does, the command) pairs, each command under its comment."""
    lines = ["examples:"]
    for what, command in examples:
        lines += [f"  # {what}", f"  {command}"]
    return "\n".join(lines)


def _hidden_alias(action) -> bool:
    """An old spelling (add_hidden_alias): never suggested; a flag --help leaves to --help-all still is."""
    return action.help == argparse.SUPPRESS and action.default == argparse.SUPPRESS


class HelpAll(argparse.Action):
    """--help-all: the help with every flag (--help shows the parser's `brief` ones), then exit."""

    def __init__(self, option_strings, dest, help="show every flag, each with its whole help, and exit", **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.print_help(everything=True)
        parser.exit()


class Parser(argparse.ArgumentParser):
    """argparse's parser with the conventions of docs/command-line.md: one-line errors (close matches for an
    invalid choice or a mistyped flag), a --help that starts with `examples` ((what, command) pairs) under the
    description, and --help-all, the one brief/whole help of all five tools: `brief` (flag names, e.g.
    {"--format", "-k"}, or a dict of flag name -> a shorter help for --help, None for the flag's own) are the flags
    --help shows (None: every flag), --help-all shows every one with its whole help; every flag parses either way.
    `more`: what --help leaves out, in words (its last line, and --help-all's help); default: the first names."""

    def __init__(self, *args, examples=(), brief=None, more: str = "", **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        if examples:
            kwargs["description"] = "\n\n".join(filter(None, [kwargs.get("description"), examples_text(examples)]))
        super().__init__(*args, **kwargs)
        self.set_brief(brief)
        self.more = more
        self.add_argument("--help-all", action=HelpAll,
                          **({"help": f"show every flag ({more}) and exit"} if more else {}))

    def set_brief(self, brief) -> None:
        """The flags --help shows: names, or {name: a shorter help, or None}; None: every flag."""
        self.brief = None if brief is None else dict(brief) if isinstance(brief, dict) else dict.fromkeys(brief)

    def _left_out(self) -> list:
        """The flags --help leaves for --help-all (none without `brief`)."""
        if self.brief is None:
            return []
        return [action for action in self._actions if action.option_strings and action.help != argparse.SUPPRESS
                and not any(name in self.brief for name in action.option_strings)
                and "--help-all" not in action.option_strings and "-h" not in action.option_strings]

    def _shorter(self) -> list:
        """(action, the shorter help --help gives it) of the brief flags that have one."""
        found = []
        for action in self._actions if self.brief else ():
            texts = [self.brief[name] for name in action.option_strings if self.brief.get(name)]
            if texts and action.help != argparse.SUPPRESS:
                found.append((action, texts[0]))
        return found

    def format_help(self, everything: bool = False) -> str:
        left_out = [] if everything else self._left_out()
        changed = [(action, argparse.SUPPRESS) for action in left_out] + ([] if everything else self._shorter())
        saved = [(action, action.help) for action, _ in changed]
        for action, text in changed:
            action.help = text
        try:
            text = super().format_help()
        finally:
            for action, help_text in saved:
                action.help = help_text
        if left_out:
            names = self.more or ", ".join(action.option_strings[-1] for action in left_out[:8]) + (
                ", ..." if len(left_out) > 8 else "")
            text += "\n" + self._get_formatter()._fill_text(f"{len(left_out)} more flags ({names}): --help-all",
                                                             self._get_formatter()._width, "") + "\n"
        return text

    def print_help(self, file=None, everything: bool = False):
        self._print_message(self.format_help(everything), sys.stdout if file is None else file)

    def flag_names(self, namespace=None) -> list:
        """Every flag this parser takes (hidden aliases left out), and those of the subcommand `namespace` chose
        (of every subcommand when none was chosen)."""
        names = [name for action in self._actions if not _hidden_alias(action)
                 for name in action.option_strings if name.startswith("--")]
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(namespace, action.dest, None))
                for sub in [chosen] if chosen is not None else dict.fromkeys(action.choices.values()):
                    if isinstance(sub, Parser):
                        names += [name for name in sub.flag_names(namespace) if name not in names]
        return names

    def parse_known_args(self, args=None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)  # for error(): a mistyped flag said first
        return super().parse_known_args(args, namespace)

    def parse_args(self, args=None, namespace=None):
        found, extras = self.parse_known_args(args, namespace)
        if extras:
            self.error(self.unknown_words(extras, found))
        return found

    def _mistyped(self) -> list:
        """The words given that look like flags this parser does not take (up to a `--`)."""
        given = getattr(self, "_given", [])
        given = given[:given.index("--")] if "--" in given else given
        known = set(self.flag_names()) | {"-h"}
        return [word for word in given if word.startswith("--") and word.split("=", 1)[0] not in known]

    def unknown_words(self, extras: list, namespace) -> str:
        """argparse's "unrecognized arguments", with the flags a mistyped one is close to."""
        message = f"unrecognized arguments: {' '.join(extras)}"
        for word in extras:
            name = word.split("=", 1)[0]
            if name.startswith("--"):
                close = close_matches(name, self.flag_names(namespace))
                hint = f"did you mean {close[0]}?" if len(close) == 1 else \
                    f"did you mean one of {', '.join(close)}?" if close else "no flag is close (--help-all lists them)"
                return f"unknown flag {name}; {hint}"
        return message

    def error(self, message):  # one clear line and exit 2, not the whole usage block
        mistyped = self._mistyped() if message.startswith("the following arguments are required") else []
        if mistyped:  # a mistyped flag is the likelier mistake (and the missing argument may follow from it)
            message = self.unknown_words(mistyped, None)
        match = _INVALID_CHOICE.search(message)
        if match:  # argparse's "invalid choice", with the close matches first (docs/command-line.md)
            known = [k.strip(" '") for k in match.group("known").split(",")]
            close = close_matches(match.group("name"), known)
            if close:
                message += f"; close matches: {', '.join(close)}"
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def epilog(ok: str, bad_news: str, examples=()) -> str:
    """The end of every tool's --help: its exit statuses (the same words in every tool but what 0 and 1
    mean for it), then its examples."""
    lines = ["exit status:",
             f"  0    {ok}",
             f"  1    bad news: {bad_news}",
             "  2    bad usage or bad input: a bad flag or value, a missing, unreadable or invalid input file (no "
             "usable record, a FIFO), an output that would overwrite an input, an error writing the output",
             "  3    the tool failed: a bug, or a process killed from outside (--log-level=debug shows the traceback)",
             "  130  interrupted"]
    if examples:
        lines += ["", "examples:"] + [f"  {example}" for example in examples]
    return "\n".join(lines)


def add_hidden_alias(parser: argparse.ArgumentParser, flag: str, dest: str, **kwargs) -> None:
    """An old spelling of a flag that scripts may still pass: it sets `dest` like the new one, and --help
    does not show it (docs/command-line.md lists them)."""
    parser.add_argument(flag, dest=dest, help=argparse.SUPPRESS, default=argparse.SUPPRESS, **kwargs)


def choice(names, aliases=None):
    """An argument type for a choice among `names` that also takes `aliases` (old or other tools'
    spellings, case-insensitive), giving the canonical name. Pass `metavar=metavar(names)` with it."""
    aliases = dict(aliases or {})

    def parse(text: str) -> str:
        key = text.lower()
        if key in names:
            return key
        if key in aliases:
            return aliases[key]
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {', '.join(names)})")

    return parse


def metavar(names) -> str:
    return "{" + ",".join(names) + "}"


def run_main(prog: str, body, log: logging.Logger) -> int:
    """Run a tool's body and turn how it ended into the shared exit status, with one line on stderr."""
    try:
        return body()
    except UsageError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BadNews as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_BAD_NEWS
    except BrokenPipeError:  # `tool ... | head`: the reader has all it wanted
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:  # a disk full or a file gone mid-run: say which, no traceback
        where = f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else str(exc)
        print(f"{prog}: error: {where}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug: one line by default, the traceback with --log-level=debug
        log.debug("internal error", exc_info=True)
        print(f"{prog}: internal error: {type(exc).__name__}: {exc} (run with --log-level=debug for the traceback)",
              file=sys.stderr)
        return EXIT_INTERNAL


def same_file(one: str, other: str) -> bool:
    """Whether two paths name one file: the same device and inode (symlinks and hard links included), or, for a
    path not there yet, the same real path."""
    import os

    try:
        return os.path.samefile(one, other)
    except OSError:
        return os.path.realpath(one) == os.path.realpath(other)


def refuse_overwrite(output, inputs, flag: str = "-o") -> None:
    """UsageError (one line, exit 2) when the file a tool would write is one of the files it reads: a report
    never replaces its own input (the analyzer's rule, every tool's: docs/command-line.md)."""
    if not output or output == "-":
        return
    for path in inputs:
        if same_file(output, path):
            shown = "" if str(path) == str(output) else f" ({path})"
            raise UsageError(f"{flag} {output} would overwrite one of its inputs{shown}; name another file")


def write_file(path, data, flag: str = "-o") -> None:
    """The one way a tool writes a file the user named (a report, a plot, an expected-results CSV): whole or not at
    all, from a temporary file of ours in the same real folder (disk_writes.replacing). A link at that name is
    never followed nor replaced, and a FIFO or a device is never written: UsageError, one line, exit 2."""
    from benchmarks.plumbing import disk_writes, safe_paths

    try:
        disk_writes.write_bytes(str(path), data if isinstance(data, bytes) else data.encode("utf-8"))
    except safe_paths.LinkRefused:
        raise UsageError(f"{flag} {path} is a symbolic link: not followed, nothing is written through a link; "
                         "remove it or name another file") from None
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def write_output(data, path, inputs=()) -> None:
    """A report (text, or an image's bytes) to -o/--output's file, or to stdout for none or `-`; an image
    never to a terminal. A file that can't be written, or that is one of the tool's `inputs`
    (refuse_overwrite), is a UsageError."""
    refuse_overwrite(path, inputs)
    if isinstance(data, str) and not data.isascii():  # a lone surrogate read from a record: shown, never a crash
        data = data.encode("utf-8", "backslashreplace").decode("utf-8")
    if path and path != "-":
        write_file(path, data)
    elif isinstance(data, bytes):
        if sys.stdout.isatty():
            raise UsageError("not writing an image to a terminal: use --output FILE or redirect stdout")
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(data)
        sys.stdout.flush()


def timestamp(text: str) -> float:
    """A point in time: epoch seconds (1763434800), an ISO date (2026-11-18: its midnight, UTC) or datetime
    (2026-11-18T03:00, 2026-11-18 03:00:00+01:00; UTC unless it names its offset)."""
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(seconds):
            raise argparse.ArgumentTypeError(f"not a time: {text!r}")
        return seconds
    try:
        when = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a time: {text!r} (epoch seconds, or an ISO date or datetime such as "
                                         "2026-11-18 or 2026-11-18T03:00, UTC unless an offset is given)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.timestamp()


def _number(text: str, kind):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {'an integer' if kind is int else 'a number'}: {text!r}") from None


def positive_int(text: str) -> int:
    value = _number(text, int)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text}")
    return value


def non_negative_int(text: str) -> int:
    value = _number(text, int)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be zero or more, not {text}")
    return value


def positive_float(text: str) -> float:
    value = _number(text, float)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, not {text}")
    return value


def choice_list(text: str, choices) -> tuple:
    """A --fail-on style value: a comma list of `choices`, or "none" for the empty list. ValueError with the
    reason for an unknown or empty list."""
    items = tuple(item.strip() for item in text.split(",") if item.strip())
    if items == ("none",):
        return ()
    unknown = [item for item in items if item not in choices]
    if unknown or not items:
        raise ValueError(f"unknown value {', '.join(unknown) or repr(text)} (choose from {', '.join(choices)}, or none)")
    return items


def fraction(text: str) -> float:
    """0.02 or 2%: a share at least 0 and below 1."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 0 and below 1 (or 100%), not {text}")
    return value


def finite_non_negative_float(text: str) -> float:
    value = _number(text, float)
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, not {text}")
    return value


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def memory_size(text: str) -> int:
    """'8G', '512M', '1.5GiB', '1000000' -> bytes (binary multiples)."""
    match = _SIZE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a memory size: {text!r} (try 8G or 512M)")
    number, unit = float(match.group(1)), match.group(2).lower()
    return int(number * 1024 ** " kmgt".index(unit or " "))


# --log-level's levels, the same in every tool and subcommand (docs/command-line.md), for setup_logging.
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


def setup_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S",
                        force=True)
