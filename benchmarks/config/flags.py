"""Flags declared once: each of experiment_runner.py's flags is one `Flag` (spelling, type, default, help,
group, and who reads it), from which the argparse parser, the typed options and each child's command
line are all built (docs/architecture.md, "Options").

A flag of `RunOptions` (or of one of its sections) is declared as the dataclass field itself, with
`Group(...).option(...)` or `.axis(...)`; a suite declares its flags as `Flag`s (`Suite.flags`). The report tools
(aggregate.py, compare.py, history.py, result_analyzer.py) declare theirs as a table of `Flag`s too
(`Group(...).arg(...)`), parsed by `tool_parser`: one form, one --help/--help-all, one mistyped-flag line.

Who reads a flag decides whether a child is given it: PARENT flags shape the sweep (the matrix, the
executor, resume) and stay with the parent; CHILD and BOTH flags are passed on, when set, to every child.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Callable, Iterable, Optional

from benchmarks.plumbing.cli_support import Parser, add_hidden_alias

PARENT, CHILD, BOTH = "parent", "child", "both"
CONSUMERS = (PARENT, CHILD, BOTH)

# `choices` of a flag whose values are the names of the suites (known to the suites layer, given to
# `build_parser`, so that config/ imports no tool).
SUITE_NAMES = "<suite names>"


@dataclasses.dataclass(frozen=True)
class Flag:
    consumer: str  # PARENT, CHILD or BOTH
    help: str
    default: Any = None  # a bool default makes a switch (--flag, no value)
    name: str = ""  # "--accuracy-tolerance"; a field's flag may leave it empty: "--" + the field's name
    short: str = ""  # "-k"
    aliases: tuple = ()  # old spellings that parse too, left out of --help (docs/command-line.md); a child gets `name`
    type: Optional[Callable[[str], Any]] = None
    choices: Any = None
    metavar: Optional[str] = None
    repeatable: bool = False  # action=append: a tuple of values in the options, one --flag=value each for a child
    bare: Optional[str] = None  # the value of the flag given alone (a switch axis's `--flag`: on); None: it needs one
    hidden: bool = False
    group: str = ""  # the --help section
    nargs: Optional[str] = None  # a positional argument's ("+", "*", "?"): its name has no leading dash
    extend: bool = False  # each --flag=a,b adds its `type`'s list to the values (aggregate's --backends)
    required: bool = False

    def __post_init__(self):
        if self.consumer not in CONSUMERS:
            raise ValueError(f"{self.name or 'a flag'}: consumer must be one of {CONSUMERS}, not {self.consumer!r}")

    @property
    def dest(self) -> str:
        return self.name.lstrip("-").replace("-", "_")

    @property
    def positional(self) -> bool:
        return not self.name.startswith("-")

    @property
    def switch(self) -> bool:
        return isinstance(self.default, bool)


@dataclasses.dataclass(frozen=True)
class Group:
    """A --help section; its methods declare the dataclass fields (the options) that are its flags."""

    title: str

    def option(self, default, consumer: str, help: str, **flag) -> Any:
        """A field of an options dataclass and its flag (named after the field unless `name=` says)."""
        return dataclasses.field(default=default, metadata={"flag": Flag(consumer, help, default, group=self.title,
                                                                         **flag)})

    def switch(self, consumer: str, help: str, **flag) -> Any:
        """A bool field and its --flag (no value; off unless given)."""
        return self.option(False, consumer, help, **flag)

    def axis(self, help: str, **flag) -> Any:
        """A matrix axis: repeatable, read by the parent only (a child gets its value in its experiment
        config); empty (the default) means the runner's default values."""
        return self.option((), PARENT, help, repeatable=True, **flag)

    def flag(self, name: str, consumer: str, help: str, default=None, **flag) -> Flag:
        """A flag that is no dataclass field (a suite's: it reads it from RunOptions.parsed_flags, the whole parsed command line)."""
        return Flag(consumer, help, default, name=name, group=self.title, **flag)

    def arg(self, name: str, help: str, default=None, **flag) -> Flag:
        """A report tool's flag or positional argument (`name` without dashes): read by the tool alone."""
        return Flag(PARENT, help, default, name=name, group=self.title, **flag)


def field_flags(cls) -> list:
    """(field name, Flag) of each declared field of dataclass `cls`, the flag's name filled in."""
    found = []
    for field in dataclasses.fields(cls):
        flag = field.metadata.get("flag")
        if flag is not None:
            found.append((field.name, flag if flag.name else dataclasses.replace(
                flag, name="--" + field.name.replace("_", "-"))))
    return found


def from_namespace(cls, namespace: argparse.Namespace, **given):
    """An instance of `cls` from its fields' flags in `namespace` (a flag this parser lacks keeps the
    field's default; a repeatable flag's list becomes a tuple); `given`: the other fields."""
    values = dict(given)
    for name, flag in field_flags(cls):
        if hasattr(namespace, flag.dest):
            value = getattr(namespace, flag.dest)
            values[name] = tuple(value or ()) if flag.repeatable else value
    return cls(**values)


def help_text(flag: Flag) -> str:
    """A flag's --help line: its help, and its default when the help does not say it and there is one to say."""
    if flag.switch or flag.default in (None, (), "") or "default" in flag.help:
        return flag.help
    default = ", ".join(map(str, flag.default)) if isinstance(flag.default, tuple) else flag.default
    return f"{flag.help} (default: {default})" if flag.help else f"(default: {default})"


def add_flags(parser: argparse.ArgumentParser, flags: Iterable[Flag], choices: dict) -> None:
    """Each flag into its --help section (made in order of first use); `choices` resolves SUITE_NAMES. Which
    flags --help shows, and with which shorter help, is the parser's `brief` (cli_support.Parser)."""
    sections = {}
    for flag in flags:
        if flag.group not in sections:
            sections[flag.group] = parser.add_argument_group(flag.group) if flag.group else parser
        names = ([flag.short] if flag.short else []) + [flag.name]  # "-o FILE, --output FILE", as argparse lists them
        spec = {"dest": flag.dest, "help": argparse.SUPPRESS if flag.hidden else help_text(flag)}
        if flag.positional:  # argparse names a positional's dest by its name
            spec = {"help": spec["help"], "nargs": flag.nargs, "metavar": flag.metavar}
            if flag.default is not None:
                spec["default"] = flag.default
            sections[flag.group].add_argument(flag.name, **spec)
            continue
        if flag.required:
            spec["required"] = True
        if flag.switch:
            spec.update(action="store_true", default=flag.default)
        else:
            spec.update(default=list(flag.default or ()) if flag.repeatable else flag.default,
                        action="extend" if flag.extend else "append" if flag.repeatable else "store")
            if flag.bare is not None:
                spec.update(nargs="?", const=flag.bare)  # argparse passes a text const through `type` too
            if flag.type is not None:
                spec["type"] = flag.type
            if flag.metavar is not None:
                spec["metavar"] = flag.metavar
            if flag.choices is not None:
                spec["choices"] = choices.get(flag.choices, flag.choices) if isinstance(flag.choices, str) \
                    else flag.choices
        sections[flag.group].add_argument(*names, **spec)
        for alias in flag.aliases:
            add_hidden_alias(sections[flag.group], alias, **{k: v for k, v in spec.items() if k not in ("help", "default", "required")})


def tool_parser(flags: Iterable[Flag], brief, parser=None, choices=None, **described):
    """A tool's parser (cli_support.Parser: --help shows `brief`, flag names or {name: a shorter help}, --help-all
    every flag, a mistyped flag is one line with its close matches) of its table `flags`, the one way all five
    tools make theirs; `parser`: a subcommand's, made by its tool's subparsers, or a Parser subclass's, else a new
    one of `described` (prog, usage, description, examples, epilog, more); `choices` resolves SUITE_NAMES."""
    if parser is None:
        parser = Parser(brief=brief, **described)
    elif brief is not None:
        parser.set_brief(brief)
    add_flags(parser, flags, choices=choices or {})
    return parser


def child_args(flags: Iterable[Flag], namespace: argparse.Namespace) -> list:
    """The `--flag=value` strings that give a child the same options: every CHILD or BOTH flag that is set
    (defaults and unset flags are left out); PARENT flags never."""
    args = []
    for flag in flags:
        if flag.consumer == PARENT or not hasattr(namespace, flag.dest):
            continue
        value = getattr(namespace, flag.dest)
        if value is None or value == (list(flag.default or ()) if flag.repeatable else flag.default):
            continue
        if flag.switch:
            args.append(flag.name)
        elif flag.repeatable:
            args.extend(f"{flag.name}={item}" for item in value)
        else:
            args.append(f"{flag.name}={value}")
    return args
