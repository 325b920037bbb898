"""Flags declared once (config/flags.py, config/run_options.py): the parser, RunOptions and each child's
command line all come from one declaration per flag, which says who reads it (no torch, no child)."""

import argparse
import dataclasses
import os

import pytest

from benchmarks.config import flags
from benchmarks.config.run_options import SECTIONS, RunOptions, build_parser
from benchmarks.plumbing.cli_support import Parser, positive_int
from benchmarks.suites import all_suites

NOT_FLAGS = {"parsed_flags", "child_flags", *SECTIONS}


def options(*argv) -> RunOptions:
    return build_parser(all_suites()).options(list(argv))


def test_every_option_is_a_declared_flag():
    for cls in (RunOptions, *SECTIONS.values()):
        declared = {name for name, _ in flags.field_flags(cls)}
        fields = {field.name for field in dataclasses.fields(cls)} - NOT_FLAGS
        assert fields == declared, (cls.__name__, fields - declared)
    spellings = [name for flag in build_parser(all_suites()).declared for name in (flag.name, *flag.aliases)]
    assert len(spellings) == len(set(spellings)), "a flag declared twice"


def test_a_child_gets_the_set_flags_that_it_reads_and_never_the_parents():
    core = min(os.sched_getaffinity(0))  # one this process may use (a test may run pinned to another than 0)
    parsed = options("--accelerator=cpu", "--xla=PJRT", "--quantization=int8wo", "-k", "mlp", "--jobs=2",
                     "--repeat=3", "--verify", "--verify-tolerance=0.1", "--save-ir-format=hlo", f"--cpu-affinity={core}",
                     "--op=matmul", "--torchbench-dir=/tb", "--timestamp=7")
    assert parsed.child_flags == ("--repeat=3", "--timestamp=7.0", "--verify", "--accuracy-tolerance=0.1",
                                  "--save-ir-format=hlo", f"--cpu-affinity={core}", "--torchbench-dir=/tb")
    assert parsed.accelerator == ("cpu",) and parsed.xla == ("PJRT",) and parsed.axes.quantization == ("int8wo",)
    assert parsed.verify.accuracy_tolerance == 0.1 and parsed.diagnostics.save_ir_format == "hlo"
    assert parsed.verify.verification_tolerance is None  # --verify-tolerance, the older name, is one rule's flag
    # the suites are given the whole command line: their own flags and every other, as parsed
    assert parsed.parsed_flags.op == ["matmul"] and parsed.parsed_flags.torchbench_dir == "/tb"
    assert parsed.parsed_flags.repeat == 3 and parsed.parsed_flags.jobs == 2 and parsed.parsed_flags.filter == ["mlp"]
    # what a child is given parses back into the same options (but for what only the parent reads)
    again = options(*parsed.child_flags)
    assert (again.repeat, again.verify, again.diagnostics, again.noise) == \
        (parsed.repeat, parsed.verify, parsed.diagnostics, parsed.noise)


def test_defaults_are_left_off_a_childs_command_line():
    parsed = options("--timestamp=1")
    assert parsed.child_flags == ("--timestamp=1.0",)
    assert parsed.with_(child_flags=()) == RunOptions(timestamp=1.0)  # the parser's defaults are the dataclass's


def test_a_new_axis_and_a_parent_only_option_are_one_declaration_each():
    group = flags.Group("scratch")

    @dataclasses.dataclass(frozen=True)
    class Scratch:
        precision: tuple = group.axis("a matrix axis", choices=("fp32", "bf16"))
        cores_per_job: int = group.option(1, flags.PARENT, "a parent-only option", type=positive_int)
        inductor_config: tuple = group.option((), flags.CHILD, "KEY=VALUE (repeatable)", repeatable=True)

    declared = [flag for _, flag in flags.field_flags(Scratch)]
    parser = Parser(prog="scratch")
    flags.add_flags(parser, declared, choices={})
    namespace = parser.parse_args(["--precision=fp32", "--precision=bf16", "--cores-per-job=4",
                                   "--inductor-config=a=1", "--inductor-config=b=2"])
    assert flags.from_namespace(Scratch, namespace) == Scratch(("fp32", "bf16"), 4, ("a=1", "b=2"))
    assert flags.child_args(declared, namespace) == ["--inductor-config=a=1", "--inductor-config=b=2"]
    assert flags.from_namespace(Scratch, parser.parse_args([])) == Scratch()
    assert "scratch:" in parser.format_help() and "--cores-per-job" in parser.format_help()


def test_a_flag_must_say_who_reads_it():
    with pytest.raises(ValueError, match="consumer"):
        flags.Flag("nobody", "help")


def test_bad_values_are_one_line_usage_errors(capsys):
    parser = build_parser(all_suites())
    for argv, message in ((["--suite-name=nope"], "invalid choice: 'nope'"),
                          (["--verify-tolerance=-1"], "must be a finite number >= 0"),
                          (["--subprocess-memory-limit=lots"], "not a memory size"),
                          (["--xla=XRT"], "XRT was removed")):
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args(argv)
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_suites_declare_who_reads_their_flags():
    by_name = {flag.name: flag for suite in all_suites() for flag in suite.flags}
    assert by_name["--op"].consumer == flags.PARENT and by_name["--torchbench-dir"].consumer == flags.BOTH
    assert all(isinstance(flag, flags.Flag) and flag.group for flag in by_name.values())
    default = options().parsed_flags
    assert isinstance(default, argparse.Namespace) and default.op == [] and default.script_timeout == 300.0
