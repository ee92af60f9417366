#!/usr/bin/env bash
# Rebuild the prebuilt JupyterLab / Notebook 7 extension committed in onnx_explorer/labextension/
# from its TypeScript source in labextension/. Needs Node.js >= 18 with npm, and the venv
# (bash scripts/setup.sh) for JupyterLab's core package list. CI does not run this: the
# build output is committed. Run it after changing labextension/src/ and commit the result.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
core="$(.venv/bin/python -c 'import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging"))')"

cd labextension
if [ -f package-lock.json ]; then npm ci --no-audit --no-fund; else npm install --no-audit --no-fund; fi
npx tsc -p .
# @jupyterlab/builder's own entry point (what `jupyter labextension build` ran before
# JupyterLab 4.6): shared @jupyterlab/* modules are consumed from the running front end.
node node_modules/@jupyterlab/builder/lib/build-labextension.js --core-path "$core" .

# An editable install links the build (scripts/setup.sh); a copied one must be refreshed.
target="$root/.venv/share/jupyter/labextensions/onnx-explorer"
if [ -d "$target" ] && [ ! -L "$target" ]; then
    rm -rf "$target"
    cp -r "$root/onnx_explorer/labextension" "$target"
fi
ls -l "$root/onnx_explorer/labextension/static"
