# shellcheck shell=bash
# Shared by the tpu_scripts: settings from the environment (or KEY=VALUE arguments), and the
# gcloud calls every script needs. Sourced, never run. See tpu_scripts/README.md.

set -euo pipefail

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 2; }

# KEY=VALUE arguments override the environment (maxtext style): run.sh TPU_NAME=x OUTPUT_PATH=gs://b/r
parse_args() {
  local arg
  for arg in "$@"; do
    [[ $arg == [A-Z_]*=* ]] || die "expected KEY=VALUE arguments, got '$arg'"
    export "${arg%%=*}=${arg#*=}"
  done
}

# Defaults; PROJECT, ZONE and TPU_NAME have none.
set_defaults() {
  : "${TPU_MODE:=queued}"                      # queued (queued resource) or vm (plain TPU VM)
  : "${ACCELERATOR_TYPE:=v5litepod-8}"
  : "${RUNTIME_VERSION:=v2-alpha-tpuv5-lite}"
  : "${CAPACITY:=spot}"                         # spot, preemptible (vm), best-effort (queued), reserved, on-demand
  : "${QR_NAME:=${TPU_NAME:-}-qr}"
  : "${JAXEVAL_SOURCE:=local}"                 # local (wheel of this checkout), gs://.../x.whl, or a pip requirement
  : "${JAX_SPEC:=jax[tpu]}"
  : "${PYTHON_VERSION:=3.11}"
  : "${REMOTE_VENV:=\$HOME/jaxeval-venv}"        # expanded on the workers
  : "${RUN_LOG:=\$HOME/jaxeval-run.log}"
  : "${JAXEVAL_ARGS:=}"
  : "${JAXEVAL_DISTRIBUTED:=1}"                # every worker calls jax.distributed.initialize()
  : "${POLL_S:=30}"
  : "${WAIT_TIMEOUT_S:=7200}"
  : "${MAX_ATTEMPTS:=50}"
  : "${FATAL_EXIT_CODES:=2}"                   # run exit codes that stop babysit.sh (2: a user error)
  export TPU_MODE ACCELERATOR_TYPE RUNTIME_VERSION CAPACITY QR_NAME JAXEVAL_SOURCE JAX_SPEC PYTHON_VERSION \
    REMOTE_VENV RUN_LOG JAXEVAL_ARGS JAXEVAL_DISTRIBUTED POLL_S WAIT_TIMEOUT_S MAX_ATTEMPTS FATAL_EXIT_CODES
  [[ $TPU_MODE == queued || $TPU_MODE == vm ]] || die "TPU_MODE must be queued or vm, got '$TPU_MODE'"
  capacity_flags >/dev/null  # fails early on a capacity the mode does not offer
}

require() {
  local name
  for name in "$@"; do
    [[ -n ${!name:-} ]] || die "$name is not set (see tpu_scripts/README.md)"
  done
}

location() { printf '%s\n' "--zone=$ZONE" "--project=$PROJECT"; }

capacity_flags() {
  case "$CAPACITY:$TPU_MODE" in
    spot:*) echo "--spot" ;;
    preemptible:vm) echo "--preemptible" ;;
    best-effort:queued) echo "--best-effort" ;;
    reserved:*) echo "--reserved" ;;
    on-demand:*) ;;
    *) die "CAPACITY '$CAPACITY' is not available with TPU_MODE=$TPU_MODE" ;;
  esac
}

# The state as gcloud reports it, or MISSING when there is nothing to describe.
tpu_state() {
  local state loc
  mapfile -t loc < <(location)
  if [[ $TPU_MODE == queued ]]; then
    state=$(gcloud compute tpus queued-resources describe "$QR_NAME" "${loc[@]}" \
      --format='value(state.state)' 2>/dev/null) || state=MISSING
  else
    state=$(gcloud compute tpus tpu-vm describe "$TPU_NAME" "${loc[@]}" --format='value(state)' 2>/dev/null) \
      || state=MISSING
  fi
  echo "${state:-MISSING}"
}

# ready, waiting (it will get there by itself) or gone (delete and create again).
classify_state() {
  case "$1" in
    READY | ACTIVE) echo ready ;;
    CREATING | STARTING | RESTARTING | REPAIRING | PROVISIONING | WAITING_FOR_RESOURCES | ACCEPTED \
      | DELETING | SUSPENDING | STOPPING) echo waiting ;;
    *) echo gone ;;  # MISSING, PREEMPTED, TERMINATED, STOPPED, SUSPENDED, FAILED, unknown
  esac
}

create_tpu() {
  local loc capacity
  mapfile -t loc < <(location)
  mapfile -t capacity < <(capacity_flags)
  if [[ $TPU_MODE == queued ]]; then
    log "creating queued resource $QR_NAME (node $TPU_NAME, $ACCELERATOR_TYPE, $CAPACITY)"
    gcloud compute tpus queued-resources create "$QR_NAME" --node-id="$TPU_NAME" "${loc[@]}" \
      --accelerator-type="$ACCELERATOR_TYPE" --runtime-version="$RUNTIME_VERSION" "${capacity[@]}"
  else
    log "creating TPU VM $TPU_NAME ($ACCELERATOR_TYPE, $CAPACITY)"
    gcloud compute tpus tpu-vm create "$TPU_NAME" "${loc[@]}" --accelerator-type="$ACCELERATOR_TYPE" \
      --version="$RUNTIME_VERSION" "${capacity[@]}"
  fi
}

delete_tpu() {
  local loc
  mapfile -t loc < <(location)
  if [[ $TPU_MODE == queued ]]; then
    log "deleting queued resource $QR_NAME"
    gcloud compute tpus queued-resources delete "$QR_NAME" "${loc[@]}" --force --quiet
  else
    log "deleting TPU VM $TPU_NAME"
    gcloud compute tpus tpu-vm delete "$TPU_NAME" "${loc[@]}" --quiet
  fi
}

# Poll until ready (0); 1 when it is gone instead or WAIT_TIMEOUT_S passes.
wait_ready() {
  local state waited=0
  while true; do
    state=$(tpu_state)
    case "$(classify_state "$state")" in
      ready) log "$TPU_NAME is $state"; return 0 ;;
      gone) log "$TPU_NAME is $state"; return 1 ;;
    esac
    ((waited >= WAIT_TIMEOUT_S)) && { log "still $state after ${waited}s"; return 1; }
    log "$TPU_NAME is $state; waiting"
    sleep "$POLL_S"
    waited=$((waited + POLL_S))
  done
}

# Run a shell command on every worker of the slice.
ssh_all() {
  local loc
  mapfile -t loc < <(location)
  gcloud compute tpus tpu-vm ssh "$TPU_NAME" "${loc[@]}" --worker=all --strict-host-key-checking=no \
    --ssh-flag=-oServerAliveInterval=60 --command="$1"
}

scp_all() {
  local loc
  mapfile -t loc < <(location)
  gcloud compute tpus tpu-vm scp "$1" "$TPU_NAME:$2" "${loc[@]}" --worker=all --strict-host-key-checking=no
}
