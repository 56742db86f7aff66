#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Delete the TPU (the queued resource with its node, or the TPU VM). Results on gs:// stay.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
parse_args "$@"
set_defaults
require PROJECT ZONE TPU_NAME

if [[ $(tpu_state) == MISSING ]]; then
  log "nothing to delete: $TPU_NAME does not exist"
else
  delete_tpu
fi
