#!/usr/bin/env bash
# Create .venv (once) and install the workbench with everything the lab and the tests need.
# Sourced by lab.sh and test.sh; safe to run again (it re-installs only when pyproject.toml changes).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${WORKBENCH_VENV:-$root/.venv}"
python="${PYTHON:-$(command -v python3.11 || command -v python3)}"

if [ ! -x "$venv/bin/python" ]; then
  echo "bootstrap: creating $venv with $python"
  "$python" -m venv "$venv"
fi
stamp="$venv/.workbench-installed"
want="$(cat "$root/pyproject.toml" "$root/scripts/bootstrap.sh" | sha256sum | cut -d' ' -f1)${WORKBENCH_DALI:-}"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  export PIP_DISABLE_PIP_VERSION_CHECK=1
  # torch first and pinned: where a local CPU wheel exists this takes seconds; an unpinned
  # torch would pull several GB of CUDA wheels as a dependency of kornia.
  "$venv/bin/python" -m pip install -q "torch==2.13.0"
  # DALI's wheel must match the CUDA major version torch was built for (CPU-only torch: CUDA 12's,
  # which runs CPU pipelines too). WORKBENCH_DALI=dali-cuda12|dali-cuda13 overrides the choice.
  dali="${WORKBENCH_DALI:-$("$venv/bin/python" -c 'import torch; print("dali-cuda13" if (torch.version.cuda or "").startswith("13") else "dali-cuda12")')}"
  echo "bootstrap: DALI extra $dali (torch CUDA: $("$venv/bin/python" -c 'import torch; print(torch.version.cuda or "none")'))"
  "$venv/bin/python" -m pip install -q -e "$root[lab,test,$dali]"
  echo "$want" > "$stamp"
fi
export PATH="$venv/bin:$PATH"
export KORNIA_INSTALLATION_MODE=RAISE
