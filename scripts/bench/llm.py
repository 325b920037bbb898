#!/usr/bin/env python3
"""Qwen3-0.6B's eager decode tokens per second, ours beside a plain loop calling transformers' generate, in
interleaved pairs with an interval on their ratio (make bench-llm; docs/generation.md). Target: ours within 5 % of the
plain loop's.

Ours: experiment_runner.py's config (huggingface, Qwen/Qwen3-0.6B, eager, CPU, 32 prompt + 16 new tokens, batch 1):
the median of its timed runs' decode_tokens_per_second (a logits processor notes each new token). The plain loop, in
a process of its own: the same configuration built with transformers' from_config, the same prompt, the same generate
call (greedy, static cache, min_new_tokens = max_new_tokens, its own compile off), no hook of ours: its decode rate is
(new tokens - 1) / (T(new tokens) - T(1 token)), the medians of its generate times for both lengths.

A pair is one process of each side, run one after the other, the order alternating (ours first, then plain first),
so that a drift of the machine's load falls on both sides alike. The figure is the median of the pairs' ratios (ours
/ plain) with a distribution-free interval: the order statistics of the pair ratios that hold the median with the
stated probability (binomial, exact). The load average is printed before, after and with each pair.

--ours-arg and --plain-env change one side for a what-if (e.g. --ours-arg=--allocator=system, --ours-arg=--launch=spawn,
--plain-env=MALLOC_MMAP_MAX_=0): how each difference between the two sides was measured in isolation."""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

from benchmarks.results.records import RecordStatus

MODEL = "Qwen/Qwen3-0.6B"
TARGET = 0.05
COVERAGE = 0.90  # the interval's least probability of holding the median pair ratio


def ours(out: Path, prompt: int, new: int, repeat: int, extra: list) -> list:
    """Our config's decode tokens per second, one figure per timed run."""
    subprocess.run([sys.executable, str(ROOT / "experiment_runner.py"), "--suite-name=huggingface", "-k", "Qwen3",
                    "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", f"--prompt-tokens={prompt}",
                    f"--new-tokens={new}", f"--repeat={repeat}", "--warmup=1", f"--output-dirname={out}",
                    "--log-level=error", *extra], check=True, stdout=subprocess.DEVNULL)
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


def run_plain(args, env: dict) -> float:
    found = subprocess.run([sys.executable, "-m", __spec__.name, "--plain", f"--prompt-tokens={args.prompt_tokens}",
                            f"--new-tokens={args.new_tokens}", f"--repeat={args.repeat}"], check=True,
                           capture_output=True, text=True, env={**os.environ, **env}, cwd=ROOT)
    times = json.loads(found.stdout.strip().splitlines()[-1])
    return plain_rate(times["new"], times["one"], args.new_tokens)


def median_interval(values: list, coverage: float = COVERAGE) -> tuple:
    """(low, high, its coverage): the order statistics x(k) <= x(n+1-k) that hold the median of `values`' population
    with probability 1 - 2 P(Binomial(n, 1/2) < k), the largest k whose probability is still >= `coverage` (k = 1,
    the extremes, where no k reaches it: the coverage printed says so)."""
    ordered, n = sorted(values), len(values)

    def held(k: int) -> float:
        return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n

    k = 1
    while k + 1 <= (n + 1) // 2 and held(k + 1) >= coverage:
        k += 1
    return ordered[k - 1], ordered[n - k], held(k)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def parse_env(text: str) -> tuple:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"not NAME=VALUE: {text!r}")
    return name, value


def main() -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}",
                                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompt-tokens", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3, help="timed generate calls per side and pair")
    parser.add_argument("--pairs", type=int, default=8, help="pairs of processes (ours, plain), the order alternating")
    parser.add_argument("--ours-arg", action="append", default=[], metavar="FLAG",
                        help="one more experiment_runner flag for our side (a what-if), repeatable")
    parser.add_argument("--plain-env", action="append", default=[], type=parse_env, metavar="NAME=VALUE",
                        help="one more environment variable for the plain side (a what-if), repeatable")
    parser.add_argument("--threads", type=int, default=None,
                        help="OMP_NUM_THREADS for both sides (default: torch's, one per core); 1 keeps a busy "
                             "machine's scheduling from stalling a thread team at every operator")
    parser.add_argument("--plain", action="store_true", help=argparse.SUPPRESS)  # the plain side's own process
    args = parser.parse_args()
    if args.plain:
        print(json.dumps(plain(args.prompt_tokens, args.new_tokens, args.repeat)))
        return 0
    if args.pairs < 1 or args.repeat < 1 or args.new_tokens < 2:
        parser.error("--pairs and --repeat must be at least 1, --new-tokens at least 2")
    print(f"{MODEL} eager on this CPU, {args.prompt_tokens} prompt + {args.new_tokens} new tokens, batch 1, "
          f"{args.pairs} pair(s) of processes, {args.repeat} timed generate calls per side and pair"
          + (f"; ours with {' '.join(args.ours_arg)}" if args.ours_arg else "")
          + (f"; plain with {' '.join(f'{k}={v}' for k, v in args.plain_env)}" if args.plain_env else "")
          + (f"; {args.threads} thread(s) each" if args.threads is not None else ""), flush=True)
    if args.threads is not None:  # both sides inherit it: ours' fork server reads it when it loads torch
        os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(args.threads)
    load_before = load()
    ratios, ours_rates, plain_rates = [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-llm-") as out:
        for index in range(args.pairs):
            found = {}
            for side in (("ours", "plain") if index % 2 == 0 else ("plain", "ours")):
                if side == "ours":
                    found[side] = statistics.median(ours(Path(out) / f"pair{index}", args.prompt_tokens,
                                                         args.new_tokens, args.repeat, args.ours_arg))
                else:
                    found[side] = run_plain(args, dict(args.plain_env))
            ratios.append(found["ours"] / found["plain"])
            ours_rates.append(found["ours"])
            plain_rates.append(found["plain"])
            print(f"  pair {index + 1}: ours {found['ours']:7.3f}, plain {found['plain']:7.3f} tokens/s, ratio "
                  f"{ratios[-1]:.3f} (load {load()})", flush=True)
    low, high, held = median_interval(ratios)
    ratio = statistics.median(ratios)
    print(f"  ours:       decode {statistics.median(ours_rates):8.3f} tokens/s (median over pairs of each process's "
          "median timed run, per token)")
    print(f"  plain loop: decode {statistics.median(plain_rates):8.3f} tokens/s ((new - 1) / (T(new) - T(1)), each "
          "process's medians)")
    met = low >= 1 - TARGET and high <= 1 + TARGET
    print(f"  ratio ours / plain: {ratio:.3f}, interval [{low:.3f}, {high:.3f}] ({held:.1%}, order statistics of "
          f"{len(ratios)} pair ratios); target within {TARGET:.0%}: "
          f"{'met' if met else 'not shown' if abs(ratio - 1) <= TARGET else 'NOT met'}")
    print(f"  load average before: {load_before}; after: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
