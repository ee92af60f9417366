#!/usr/bin/env bash
# Fuzz every harness for SECONDS each, one after the other: `bash fuzz/run_all.sh 12`,
# or for a number of inputs each: `bash fuzz/run_all.sh -runs=1000000` (a long run).
# CI (.ci/run) calls it with a short budget after the tests. Seeds are generated into
# fuzz/corpus/ (plus the committed fuzz/seeds/); an input that raises anything but an
# ExplorerError, hangs (over 10 s) or crashes is saved in test-artifacts/fuzz/ with the
# harness's log, and the script fails. PYTHON picks the interpreter (.venv/bin/python).
set -uo pipefail
cd "$(dirname "$0")/.."

budget=${1:?usage: fuzz/run_all.sh SECONDS_PER_HARNESS|-runs=N [HARNESS...]}
shift
case "$budget" in
    -runs=*) limit="$budget"; per="${budget#-runs=} runs" ;;
    *) limit="-max_total_time=$budget"; per="$budget s" ;;
esac
harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then harnesses=(onnx graphdef pbtxt external views run bundle weights metrics diff); fi
python=${PYTHON:-.venv/bin/python}
artifacts=test-artifacts/fuzz
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

if ! "$python" -c "import atheris" 2>/dev/null; then
    # The dev extra installs atheris only where it has wheels (Python 3.11-3.13): elsewhere
    # there is nothing to run, which is not a finding; where it should be, its absence is.
    if ! "$python" -c "import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))"; then
        echo "fuzz: skipped, atheris has no wheel for this Python (3.11-3.13 only)"
        exit 0
    fi
    echo "fuzz: atheris is not installed in $python (pip install -e '.[dev]')" >&2
    exit 1
fi
mkdir -p "$artifacts"
"$python" -m fuzz.make_corpus fuzz/corpus >/dev/null || exit 1

passed=0
failed=0
for harness in "${harnesses[@]}"; do
    log="$artifacts/$harness.log"
    mkdir -p "fuzz/corpus/$harness" "fuzz/seeds/$harness"
    nice -n 10 "$python" -m fuzz.run "$harness" "$limit" \
        -artifact_prefix="$artifacts/$harness-" "fuzz/corpus/$harness" "fuzz/seeds/$harness" \
        >"$log" 2>&1
    status=$?
    stats=$(grep -E '^stat::(number_of_executed_units|average_exec_per_sec):' "$log" |
        awk '{printf "%s ", $2}')
    read -r runs per_second <<<"$stats"
    if [ "$status" -eq 0 ]; then
        passed=$((passed + 1))
        echo "fuzz $harness: ok, ${runs:-?} inputs (budget $per, ${per_second:-?}/s)"
    else
        failed=$((failed + 1))
        echo "fuzz $harness: FINDING (exit $status), input and log in $artifacts/:"
        ls "$artifacts" | grep -E "^$harness-" | sed 's/^/    /'
        grep -E -A25 'Uncaught Python exception|ERROR: libFuzzer|ALARM|Traceback' "$log" | head -60
    fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
