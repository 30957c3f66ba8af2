# Two entry points for a fresh Debian machine: `make demo` and `make test`.
# Both install what they need: Debian packages (cross compiler, newlib, QEMU) and a virtual
# environment in .venv with tinysched and its dependencies.

PYTHON ?= python3
VENV   ?= .venv
APT_PACKAGES := gcc gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm chromium
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
BIN := $(VENV)/bin
DEMO_MODEL := out/demo/demo_residual.tflite

.PHONY: setup system-packages venv demo test lint bench clean

setup: system-packages venv

system-packages:
	@if dpkg -s $(APT_PACKAGES) >/dev/null 2>&1; then \
		echo "system packages present: $(APT_PACKAGES)"; \
	else \
		$(SUDO) apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $(APT_PACKAGES); \
	fi

$(BIN)/tinysched: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,tflm]'
	@touch $@

venv: $(BIN)/tinysched

# The demo ends on the device: firmware for nucleo-f767 (.elf/.bin/.hex and its size report), then
# `measure` runs it on the emulated stand-in (QEMU mps2-an500) and compares outputs and arena.
demo: setup
	$(BIN)/python -m tinysched.model.modelgen demo $(DEMO_MODEL)
	$(BIN)/tinysched plan $(DEMO_MODEL)
	$(BIN)/tinysched build $(DEMO_MODEL) --board nucleo-f767 -o out/demo/nucleo-f767
	$(BIN)/tinysched measure $(DEMO_MODEL) --board nucleo-f767 -o out/demo/measure

# The suite's tool tiers: `make test` installs the compilers and QEMU, so their absence is a failure.
# One pytest worker per core (pytest-xdist): most of the suite waits on compilers and QEMU.
test: setup
	TINYSCHED_REQUIRE=$${TINYSCHED_REQUIRE-host,qemu,browser} $(BIN)/python -m pytest -q -n auto

lint: venv
	$(BIN)/ruff check tinysched tests bench
	$(BIN)/ruff format --check tinysched tests bench

clean:
	rm -rf $(VENV) out build dist .pytest_cache
