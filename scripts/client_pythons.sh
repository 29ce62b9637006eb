#!/usr/bin/env bash
# `make client-pythons`: the client's tests (tests/clients) under each other Python it supports that
# this machine has, the server under the project's venv. For each version: a venv in
# build/client-pythons/VERSION, `pip install ./clients/python` and pytest into it (from the package
# index, so not in CI's suite: tests/clients/test_other_pythons.py is the offline check there), then the
# tests with that interpreter and DIALSCORE_TEST_SERVER_PYTHON (tests/live_server.py).
#
#   scripts/client_pythons.sh [VERSION...]   default: 3.10 3.12 3.13 (3.11 is the suite's own)
#
# A version found nowhere (PATH, pyenv) is said and skipped; the exit status is non-zero if any run failed.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2
SERVER_PYTHON="${VENV:-$ROOT/.venv}/bin/python"
[[ -x "$SERVER_PYTHON" ]] || { echo "client-pythons: no $SERVER_PYTHON (make venv-dev)" >&2; exit 2; }
PYTEST_PIN="$(grep -m1 '^pytest==' requirements-dev.txt)"

find_python() {  # a python of version $1 that runs: a pyenv shim may name one it cannot run
    local version="$1" candidate
    for candidate in "$(command -v "python$version")" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*/bin/python; do
        [[ -x "$candidate" ]] || continue
        if [[ "$("$candidate" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" == "$version" ]]; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

failed=()
for version in "${@:-3.10 3.12 3.13}"; do
    for v in $version; do
        python="$(find_python "$v")" || { echo "client-pythons: no Python $v here (PATH, pyenv): skipped"; continue; }
        venv="build/client-pythons/$v"
        echo "client-pythons: Python $v ($python) in $venv"
        if ! { [[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv"; } ||
           ! "$venv/bin/python" -m pip install -q ./clients/python "$PYTEST_PIN" -c constraints.txt; then
            failed+=("$v (install)")
            continue
        fi
        PYTHONPATH="$ROOT" DIALSCORE_TEST_SERVER_PYTHON="$SERVER_PYTHON" "$venv/bin/python" -m pytest \
            -p no:cacheprovider -o addopts="" -q -ra tests/clients || failed+=("$v")
    done
done
if ((${#failed[@]})); then
    echo "client-pythons: failed under ${failed[*]}" >&2
    exit 1
fi
