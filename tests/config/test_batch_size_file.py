"""Batch-size files in the format of PyTorch's dynamo harness (config/batch_size_file.py): `name,batch` rows as its
--find-batch-sizes writes and its --batch-size-file reads them (blank lines skipped, the last row of a name wins, -1:
none ran), a bad row as one line naming the file and line, and a rewrite that keeps the rows of other models."""

import pytest

from benchmarks.config import batch_size_file
from benchmarks.config.batch_size_file import BatchSizeFileError


def test_the_harness_format_reads_as_the_harness_reads_it():
    # the harness's own output starts with an empty line (output_csv with no headers), then appends a row per model
    text = "\nresnet18,256\nBertForMaskedLM,32\n\nhf_T5,-1\nresnet18, 128 \n"
    assert batch_size_file.parse(text) == {"resnet18": 128, "BertForMaskedLM": 32, "hf_T5": -1}
    assert batch_size_file.parse("") == {}
    assert batch_size_file.parse("a,b,c,4\n") == {"a,b,c": 4}  # the last comma separates the batch


@pytest.mark.parametrize("line", ["resnet18", "resnet18,", ",8", "resnet18,eight", "resnet18,0", "resnet18,-2",
                                  "resnet18 256"])
def test_a_row_that_is_not_name_comma_batch_is_one_line_naming_file_and_line(line):
    with pytest.raises(BatchSizeFileError) as caught:
        batch_size_file.parse(f"mlp,4\n{line}\n", "sizes.csv")
    message = str(caught.value)
    assert message.startswith("sizes.csv:2: expected a `name,batch` row") and "\n" not in message


def test_reading_a_missing_or_binary_file_is_one_line(tmp_path):
    with pytest.raises(BatchSizeFileError, match=r"no-such.csv: cannot read it as a batch-size file \(FileNotFound"):
        batch_size_file.read(str(tmp_path / "no-such.csv"))
    (tmp_path / "binary.csv").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(BatchSizeFileError, match="cannot read it as a batch-size file"):
        batch_size_file.read(str(tmp_path / "binary.csv"))


def test_a_rewrite_keeps_other_models_rows_and_replaces_its_own(tmp_path):
    path = tmp_path / "batch_sizes.csv"
    batch_size_file.write(str(path), {"mlp": 64, "cnn": -1}, earlier={"resnet18": 256, "mlp": 8})
    assert path.read_text() == "resnet18,256\nmlp,64\ncnn,-1\n"
    assert batch_size_file.read(str(path)) == {"resnet18": 256, "mlp": 64, "cnn": -1}
    with pytest.raises(BatchSizeFileError, match="cannot be a row"):
        batch_size_file.format_rows({"a,b": 4})
