#!/usr/bin/env bash
# Runs CI's check by hand: clone the committed main into a scratch directory (with ../shared beside
# it, as CI has) and run .ci/run there, so a step that only works on this machine shows up.
# Usage: tools/fresh-clone-test.sh [extra args for pytest via PYTEST_ARGS]
set -euo pipefail
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
scratch=$(mktemp -d /tmp/fastkafka-ci.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
git clone -q "$repo" "$scratch/main"
[ -d "$repo/../shared" ] && ln -s "$(cd "$repo/../shared" && pwd)" "$scratch/shared"
cd "$scratch/main"
time CI=true PYTEST_ARGS="${PYTEST_ARGS:-}" bash .ci/run </dev/null
