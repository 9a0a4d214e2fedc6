#!/usr/bin/env bash
# Set up the project on a fresh machine (Python >= 3.10 and git are all it needs):
# a virtual environment in .venv with the package installed, editable, with the extras given.
#   scripts/setup.sh            -> the package and its server extra
#   scripts/setup.sh test       -> plus everything the test suite needs
# CURSOR_AGENT_API_SKIP_SETUP=1 uses an existing .venv as it is (no pip, no network): the docs
# tests run the README's commands that way.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${CURSOR_AGENT_API_SKIP_SETUP:-0}" = "1" ] && [ -x .venv/bin/python ]; then
  echo "setup: using .venv as it is (CURSOR_AGENT_API_SKIP_SETUP=1)" >&2
  exit 0
fi
extras="${1:-server}"
python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  echo "setup: Python 3.10 or newer is needed ($python is $("$python" -V 2>&1))" >&2
  exit 1
fi
# a .venv whose pip does not run (a setup interrupted while it made it) is made again
if [ -x .venv/bin/python ] && ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
  echo "setup: .venv has no working pip (an interrupted setup?): making it again" >&2
  rm -rf .venv
fi
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
quiet_pip() {  # this machine's pip configuration warns about absent local indexes: not ours
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "$@" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
}
quiet_pip --upgrade pip >/dev/null
quiet_pip -e ".[${extras}]"
