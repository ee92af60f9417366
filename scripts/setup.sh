#!/usr/bin/env bash
# Set up a fresh Debian/Ubuntu machine and run the main job on a generated example:
# system packages (Graphviz; Chromium for the browser test), a virtual environment in
# .venv, the package with its extras, then `onnx-explorer summary/weights/render`.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if command -v apt-get >/dev/null 2>&1; then
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        graphviz chromium fonts-dejavu-core python3-venv >/dev/null
else
    echo "apt-get not found: install Graphviz yourself (conda install -c conda-forge graphviz, brew install graphviz)" >&2
fi

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[dev]"
# The prebuilt JupyterLab / Notebook 7 extension: a wheel installs it as data files, an
# editable install does not, so link the committed build where Jupyter looks for it.
labext=.venv/share/jupyter/labextensions/onnx-explorer
if [ ! -e "$labext/package.json" ]; then
    mkdir -p "$(dirname "$labext")"
    ln -sfn "$PWD/onnx_explorer/labextension" "$labext"
fi

# The main job: build an example model with external data and look inside it.
.venv/bin/python examples/make_examples.py
.venv/bin/onnx-explorer summary examples/_generated/tiny_transformer.onnx
if .venv/bin/onnx-explorer --help | grep -q weights; then
    .venv/bin/onnx-explorer weights examples/_generated/tiny_transformer.onnx --top 5
fi
if .venv/bin/onnx-explorer --help | grep -q render; then
    .venv/bin/onnx-explorer render examples/_generated/tiny_transformer.onnx \
        -o examples/_generated/tiny_transformer.svg
    echo "graph drawn to examples/_generated/tiny_transformer.svg"
fi
