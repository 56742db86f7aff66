#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Keep the suite running until it finishes: create the TPU when missing, recreate it after a
# preemption (or wait while a queued resource waits for capacity), set it up, run, and on
# failure check the state and go round again. Safe because every rerun resumes the journal.
#   PROJECT=... ZONE=... TPU_NAME=... OUTPUT_PATH=gs://... JAXEVAL_ARGS='...' tpu_scripts/babysit.sh
set -euo pipefail
here="$(dirname "${BASH_SOURCE[0]}")"
source "$here/common.sh"
parse_args "$@"
set_defaults
require PROJECT ZONE TPU_NAME OUTPUT_PATH

needs_setup=${SKIP_SETUP:+0}
needs_setup=${needs_setup:-1}
for ((attempt = 1; attempt <= MAX_ATTEMPTS; attempt++)); do
  state=$(tpu_state)
  log "attempt $attempt of $MAX_ATTEMPTS: $TPU_NAME is $state"
  case "$(classify_state "$state")" in
    gone)
      [[ $state == MISSING ]] || delete_tpu
      create_tpu || { log "create failed; retrying in ${POLL_S}s"; sleep "$POLL_S"; continue; }
      needs_setup=1
      wait_ready || continue
      ;;
    waiting) wait_ready || continue ;;
  esac
  if ((needs_setup)); then
    bash "$here/setup.sh" || { log "setup failed; checking the TPU again"; continue; }
    needs_setup=0
  fi
  rc=0
  bash "$here/run.sh" || rc=$?
  if ((rc == 0)); then
    log "suite finished; results under $OUTPUT_PATH"
    exit 0
  fi
  for fatal in $FATAL_EXIT_CODES; do
    ((rc == fatal)) && die "jaxeval run exited $rc (a user error, see $RUN_LOG on the workers); not retrying"
  done
  log "run exited $rc; checking the TPU and relaunching (the journal resumes)"
  sleep "$POLL_S"
done
die "gave up after $MAX_ATTEMPTS attempts"
