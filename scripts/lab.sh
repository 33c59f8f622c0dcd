#!/usr/bin/env bash
# Main job: JupyterLab on the getting-started notebook, with the bundled sample images.
# Extra arguments go to `jupyter lab` (e.g. --no-browser --port 8890).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/bootstrap.sh"
cd "$root"
extra=()
# Jupyter refuses root without this; containers and cloud VMs often run as root.
[ "$(id -u)" = 0 ] && extra+=(--allow-root)
# Serve the whole project (sample_data/, exports) and open the getting-started notebook.
exec jupyter lab --ServerApp.root_dir="$root" \
  --LabApp.default_url=/lab/tree/notebooks/01_getting_started.ipynb "${extra[@]}" "$@"
