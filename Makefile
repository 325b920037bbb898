# `make bench` runs a real default sweep; `make test` runs the tests. Both build .venv/ first.
PYTHON_BOOT ?= python3
# `make env TORCH=...` builds the venv on another torch (README.md, "Your own torch"): a release (TORCH=2.14.1), a wheel
# file, or the Python of an environment whose torch to use; TORCHVISION=none leaves torchvision out. That venv is
# .venv-torch unless VENV names another; every target takes the same VENV (make bench VENV=.venv-torch).
TORCH ?=
TORCHVISION ?=
VENV := $(if $(TORCH),.venv-torch,.venv)
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
OUT ?= output/bench

.PHONY: all env native-libs browser bench bench-torchvision test test-fast test-slow env-torch-latest test-torch-latest test-gpu gpu-check gpu-slice gpu-harness gpu-wheels test-golden bench-overhead bench-analyzer bench-parallel bench-scale bench-compare bench-history bench-site bench-dashboard bench-allocator bench-profiles bench-llm bench-roofline bench-unit-tier bench-timing soak parity clean

all: env

env: $(STAMP) native-libs

# Debian's allocators for --allocator=jemalloc/tcmalloc (and --cpu-profile=dashboard) and numactl, installed with
# apt-get when run as root; where they can't be, those configs are dropped with the package to install, and
# nothing fails here.
NATIVE_LIBS := libjemalloc.so.2:libjemalloc2 libtcmalloc_minimal.so.4:libtcmalloc-minimal4 libnuma.so.1:numactl
native-libs:
	@missing=""; for pair in $(NATIVE_LIBS); do lib=$${pair%%:*}; pkg=$${pair#*:}; \
	  ldconfig -p 2>/dev/null | grep -q "$$lib" || missing="$$missing $$pkg"; done; \
	  command -v numactl >/dev/null 2>&1 || case "$$missing" in *numactl*) ;; *) missing="$$missing numactl";; esac; \
	  [ -z "$$missing" ] || { command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) >/dev/null 2>&1; } || \
	  echo "make env: could not install$$missing (needs root and apt-get); configs that need them are dropped with the reason"

# Re-installs only when the pins or the compiled reader (result_analyzer.py's C scanner) change, or TORCH does.
TORCH_CHOICE := $(if $(TORCH),$(VENV)/.torch-choice)
$(STAMP): requirements.txt pyproject.toml setup.py benchmarks/analyzer/_jsonl_scan.c $(TORCH_CHOICE)
ifeq ($(TORCH),)
	test -x $(PY) || $(PYTHON_BOOT) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
else
	$(PYTHON_BOOT) -m scripts.upkeep.make_venv --venv $(VENV) --torch '$(TORCH)' --torchvision '$(TORCHVISION)' \
	  --python $(PYTHON_BOOT)
	@echo '$(TORCH) $(TORCHVISION)' > $(TORCH_CHOICE)
endif
	touch $(STAMP)

# Rewritten only when TORCH or TORCHVISION changes, so that the venv is rebuilt then and only then.
$(VENV)/.torch-choice: FORCE
	@mkdir -p $(VENV); echo '$(TORCH) $(TORCHVISION)' | cmp -s - $@ || echo '$(TORCH) $(TORCHVISION)' > $@
.PHONY: FORCE
FORCE:

# A real sweep on this machine: the GPU's where torch sees a CUDA device (eager, and Inductor without and with CUDA
# graphs), else the CPU's (eager, Inductor, PyTorch/XLA lazy tensors and PyTorch/XLA + openxla); inference and training,
# each config checked against eager (--verify: the page's dashboard shows real pass rates), then the CSV and the speedup
# reports, each under a heading. scripts/bench/sweep.py chooses, and its first line says which and why;
# BENCH_ACCELERATOR=cpu or cuda chooses instead, BENCH_SWEEP replaces the sweep's flags (give both). Each is worked out
# once, when the recipe runs. Resumable: run it again to finish an interrupted one. The progress bar shows only on a
# terminal (plain lines in logs and CI).
BENCH_ACCELERATOR ?= $(eval BENCH_ACCELERATOR := $(shell $(PY) -m scripts.bench.sweep --accelerator))$(BENCH_ACCELERATOR)
BENCH_SWEEP ?= $(eval BENCH_SWEEP := $(shell $(PY) -m scripts.bench.sweep --flags $(BENCH_ACCELERATOR)))$(BENCH_SWEEP)
# What the first line says of them: given (on the command line or in the environment), or worked out here.
BENCH_GIVEN = $(if $(filter file,$(origin BENCH_ACCELERATOR)),,--chosen) $(if $(filter file,$(origin BENCH_SWEEP)),,--own-sweep)
bench: env
	@$(PY) -m scripts.bench.sweep --describe $(BENCH_ACCELERATOR) $(BENCH_GIVEN)
	$(PY) experiment_runner.py $(BENCH_SWEEP) --verify --output-dirname=$(OUT) || { status=$$?; \
	  [ $$status -eq 1 ] && echo "make bench: some configs failed; their records say why, and the reports follow"; }
	$(PY) result_analyzer.py --output-dirname=$(OUT) --log-level=warning
	$(PY) aggregate.py $(OUT)/results.jsonl --accelerator=$(BENCH_ACCELERATOR) --test=inference --report=latest_grouped --format=table \
	  --log-level=warning > $(OUT)/report-inference.txt
	$(PY) aggregate.py $(OUT)/results.jsonl --accelerator=$(BENCH_ACCELERATOR) --test=training --report=latest_grouped --format=table \
	  --log-level=warning > $(OUT)/report-training.txt
	$(PY) aggregate.py $(OUT)/results.jsonl --accelerator=$(BENCH_ACCELERATOR) --test=inference --report=latest --format=png \
	  --output=$(OUT)/report-inference.png --log-level=warning
	$(PY) aggregate.py $(OUT)/results.jsonl --accelerator=$(BENCH_ACCELERATOR) --test=inference --format=html \
	  --output=$(OUT)/report-inference.html --log-level=warning
	@for test in inference training; do echo; echo "== $$test: speedup over eager per model, newest run =="; echo; \
	  cat $(OUT)/report-$$test.txt; done
	@echo
	@echo "results (JSONL):  $(OUT)/results.jsonl"
	@echo "logs:             $(OUT)/logs/"
	@echo "CSV:              $(OUT)/metric_report.csv"
	@echo "reports:          $(OUT)/report-inference.txt $(OUT)/report-training.txt $(OUT)/report-inference.png"
	@echo "HTML report:      $(OUT)/report-inference.html (one file: open it in a browser, attach it, share it)"

# Real torchvision models (random weights, nothing downloaded) at 64 px, same backends: slower (compiles).
bench-torchvision: env
	$(MAKE) --no-print-directory bench OUT=output/bench-torchvision BENCH_ACCELERATOR=cpu BENCH_SWEEP="--suite-name=torchvision \
	  -k '^(resnet18|mobilenet_v3_small)$$' --model-params='{\"image_size\": 64}' --accelerator=cpu --xla=None \
	  --xla=PJRT --dynamo=None --dynamo=inductor --dynamo=openxla --test=eval --test=train --repeat=5"

# Test files run in parallel, one file per worker (module-scoped sweeps run once); TEST_WORKERS=0 runs serially.
# `make test` runs both tiers (after 20 s of the compiled reader under sanitizers, make fuzz-scanner's check);
# `make test-fast` only the unit tier (no sweep, no benchmark child, no compile; the tools called in process): pytest
# prints its count and time. The tests keep Python's bytecode even under PYTHONDONTWRITEBYTECODE (tests/conftest.py):
# the workers and the processes tests start reuse what the first one compiled.
TEST_WORKERS ?= 2
test: env browser
	$(PY) -m scripts.upkeep.fuzz_scanner --seconds 20 --seed $(FUZZ_SEED)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not slow" --durations=25 tests

test-fast: env
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not integration" tests

# The tests of minutes whose cheaper siblings run in `make test` (marker `slow`): every LLM architecture under Inductor.
test-slow: env
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m slow tests

# The newest torch too (README.md, "Your own torch"): its own venv (.venv-torch-latest/, rebuilt only when TORCH_LATEST
# or the lock changes), the unit tier, then a small real sweep (scripts/upkeep/torch_sweep.py: dummy and torchvision,
# eager, aot_eager and Inductor, eval and train, --verify) and the analyzer, aggregate and compare on its records.
# 2.14.1 is the newest that installs here (a machine-wide pip constraint caps torch); CI builds its venv beside
# `make test`'s (.ci/run: two pip installs, each mostly one core and the disk) and runs it after `make test`.
TORCH_LATEST ?= 2.14.1
LATEST_VENV := .venv-torch-latest
env-torch-latest:
	$(MAKE) --no-print-directory env TORCH=$(TORCH_LATEST) VENV=$(LATEST_VENV)

test-torch-latest: env-torch-latest
	$(LATEST_VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not integration" tests
	$(LATEST_VENV)/bin/python -m scripts.upkeep.torch_sweep --output-dirname=output/torch-latest

# The GPU tier (tests marked `gpu`: real CUDA sweeps, skipped with the reason without a CUDA device). It runs on the
# Python that has the GPU's torch: .venv's where there is one, else the machine's own (GPU_PYTHON=... to choose).
GPU_PYTHON ?= $(if $(wildcard $(PY)),$(PY),python3)
test-gpu:
	$(GPU_PYTHON) -m pytest -q -m gpu tests/end_to_end/test_gpu.py tests/child/test_precise_timing.py

# The one GPU check (scripts/gpu/check.py): the GPU tier, a small sweep of real models beside a plain CUDA loop and,
# with HARNESS_DIR, PyTorch's dynamo harness; one report in $(GPU_OUT)/gpu-check.md. Sized for a lent GPU machine
# (GPU_MINUTES, default 8; no network: what its Python lacks comes from GPU_WHEELS, made here by `make gpu-wheels`).
# Without a CUDA device it says what it skipped and why.
GPU_OUT ?= output/gpu-check
GPU_MINUTES ?= 8
GPU_WHEELS ?= output/gpu-wheels
gpu-check:
	$(GPU_PYTHON) -m scripts.gpu.check --out=$(GPU_OUT) --minutes=$(GPU_MINUTES) \
	  $(if $(wildcard $(GPU_WHEELS)),--wheels=$(GPU_WHEELS)) $(if $(HARNESS_DIR),--harness-dir=$(HARNESS_DIR)) \
	  $(GPU_CHECK_ARGS)

# A slice of PyTorch's CUDA dashboard on the machine's GPU (scripts/gpu/slice.py; docs/parity.md): the dynamo harness
# beside ours, model for model, in priority order within GPU_SLICE_MINUTES (default 7), its report written after every
# step to $(GPU_SLICE_OUT)/gpu-slice.md. A lent machine runs it as it is given the tree, $(GPU_WHEELS) (make gpu-wheels)
# and $(GPU_HARNESS) (make gpu-harness): both are used where they are. GPU_SLICE_ARGS=--plan prints its plan.
GPU_SLICE_OUT ?= output/gpu-slice
GPU_SLICE_MINUTES ?= 7
gpu-slice:
	$(GPU_PYTHON) -m scripts.gpu.slice --out=$(GPU_SLICE_OUT) --minutes=$(GPU_SLICE_MINUTES) \
	  $(if $(wildcard $(GPU_WHEELS)),--wheels=$(GPU_WHEELS)) \
	  $(if $(HARNESS_DIR),--harness-dir=$(HARNESS_DIR),$(if $(wildcard $(GPU_HARNESS)),--harness-dir=$(GPU_HARNESS))) \
	  $(GPU_SLICE_ARGS)

# The dynamo harness's part of a TorchBench checkout (TORCHBENCH=...), with gpu-check's and gpu-slice's TorchBench
# models, small enough to carry to a lent GPU machine with the tree: then HARNESS_DIR=$(GPU_HARNESS).
GPU_HARNESS ?= output/gpu-harness
gpu-harness:
	@test -n "$(TORCHBENCH)" || { echo "make gpu-harness: give TORCHBENCH=<a checkout of pytorch/benchmark>"; exit 2; }
	$(GPU_PYTHON) -m scripts.gpu.harness_subset --torchbench=$(TORCHBENCH) --out=$(GPU_HARNESS)

# Wheels of what a lent GPU machine's Python may lack (its Python: GPU_WHEELS_PYTHON), to carry there with the tree:
# the project's needs, and transformers with the companions it is pinned with (gpu-slice's Hugging Face rows; about
# 28 MB). numpy, which transformers asks for, is left out: the machine's torch image has it (torchvision, timm).
GPU_WHEELS_PYTHON ?= 3.12
gpu-wheels: env
	$(PY) -m pip download --quiet --disable-pip-version-check --only-binary=:all: --implementation cp \
	  --python-version $(GPU_WHEELS_PYTHON) --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
	  --platform manylinux2014_x86_64 -d $(GPU_WHEELS) $$(grep -E \
	  '^(orjson|nvidia-ml-py|psutil|PyYAML|tqdm|pytest|transformers|huggingface_hub|tokenizers|safetensors)==' \
	  requirements.txt)
	rm -f $(GPU_WHEELS)/numpy-*.whl
	@echo "wheels for Python $(GPU_WHEELS_PYTHON) in $(GPU_WHEELS): carry it to the GPU machine with the tree"

# Debian's chromium for the HTML report's browser test; where it can't be installed, that test says so and skips.
browser:
	@command -v chromium >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1; } || \
	  echo "make browser: chromium could not be installed; the browser test will be skipped"

# aggregate.py's golden files (tests/aggregate/golden/*.test, upstream PyTorch/XLA's style); `make test` runs them too.
test-golden: env
	$(PY) tests/aggregate/golden/run_golden.py

# The unit tier's wall time as CI runs it (a fresh tree, PYTHONDONTWRITEBYTECODE=1); VS=<commit> times another
# commit's tree beside it, alternating (scripts/bench/unit_tier.py).
bench-unit-tier: env
	$(PY) -m scripts.bench.unit_tier $(if $(VS),--vs=$(VS))

# The runner's time per iteration against a plain Timer.blocked_autorange loop, interleaved in separate processes, on
# the dummy cnn and mlp (eager, Inductor) and resnet18 at 64 px: each ratio with its interval and the load average
# (scripts/bench/timing.py; TIMING_FLAGS="--pairs=1" for a quicker look).
bench-timing: env
	$(PY) -m scripts.bench.timing $(TIMING_FLAGS)

# Wall time per eager config / `python -c "import torch"`, spawned and forked; 50 microbench configs, fork vs spawn.
bench-overhead: env
	$(PY) -m scripts.bench.overhead

# The same sweeps serially, with --jobs 2 and on Ray (2 CPUs), side by side: wall times and throughput ratios.
bench-parallel: env
	$(PY) -m scripts.bench.parallel

# Qwen3-0.6B's eager decode tokens/s on this CPU (32 prompt + 16 new tokens), ours beside a plain loop calling
# transformers' generate on the same configuration, in interleaved pairs of processes: the median pair ratio with an
# order-statistic interval and the load average (target: within 5 %; docs/generation.md).
bench-llm: env
	$(PY) -m scripts.bench.llm

# The microbench matmul and add (eager, this CPU) against the machine's ceilings, measured afresh: each one's fraction
# of its ceiling, floors matmul 0.7 and add 0.6 checked in the exit status (docs/roofline.md).
bench-roofline: env
	$(PY) -m scripts.bench.roofline

# result_analyzer.py on synthetic results files of 10k, 20k and 1M records: records/s and peak memory.
bench-analyzer: env
	$(PY) -m scripts.bench.analyzer

# Faults for SOAK_MINUTES (default 10; SOAK_SEED: the chaos loop's seed): a small sweep resumed again and again while
# children, fork servers, the parent, Ray nodes and the Ray driver are killed; prints what survived (docs/runner.md).
SOAK_MINUTES ?= 10
SOAK_SEED ?= 0
soak: env
	$(PY) -m scripts.upkeep.soak --minutes $(SOAK_MINUTES) --seed $(SOAK_SEED)

# The sweep's parent at 1k, 10k and 100k configs (generated model names, no child) and 1M records: time and peak memory
# of --dry-run, resume and longest-first ordering, and its CPU per config with canned records at 200/s. ~15 min.
bench-scale: env
	$(PY) -m scripts.bench.scale

# compare.py's statistics over seeded synthetic A/B trials: detection rate, false positives, interval coverage.
bench-compare: env
	$(PY) -m scripts.bench.compare

# history detect's change points against the two fixed rules on seeded synthetic series: steps found, false alarms.
bench-history: env
	$(PY) -m scripts.bench.history

# history site at a year of nightly runs: 300 models x 10 backend labels (1.1M records) generated straight into SQLite;
# the first build, a rebuild with nothing new, one after one more night, and each page's load time in Chromium.
bench-site: env
	$(PY) -m scripts.bench.history_site

# The dummy mlp and torchvision resnet18/mobilenet_v3_small (64 px) on this CPU, eager and Inductor across compile modes
# (and DASHBOARD_AXES, e.g. DASHBOARD_AXES="--precision=fp32 --precision=bf16"): one table. Slow: Inductor compiles.
bench-dashboard: env
	$(PY) -m scripts.bench.dashboard

# The same models in 5 processes each under --allocator=system (as inherited) and glibc (the default): per-process
# times, their spread, page faults per iteration, speedup (ALLOC_ARGS: more flags, e.g. --models/--cpu-affinity).
ALLOC_ARGS ?=
bench-allocator: env
	$(PY) -m scripts.bench.allocator $(ALLOC_ARGS)

# The dummy mlp and cnn, eager and Inductor, in a sweep without profilers and one with torch.profiler's flags: the
# unprofiled median, the profiled config's (its timed runs: no profiler), and its profiled runs' own, side by side
# (PROFILES_ARGS: more flags, e.g. --cpu-affinity=1 for a steadier figure on a busy machine).
PROFILES_ARGS ?=
bench-profiles: env
	$(PY) -m scripts.bench.profiles $(PROFILES_ARGS)

# PyTorch's dynamo benchmark harness beside ours on the same models (docs/parity.md): HARNESS_DIR is a TorchBench or
# PyTorch checkout (default: one found beside this project); scipy and tabulate go into PARITY_DEPS for the harness,
# never into .venv/. One table of accuracy, speedup, compile latency, graph breaks, memory, every difference named.
# PARITY_ARGS e.g. "--models dcgan,mobilenetv2_100 --tests eval,train --repeat 5". Slow: Inductor compiles, both tools.
PARITY_DEPS ?= output/harness-deps
PARITY_ARGS ?=
parity: env
	@$(PY) -c "import sys; sys.path.insert(0, '$(PARITY_DEPS)'); import scipy, tabulate" 2>/dev/null || \
	  $(PY) -m pip install --quiet --disable-pip-version-check --target $(PARITY_DEPS) scipy tabulate
	$(PY) -m scripts.parity.report $(if $(HARNESS_DIR),--harness-dir=$(HARNESS_DIR)) \
	  --harness-pythonpath=$(PARITY_DEPS) $(PARITY_ARGS)

# result_analyzer.py's compiled reader built with AddressSanitizer + UndefinedBehaviorSanitizer (into build/fuzz-scanner/,
# the normal build untouched) and fed mutated and random lines, against the Python reader: exit 1 on any sanitizer
# report or difference, the failing input kept in output/fuzz-scanner/. FUZZ_SECONDS=300 for longer, FUZZ_SEED=N.
# `make test` runs 20 s of it.
.PHONY: fuzz-scanner
FUZZ_SECONDS ?= 60
FUZZ_SEED ?= 12
fuzz-scanner: env
	$(PY) -m scripts.upkeep.fuzz_scanner --seconds $(FUZZ_SECONDS) --seed $(FUZZ_SEED)

# The shared record validation and every tool's reader fed mutated records (scripts/upkeep/fuzz_records.py, #52): exit
# 1 on a tool that ends any other way than refusing a record or saying there is nothing to report; the file kept under
# output/fuzz-records/. `make test` runs a few rounds (tests/security/test_sec_records.py).
# The docs made from the code (the features table in docs/architecture.md, docs/record-schema.md), written anew:
# a new feature or record key needs this, never a hand edit of a list (scripts/upkeep/generated_docs.py).
.PHONY: docs
docs: env
	$(PY) -m scripts.upkeep.generated_docs

.PHONY: fuzz-records
fuzz-records: env
	$(PY) -m scripts.upkeep.fuzz_records --seconds $(FUZZ_SECONDS) --seed $(FUZZ_SEED)

clean:
	rm -rf output .pytest_cache
