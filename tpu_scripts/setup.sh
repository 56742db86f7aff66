#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Install jax[tpu], gcsfs and jaxeval in a virtual environment on every worker (--worker=all).
#   JAXEVAL_SOURCE=local (default): a wheel of this checkout (or JAXEVAL_WHEEL=path) copied to
#   every worker; gs://bucket/jaxeval-*.whl: copied there by the workers; anything else: a pip
#   requirement such as 'jaxeval @ git+https://github.com/you/jaxeval@<sha>'.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
parse_args "$@"
set_defaults
require PROJECT ZONE TPU_NAME

case "$JAXEVAL_SOURCE" in
  local)
    if [[ -z ${JAXEVAL_WHEEL:-} ]]; then
      dist=$(mktemp -d)
      trap 'rm -rf "$dist"' EXIT
      log "building a wheel of $(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
      python3 -m pip wheel --quiet --no-deps --wheel-dir "$dist" "$(dirname "${BASH_SOURCE[0]}")/.."
      JAXEVAL_WHEEL=$(echo "$dist"/jaxeval-*.whl)
    fi
    [[ -f $JAXEVAL_WHEEL ]] || die "no wheel at JAXEVAL_WHEEL=$JAXEVAL_WHEEL"
    scp_all "$JAXEVAL_WHEEL" ""  # "" : the home directory
    fetch=":"
    package="\$HOME/$(basename "$JAXEVAL_WHEEL")"
    ;;
  gs://*.whl)
    fetch="gcloud storage cp $(printf %q "$JAXEVAL_SOURCE") \$HOME/"
    package="\$HOME/$(basename "$JAXEVAL_SOURCE")"
    ;;
  gs://*) die "JAXEVAL_SOURCE=$JAXEVAL_SOURCE: a gs:// source must be a .whl file" ;;
  *)
    fetch=":"
    package=$(printf %q "$JAXEVAL_SOURCE")
    ;;
esac

# uv brings its own Python when the image's is older than jaxeval needs (3.11).
remote="set -euo pipefail
python3 -m pip install --quiet --user --upgrade uv
$fetch
\$HOME/.local/bin/uv venv --allow-existing --python $PYTHON_VERSION $REMOTE_VENV
\$HOME/.local/bin/uv pip install --python $REMOTE_VENV/bin/python $(printf %q "$JAX_SPEC") gcsfs $package
$REMOTE_VENV/bin/python -c 'import jax, jaxeval; print(\"jax\", jax.__version__, \"jaxeval\", jaxeval.__version__)'"
log "setting up every worker of $TPU_NAME"
ssh_all "$remote"
