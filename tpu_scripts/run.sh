#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Run `jaxeval run $JAXEVAL_ARGS --output_path $OUTPUT_PATH` on every worker at once.
# Rerunning the same command resumes from the journal under OUTPUT_PATH (gs:// is fine).
#   OUTPUT_PATH=gs://bucket/evals JAXEVAL_ARGS='--model gs://bucket/ckpt --tasks longbench_e' tpu_scripts/run.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
parse_args "$@"
set_defaults
require PROJECT ZONE TPU_NAME OUTPUT_PATH

# JAXEVAL_ARGS is inserted as written: quote it as you would on the worker's shell.
remote="set -o pipefail; JAXEVAL_DISTRIBUTED=$JAXEVAL_DISTRIBUTED $REMOTE_VENV/bin/jaxeval run $JAXEVAL_ARGS \
--output_path $(printf %q "$OUTPUT_PATH") 2>&1 | tee -a $RUN_LOG"
log "running on every worker of $TPU_NAME: jaxeval run $JAXEVAL_ARGS --output_path $OUTPUT_PATH"
ssh_all "$remote"
