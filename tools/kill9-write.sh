#!/bin/bash
# Measure what `kill -9` during write_atomic leaves behind (issue 15).
#
# usage: tools/kill9-write.sh WRITE_LOOP_BINARY [TRIES] [MEGABYTES]
#   build the binary with: cargo build --release -p schedlab --example write_loop
#
# Each try starts `write_loop DIR/out.bin MB` (write_atomic of MB megabytes, in a
# loop), kills it with SIGKILL at a random moment after 50 ms to 1 s, and looks in DIR:
# - "left": tries after which the killed process's temporary file (.out.bin.tmp.PID*)
#   is in DIR; the files are kept, so the next try's write_atomic may clean them up;
# - "torn": tries after which out.bin exists with the wrong size.
# At the end it prints how many temporary files remain in DIR.
set -u
B=$1; N=${2:-30}; MB=${3:-64}
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
want=$((MB * 1048576)); left=0; torn=0
for _ in $(seq "$N"); do
  "$B" "$D/out.bin" "$MB" & pid=$!
  sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.3f", 0.05 + rand() * 0.95 }')"
  kill -9 "$pid"; wait "$pid" 2>/dev/null
  ls -A "$D" | grep -qE "^\.out\.bin\.tmp\.$pid(\.|$)" && left=$((left + 1))
  [ -e "$D/out.bin" ] && [ "$(stat -c %s "$D/out.bin")" -ne "$want" ] && torn=$((torn + 1))
done
echo "$B: $left of $N kills left a temporary file, $torn a torn out.bin;" \
  "$(find "$D" -name '.out.bin.tmp*' | wc -l) temporary files remain at the end"
