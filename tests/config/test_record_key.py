"""One record key's declaration (benchmarks/config/record_key.py): a type and a writer it knows."""

import pytest

from benchmarks.config.record_key import RecordKey, feature


def test_a_key_declares_its_type_and_writer():
    key = RecordKey("memory_format", "object", feature("channels_last"), "what --channels-last converted")
    assert key.writer == "feature:channels_last" and key.types() == ("object",) and not key.door
    assert RecordKey("x", "text|object", "parent", "either").types() == ("text", "object")


@pytest.mark.parametrize("type_, writer, reason", [
    ("string", "core", "unknown type string"),
    ("text|blob", "core", "unknown type blob"),
    ("text", "someone", "writer 'someone' is not core, parent, upstream or feature:<name>"),
])
def test_an_unknown_type_or_writer_is_refused(type_, writer, reason):
    with pytest.raises(ValueError, match=reason):
        RecordKey("x", type_, writer, "meaning")
