#!/usr/bin/env python3
"""Qwen3-0.6B's eager decode tokens per second, ours beside a plain loop calling transformers' generate, in one run
(make bench-llm; docs/generation.md). Target: ours within 15 % of the plain loop's.

Ours: experiment_runner.py's config (huggingface, Qwen/Qwen3-0.6B, eager, CPU, 32 prompt + 16 new tokens, batch 1):
the median of its timed runs' decode_tokens_per_second (a logits processor notes each new token). The plain loop, in
a process of its own: the same configuration built with transformers' from_config, the same prompt, the same generate
call (greedy, static cache, min_new_tokens = max_new_tokens, its own compile off), no hook of ours: its decode rate is
(new tokens - 1) / (T(new tokens) - T(1 token)), the medians of its generate times for both lengths. The two sides
alternate (--rounds), so that a change of the machine's load falls on both; the load average is printed."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the plain side imports the model's facts (huggingface_llm.py), nothing of the runner

from benchmarks.results.records import RecordStatus  # noqa: E402 (the project's root first)

MODEL = "Qwen/Qwen3-0.6B"
TARGET = 0.15


def ours(out: Path, prompt: int, new: int, repeat: int) -> list:
    """Our config's decode tokens per second, one figure per timed run."""
    subprocess.run([sys.executable, str(ROOT / "experiment_runner.py"), "--suite-name=huggingface", "-k", "Qwen3",
                    "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", f"--prompt-tokens={prompt}",
                    f"--new-tokens={new}", f"--repeat={repeat}", "--warmup=1", f"--output-dirname={out}",
                    "--log-level=warning"], check=True, stdout=subprocess.DEVNULL)
    with open(out / "results.jsonl", encoding="utf-8") as handle:
        [record] = [json.loads(line) for line in handle if line.strip()]
    assert record["status"] == RecordStatus.OK, record.get("error")
    return record["metrics"]["decode_tokens_per_second"]


def plain_rate(seconds_new: list, seconds_one: list, new: int) -> float:
    """Decode tokens per second from whole generate times: the new tokens after the first over the time they add."""
    return (new - 1) / (statistics.median(seconds_new) - statistics.median(seconds_one))


def plain(prompt: int, new: int, repeat: int) -> dict:
    """The plain loop (run in a process of its own): generate times for `new` tokens and for 1, `repeat` each."""
    import torch
    import transformers

    from benchmarks.suites.huggingface_llm import ARCHITECTURES

    arch = ARCHITECTURES[MODEL]
    config = getattr(transformers, arch.config_class)(**arch.config)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    ids = torch.randint(0, config.vocab_size, (1, prompt), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(ids)

    def generate(tokens: int) -> float:
        started = time.perf_counter()
        output = model.generate(input_ids=ids, attention_mask=mask, do_sample=False, cache_implementation="static",
                                max_new_tokens=tokens, min_new_tokens=tokens, pad_token_id=config.eos_token_id,
                                disable_compile=True)
        seconds = time.perf_counter() - started
        assert output.shape[1] == prompt + tokens
        return seconds

    generate(new)  # the warm-up, as ours
    times = {"new": [], "one": []}
    for _ in range(repeat):
        times["new"].append(generate(new))
        times["one"].append(generate(1))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompt-tokens", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=5, help="timed generate calls per side and round")
    parser.add_argument("--rounds", type=int, default=2, help="ours then the plain loop, this many times")
    parser.add_argument("--plain", action="store_true", help=argparse.SUPPRESS)  # the plain side's own process
    args = parser.parse_args()
    if args.plain:
        print(json.dumps(plain(args.prompt_tokens, args.new_tokens, args.repeat)))
        return 0
    load_before = os.getloadavg()
    ours_rates, plain_times = [], {"new": [], "one": []}
    with tempfile.TemporaryDirectory(prefix="bench-llm-") as out:
        for index in range(args.rounds):
            ours_rates += ours(Path(out) / f"round{index}", args.prompt_tokens, args.new_tokens, args.repeat)
            found = subprocess.run([sys.executable, __file__, "--plain", f"--prompt-tokens={args.prompt_tokens}",
                                    f"--new-tokens={args.new_tokens}", f"--repeat={args.repeat}"], check=True,
                                   capture_output=True, text=True)
            times = json.loads(found.stdout.strip().splitlines()[-1])
            for key in plain_times:
                plain_times[key] += times[key]
    ours_rate = statistics.median(ours_rates)
    plain_decode = plain_rate(plain_times["new"], plain_times["one"], args.new_tokens)
    ratio = ours_rate / plain_decode
    print(f"{MODEL} eager on this CPU, {args.prompt_tokens} prompt + {args.new_tokens} new tokens, batch 1, "
          f"{args.rounds} round(s) of {args.repeat} timed generate calls per side:")
    print(f"  ours:       decode {ours_rate:8.2f} tokens/s (median of {len(ours_rates)} runs, per token)")
    print(f"  plain loop: decode {plain_decode:8.2f} tokens/s ((new - 1) / (T(new) - T(1)), medians of "
          f"{len(plain_times['new'])} calls each; generate {statistics.median(plain_times['new']):.3f} s)")
    print(f"  ratio ours / plain: {ratio:.3f} (target: within {TARGET:.0%}: {'met' if abs(ratio - 1) <= TARGET else 'NOT met'})")
    print(f"  load average before: {' '.join(f'{x:.2f}' for x in load_before)}; after: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
