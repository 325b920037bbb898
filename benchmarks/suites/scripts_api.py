"""What a script benchmarked by `--suite-name=scripts` may import (it needs nothing of ours, but may):
MLAgility's standard parameters read from its command line, so that `--script-args="--batch_size 8"` reaches
the model it builds.

    from benchmarks.suites.scripts_api import parameters
    params = parameters(batch_size=2)          # this script's own defaults override the standard ones
    model = MyModel(); model(torch.randn(params.batch_size, 3, params.height, params.width))

Standard library only (no torch, no torch_xla): importing it costs nothing (docs/runner.md, "Scripts").
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

# MLAgility's standard parameters and their defaults.
STANDARD = {
    "batch_size": 1,
    "max_seq_length": 128,
    "max_audio_seq_length": 25600,
    "height": 224,
    "width": 224,
    "num_channels": 3,
    "num_classes": 1000,
}


def parameters(argv: Optional[Sequence[str]] = None, **defaults) -> argparse.Namespace:
    """The standard parameters (and any extra name given a default here) from `argv` (default: sys.argv[1:]),
    each as `--name N` or `--name=N` (`--batch-size` works too). Arguments it does not know are left to the
    script's own parser; a bad value is argparse's one-line error and exit 2."""
    values = dict(STANDARD, **defaults)
    parser = argparse.ArgumentParser(add_help=False)
    for name, default in values.items():
        kind = type(default) if isinstance(default, (int, float, str)) and not isinstance(default, bool) else str
        spellings = {"--" + name, "--" + name.replace("_", "-")}
        parser.add_argument(*sorted(spellings), dest=name, type=kind, default=default)
    known, _ = parser.parse_known_args(sys.argv[1:] if argv is None else list(argv))
    return known
