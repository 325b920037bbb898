"""history's selection flags (-k, -x, tiers, --accelerator, --test, --backend, --precision), with
aggregate.py's meanings, applied to the configs' labels.

Kept in this one module so that it can give way to the shared selection flags (docs/architecture.md):
`add_arguments` and `select` are the two functions to swap.
"""

from __future__ import annotations

import argparse

TESTS = {"eval": "eval", "inference": "eval", "train": "train", "training": "train"}


def test_name(text: str) -> str:
    try:
        return TESTS[text.lower()]
    except KeyError:
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from eval, train)") from None


def tier(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a tier is a number, not {text!r}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sel = parser.add_argument_group("which configs (as aggregate.py; every flag repeatable)")
    sel.add_argument("--filter", "-k", action="append", default=[], metavar="REGEX",
                     help="keep models whose name matches (case-insensitive; adds to tiers)")
    sel.add_argument("--exclude", "-x", action="append", default=[], metavar="REGEX",
                     help="drop models whose name matches (case-insensitive)")
    sel.add_argument("--filter-by-tier", action="append", type=tier, default=[], metavar="N",
                     help="keep the models of tier N of their suite")
    sel.add_argument("--exclude-by-tier", action="append", type=tier, default=[], metavar="N",
                     help="drop the models of tier N of their suite")
    sel.add_argument("--accelerator", metavar="NAME",
                     help="an accelerator kind (cpu, cuda, tpu) or a case-insensitive regex of accelerator_model")
    sel.add_argument("--test", action="append", type=test_name, default=[], metavar="{eval,train}",
                     help="eval (inference) or train (training)")
    sel.add_argument("--backend", action="append", default=[], metavar="NAME",
                     help="eager, inductor, openxla+dynamo, openxla+lazytensor, ... (aggregate.py's names)")
    sel.add_argument("--precision", action="append", default=[], metavar="NAME",
                     help="the records' experiment precision (fp32, bf16, ...; records without one have none)")


def select(configs: list, options) -> list:
    """The (id, key, labels) configs the flags keep. Bad regexes and unknown tiers are UsageErrors."""
    from benchmarks.aggregate.reports import accelerator_regex, compile_regex, tier_members

    keep = [compile_regex(p, "--filter") for p in options.filter]
    drop = [compile_regex(p, "--exclude") for p in options.exclude]
    suites = sorted({labels["suite"] for _, _, labels in configs})
    keep_tiers = tier_members(suites, options.filter_by_tier) if options.filter_by_tier else set()
    drop_tiers = tier_members(suites, options.exclude_by_tier) if options.exclude_by_tier else set()
    accelerator = accelerator_regex(options.accelerator) if options.accelerator else None

    def wanted(labels: dict) -> bool:
        member = (labels["suite"], labels["model"])
        if (keep or keep_tiers or options.filter_by_tier) and not (
                any(p.search(labels["model"]) for p in keep) or member in keep_tiers):
            return False
        if any(p.search(labels["model"]) for p in drop) or member in drop_tiers:
            return False
        if accelerator and not (labels["accelerator"] == options.accelerator.lower()
                                or accelerator.search(labels["accelerator_model"])):
            return False
        if options.test and labels["test"] not in options.test:
            return False
        if options.backend and labels["backend"] not in options.backend:
            return False
        return not (options.precision and labels["precision"] not in options.precision)

    return [config for config in configs if wanted(config[2])]
