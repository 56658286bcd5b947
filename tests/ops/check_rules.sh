#!/usr/bin/env bash
# Operations kit checks: the alert rules load, their promtool unit tests pass, the unit tests can
# fail (mutated rules must break them), the dashboard and manifests parse and line up.
# Prints one line per check and "N passed, M failed" at the end; exits non-zero on any failure.
# Run from anywhere: bash tests/ops/check_rules.sh
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; [ -n "${2:-}" ] && sed 's/^/    /' <<<"$2"; failed=$((failed + 1)); }

promtool=${PROMTOOL:-$(command -v promtool || true)}
if [ -z "$promtool" ]; then
  fail "promtool not found (install the Debian prometheus package or set PROMTOOL)"
else
  rules=deploy/prometheus/alerts.yaml
  tests=deploy/prometheus/alerts_test.yaml

  if out=$("$promtool" check rules "$rules" 2>&1); then pass "promtool check rules $rules"
  else fail "promtool check rules $rules" "$out"; fi

  if out=$("$promtool" test rules "$tests" 2>&1); then pass "promtool test rules $tests"
  else fail "promtool test rules $tests" "$out"; fi

  # Mutants: each edit weakens or breaks one alert; the unit tests must notice every one.
  mutants=(
    'SluiceStreamsNearCap threshold|s/(sluice_max_streams > 0) > 0\.9/(sluice_max_streams > 0) > 0.96/'
    'SluiceStreamsNearCap zero-cap guard|s/(sluice_max_streams > 0)/sluice_max_streams/'
    'SluiceMemoryNearBudget threshold|s/(sluice_memory_budget_bytes > 0) > 0\.8/(sluice_memory_budget_bytes > 0) > 0.9/'
    'SluiceShedding counts draining|s/queue_full|queue_timeout|memory|max_connections/&|draining/g'
    'SluiceShedding rate floor|s/max_connections"}\[5m\])) > 0\.1/max_connections"}[5m])) > 0/'
    'SluiceUpstreamErrors counts 4xx|s/status=~"5..|5xx|error"/status=~"5..|5xx|error|4..|4xx"/'
    'SluiceUpstreamErrors rate floor|s/(sluice_upstream_requests_total\[5m\])) > 0\.1/(sluice_upstream_requests_total[5m])) > 0/'
    'SluiceUpstreamErrors for 5m|/alert: SluiceUpstreamErrors/,/for:/ s/for: 5m/for: 1m/'
    'SluiceDown job filter|s/up{job="sluice"} == 0/up == 0/'
    'SluiceUpstreamCircuitOpen half-open counts|s/(sluice_upstream_circuit_state\[2m\])) == 2/(sluice_upstream_circuit_state[2m])) >= 1/'
    'SluiceUpstreamCircuitOpen over time|s/(max_over_time(sluice_upstream_circuit_state\[2m\]))/(sluice_upstream_circuit_state)/'
    'SluiceUpstreamCircuitOpen for 5m|/alert: SluiceUpstreamCircuitOpen/,/for:/ s/for: 5m/for: 1m/'
    'SluiceEngineSaturated for 10m|/alert: SluiceEngineSaturated/,/for:/ s/for: 10m/for: 2m/'
    'SluiceEngineSaturated only at exactly 1|s/(sluice_upstream_engine_saturated) > 0/(sluice_upstream_engine_saturated) == 1/'
    'SluiceSharedLimitsDegraded only at exactly 1|s/(sluice_shared_limits_degraded) > 0/(sluice_shared_limits_degraded) == 1/'
  )
  for m in "${mutants[@]}"; do
    name=${m%%|*}
    expr=${m#*|}
    mkdir -p "$work/mutant"
    cp "$tests" "$work/mutant/alerts_test.yaml"
    # Basic regular expressions: parentheses, braces and | are literal characters.
    if ! out=$(sed "$expr" "$rules" 2>&1 >"$work/mutant/alerts.yaml"); then
      fail "mutant '$name': bad sed expression" "$out"
    elif cmp -s "$rules" "$work/mutant/alerts.yaml"; then
      fail "mutant '$name' changed nothing (stale sed expression)"
    elif "$promtool" test rules "$work/mutant/alerts_test.yaml" >/dev/null 2>&1; then
      fail "mutant '$name' survived: alerts_test.yaml does not pin it down"
    else
      pass "mutant '$name' caught"
    fi
  done
fi

# Dashboard, manifests, metric names (one PASS/FAIL line each from the Python checker).
if command -v python3 >/dev/null; then
  out=$(python3 tests/ops/check_deploy.py "$root" "$work" 2>&1)
  while IFS= read -r line; do
    case $line in
      PASS\ *) pass "${line#PASS }" ;;
      FAIL\ *) fail "${line#FAIL }" ;;
      SKIP\ *) echo "$line" ;;
      *) [ -n "$line" ] && fail "check_deploy.py: $line" ;;
    esac
  done <<<"$out"
  if [ -n "$promtool" ] && [ -f "$work/dashboard_rules.yaml" ]; then
    if out=$("$promtool" check rules "$work/dashboard_rules.yaml" 2>&1); then pass "dashboard queries are valid PromQL"
    else fail "dashboard queries are valid PromQL" "$out"; fi
  fi
else
  fail "python3 not found: dashboard and manifests unchecked"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
