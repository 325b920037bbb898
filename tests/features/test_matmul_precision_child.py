"""--matmul-precision, a matrix axis (experiment key `matmul_precision`): two values swept in one run reach torch
(and torch_xla on XLA configs) through the axis's hook, set before any model is built; every config records the
precision in effect; --disable-tf32 against a lower precision is one line and exit 2."""

import pytest

from helpers import XLA, call_runner, records_by_slug, run_runner


def test_disable_tf32_against_a_lower_precision_is_one_line():
    result = call_runner("--disable-tf32", "--matmul-precision=highest", "--matmul-precision=default", "--dry-run",
                         check_rc=2)
    assert result.stderr.count("\n") == 1 and "--matmul-precision=default for less" in result.stderr


def test_the_axis_multiplies_the_matrix_and_names_its_configs():
    result = call_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=None",
                         "--test=eval", "--matmul-precision=high", "--matmul-precision=highest", "--dry-run",
                         check_rc=0)
    assert '"matmul_precision": "high"' in result.stdout and '"matmul_precision": "highest"' in result.stdout
    assert "2 to run" in result.stdout


@pytest.mark.integration
def test_each_precision_reaches_torch_and_torch_xla(tmp_path):
    run_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--xla=PJRT", "--dynamo=None",
               "--test=eval", "--matmul-precision=high", "--matmul-precision=highest", "--repeat=1", "--warmup=1",
               f"--output-dirname={tmp_path}", check_rc=0)
    found = records_by_slug(tmp_path)
    for precision in ("high", "highest"):
        eager = found[("mlp", f"cpu-eager-eval-matmul-{precision}")]
        assert eager["diagnostics"]["matmul_precision"] == {"torch": precision, "cudnn_allow_tf32": True}
        if XLA:
            lazy = found[("mlp", f"cpu-openxla-lazytensor-eval-matmul-{precision}")]
            assert lazy["diagnostics"]["matmul_precision"] == {"torch": precision, "cudnn_allow_tf32": True,
                                                               "torch_xla": precision}
