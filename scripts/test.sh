#!/usr/bin/env bash
# The whole test suite: unit tests, doctests of the package, and every notebook (nbval).
# Extra arguments go to pytest (e.g. -k export -x).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/bootstrap.sh"
cd "$root"
# The browser test drives Debian's chromium (Playwright never downloads a browser here).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "test.sh: installing Debian's chromium for the browser test"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "test.sh: the browser test needs Debian's chromium: sudo apt-get install chromium" >&2
  fi
fi
# The importer tests compare with a real torchvision (tests/test_torchvision_parity.py). PyPI's wheel is
# built for a CUDA torch: installed without its dependencies beside the CPU torch, its Python
# transforms run once tests/torchvision_beside_cpu_torch.py lets its C++ operators be missing.
# Test-only; 0.28 is the release made for torch 2.13.
if ! python -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('torchvision') is None)"; then
  echo "test.sh: installing torchvision 0.28.0 (--no-deps) for the importer tests"
  PIP_DISABLE_PIP_VERSION_CHECK=1 python -m pip install -q --no-deps "torchvision==0.28.0"
fi
# pytest exits 5 when it collected nothing; that is a failure here like any other non-zero.
# Two worker processes (WORKBENCH_TEST_WORKERS; 0 runs everything in this one), each taking whole
# files: most tests wait on one core (an exported script, a DALI pipeline), and a notebook's cells
# must share its kernel. On the 2-core CI machine this halves the run. The 20 slowest tests are
# listed at the end, to see where the time goes. Files go to the workers in the order given: the
# notebooks (the longest files) first, the many short doctests last, so that neither worker is
# left alone with a long file at the end.
exec python -m pytest notebooks tests workbench --nbval-lax -p no:cacheprovider \
  -n "${WORKBENCH_TEST_WORKERS:-2}" --dist loadfile --durations=20 "$@"
