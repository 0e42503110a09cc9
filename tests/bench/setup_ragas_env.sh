#!/usr/bin/env bash
# Build the separate virtual environment that holds the real ragas, for the benchmarks only.
#
#   tests/bench/setup_ragas_env.sh          # creates .bench/ragas-venv (skips if already there)
#   FORCE=1 tests/bench/setup_ragas_env.sh  # rebuild it from scratch
#
# ragas is never a dependency of evalcore: it lives only in .bench/ragas-venv (gitignored),
# which the benchmarks call as a subprocess. Needs Python 3.11+ with venv, and PyPI.
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON=${PYTHON:-python3}
VENV=.bench/ragas-venv
# ragas does not install the libraries its string metrics call; the string references need them.
REQUIREMENTS=("ragas==0.4.3" "langchain-community<0.4" "rapidfuzz==3.14.6" "sacrebleu==2.6.0" "rouge-score==0.1.2")
STAMP=$VENV/.installed

# The check that decides "already installed": the stamp names exactly these requirements,
# the installed versions match them, and ragas imports.
installed() {
    [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] || return 1
    [ "$(cat "$STAMP")" = "${REQUIREMENTS[*]}" ] || return 1
    "$VENV/bin/python" - <<'PY' >/dev/null 2>&1
from importlib.metadata import version

assert version("ragas") == "0.4.3", version("ragas")
community = version("langchain-community")
assert tuple(int(x) for x in community.split(".")[:2]) < (0, 4), community
from ragas import EvaluationDataset  # noqa: F401
PY
}

if [ "${FORCE:-0}" = 1 ]; then
    rm -rf "$VENV"
elif installed; then
    echo "ragas env ready: $VENV ($("$VENV/bin/python" -c 'import ragas; print("ragas", ragas.__version__)'))"
    exit 0
fi

echo "creating $VENV with ${REQUIREMENTS[*]} (about a minute the first time)..."
mkdir -p .bench
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${REQUIREMENTS[@]}"
rm -f "$STAMP"
printf '%s\n' "${REQUIREMENTS[*]}" >"$STAMP"
installed || { echo "error: $VENV was built but ragas does not import; rerun with FORCE=1" >&2; exit 1; }
echo "ragas env ready: $VENV ($("$VENV/bin/python" -c 'import ragas; print("ragas", ragas.__version__)'))"
