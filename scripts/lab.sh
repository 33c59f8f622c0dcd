#!/usr/bin/env bash
# Main job: JupyterLab on the getting-started notebook, with the bundled sample images.
# Extra arguments go to `jupyter lab` (e.g. --no-browser --port 8890).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/bootstrap.sh"
cd "$root"
exec jupyter lab notebooks/01_getting_started.ipynb "$@"
