#!/bin/sh
# Create bench/peers/.venv-bench (ignored by git: bench/peers/.gitignore) with the peers that
# bench/peers/run.py measures. gen's own virtualenv is never touched.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=${VENV_BENCH:-$root/bench/peers/.venv-bench}
python=${PYTHON:-python3}
"$python" -m venv "$venv"
"$venv/bin/pip" install -q -r "$root/bench/peers/requirements.txt"
"$venv/bin/python" -c "import kapitan, kadet, reclass_rs, ryml, helm_python, jinja2, yaml, kubernetes_validate"
echo "peers installed in $venv"
