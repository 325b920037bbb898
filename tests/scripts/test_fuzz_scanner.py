"""scripts/upkeep/fuzz_scanner.py's judge (`make fuzz-scanner` runs the driver itself, under the sanitizers): what it
takes for a difference between the two readers, and that the real readers pass it on a damaged input."""

import struct

import pytest

from scripts.upkeep import fuzz_scanner as fuzz


def test_each_kind_of_difference_is_found_and_named():
    same = fuzz.Outcome(b"timestamp,model_name\n7.0,m\n", None, ["WARNING f:2: not a JSON object; line skipped"])
    assert fuzz.find_difference(same, fuzz.Outcome(same.report, None, list(same.problems))) is None
    other_cell = fuzz.Outcome(b"timestamp,model_name\n7.0,n\n", None, same.problems)
    assert fuzz.find_difference(other_cell, same).startswith("different reports (27 and 27 bytes), from byte 25")
    fewer_problems = fuzz.Outcome(same.report, None, [])
    assert fuzz.find_difference(same, fewer_problems).startswith("different problems")
    refused = fuzz.Outcome(None, "AnalyzeError: no valid record in f", [])
    assert fuzz.find_difference(refused, same).startswith("different errors")
    crashed = fuzz.Outcome(None, "crash: TypeError: Recursion limit reached", [])
    assert fuzz.find_difference(same, crashed) == "the python reader crashed (crash: TypeError: Recursion limit reached)"
    assert fuzz.find_difference(crashed, crashed).startswith("the compiled reader crashed")  # alike, still a bug


class WrongNumbers:
    """A number parser off by one unit in the last place for one token, and lenient on another."""

    @staticmethod
    def parse_numbers(tokens):
        token = tokens[0]
        if token == b"01":
            return struct.pack("<d", 1.0)
        value = float(token)
        return struct.pack("<q", struct.unpack("<q", struct.pack("<d", value))[0] + (token == b"0.1"))


def test_a_number_read_otherwise_than_python_reads_it_is_found():
    assert fuzz.number_difference(WrongNumbers, [b"1.5", b"-0.0", b"1e23"]) is None
    assert fuzz.number_difference(WrongNumbers, [b"1.5", b"0.1"]).startswith("parse_numbers(b'0.1')")
    assert fuzz.number_difference(WrongNumbers, [b"01"]) == "parse_numbers accepted b'01', not a JSON number"


@pytest.mark.requires_compiled_reader
def test_the_two_real_readers_agree_on_a_damaged_input(tmp_path):
    import random

    rng = random.Random(3)
    base = fuzz.base_lines(rng)
    path = tmp_path / "input.jsonl"
    path.write_bytes(b"\n".join([base[0], fuzz.mutate(base[1], rng, base), b"{not json", base[-1]]) + b"\n")
    outcomes = [fuzz.run_reader(path, tmp_path / reader, reader, {"output_format": "csv"})
                for reader in ("compiled", "python")]
    assert fuzz.find_difference(*outcomes) is None
    assert outcomes[0].report and any("invalid JSON" in problem for problem in outcomes[0].problems)
