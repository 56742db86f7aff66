#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Create the TPU (a queued resource, or a plain TPU VM with TPU_MODE=vm) and wait until it is ready.
#   PROJECT=my-proj ZONE=us-west4-a TPU_NAME=eval-v5e tpu_scripts/create.sh [KEY=VALUE ...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
parse_args "$@"
set_defaults
require PROJECT ZONE TPU_NAME ACCELERATOR_TYPE RUNTIME_VERSION

state=$(tpu_state)
case "$(classify_state "$state")" in
  ready) log "$TPU_NAME is already $state" ;;
  waiting) wait_ready ;;
  gone)
    [[ $state == MISSING ]] || delete_tpu
    create_tpu
    wait_ready
    ;;
esac
