"""make bench-unit-tier's refs are text from a command line: a ref that git would read as an option, a path that
climbs out, or shell text is refused in one line, and nothing is written outside its scratch folder."""

import pytest

from scripts.bench import unit_tier


@pytest.mark.parametrize("ref", ["--output={target}", "..", "$(touch {target})", "../../{target}"])
def test_a_hostile_ref_is_refused_and_writes_nothing(tmp_path, ref):
    target = tmp_path / "PWNED"
    with pytest.raises(SystemExit) as refused:
        unit_tier.main([f"--ref={ref.format(target=target)}", "--rounds", "0"])
    assert "bench-unit-tier:" in str(refused.value) and "\n" not in str(refused.value)
    assert not target.exists()
