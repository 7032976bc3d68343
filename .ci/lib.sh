# Sourced by .ci/run and .ci/other_tensorflows.

# pytest's status, with "no tests collected" (5) a failure: a broken checkout.
run_pytest() {
  local status
  set +e
  "$@" -p no:cacheprovider
  status=$?
  set -e
  if [ "$status" -eq 5 ]; then
    echo "ci: pytest collected no tests ($1)" >&2
    return 1
  fi
  return "$status"
}
