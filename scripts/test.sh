#!/usr/bin/env bash
# The whole test suite: unit tests, doctests of the package, and every notebook (nbval).
# Extra arguments go to pytest (e.g. -k export -x).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/bootstrap.sh"
cd "$root"
# pytest exits 5 when it collected nothing; that is a failure here like any other non-zero.
exec python -m pytest workbench tests notebooks --nbval-lax -p no:cacheprovider "$@"
