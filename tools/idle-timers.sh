#!/bin/bash
# What ends an idle CPU's sleep on a real kernel with nothing to run: boot a kernel in
# an idle QEMU (TCG) guest, trace every timer expiry and the timer wheel's next event
# at each idle entry (a kprobe on get_next_timer_interrupt), and print which timers
# fire on idle CPUs and how far the wheel's next event is. This is the measurement
# behind the modelled softlockup watchdog hrtimer (docs/kernel-mapping.md §5).
#
# usage: tools/idle-timers.sh VMLINUZ [CPUS] [SECONDS]
#   VMLINUZ  an x86-64 kernel with kprobe events (Debian's 5.10 is cached by
#            `schedlab oracle run` under ~/.cache/schedlab/oracle/kernels/)
# needs: qemu-system-x86_64, busybox (static), cpio, python3 (tools/oracle-deps.sh)
set -euo pipefail
K=${1:?usage: tools/idle-timers.sh VMLINUZ [CPUS] [SECONDS]}
CPUS=${2:-8}
SECS=${3:-40}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W"/r/{bin,dev,proc,sys,tmp}
cp "$(command -v busybox)" "$W"/r/bin/busybox
cat > "$W"/r/init <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t devtmpfs devtmpfs /dev
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing
T=/sys/kernel/tracing
echo 8192 > \$T/buffer_size_kb
echo mono > \$T/trace_clock
echo 'p:gnti get_next_timer_interrupt basej=%di basem=%si' > \$T/kprobe_events
echo 'r:gntr get_next_timer_interrupt ret=\$retval' >> \$T/kprobe_events
for e in kprobes:gnti kprobes:gntr timer:timer_expire_entry timer:hrtimer_expire_entry power:cpu_idle timer:tick_stop; do
  echo \$e >> \$T/set_event
done
sleep 5
echo 1 > \$T/tracing_on
sleep $SECS
echo 0 > \$T/tracing_on
echo "==TRACE-BEGIN=="
cat \$T/trace | gzip -9 | base64
echo "==TRACE-END=="
poweroff -f
INIT
chmod +x "$W"/r/init
(cd "$W"/r && find . | cpio -o -H newc --quiet | gzip -1) > "$W"/initrd.gz
timeout $((SECS * 4 + 300)) qemu-system-x86_64 -accel tcg,thread=multi -machine pc -cpu Haswell-v4 \
  -m 1G -smp "$CPUS" -kernel "$K" -initrd "$W"/initrd.gz \
  -append "console=ttyS0 panic=-1 quiet" -display none -monitor none -serial stdio \
  -no-reboot > "$W"/out.txt 2>/dev/null
sed -n '/==TRACE-BEGIN==/,/==TRACE-END==/p' "$W"/out.txt | sed '1d;$d' | tr -d '\r' \
  | base64 -d | gunzip > "$W"/trace.txt
python3 - "$W"/trace.txt <<'PY'
import collections, re, sys
pend, sl, fired, idle = {}, [], collections.Counter(), {}
t0 = None
for l in open(sys.argv[1]):
    m = re.match(r'\s*\S.*?\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)', l)
    if not m:
        continue
    cpu, ts, ev, rest = int(m[1]), float(m[2]), m[3], m[4]
    t0 = ts if t0 is None else t0
    if ev == 'cpu_idle':
        idle[cpu] = 'state=4294967295' not in rest
    elif ev == 'gnti':
        pend[cpu] = int(re.search(r'basem=(0x[0-9a-f]+)', rest)[1], 16)
    elif ev == 'gntr' and cpu in pend:
        sl.append((int(re.search(r'ret=(0x[0-9a-f]+)', rest)[1], 16) - pend.pop(cpu)) / 1e6)
    elif ev.endswith('expire_entry') and idle.get(cpu, True):
        fired[(ev.split('_')[0], re.search(r'function=(\S+)', rest)[1])] += 1
span = ts - t0
print(f"{span:.1f} s traced; expiries that woke an idle CPU (per CPU per second):")
ncpu = len({c for c in idle}) or 1
for (kind, fn), n in fired.most_common():
    print(f"  {kind:8} {fn:28} {n:6}  {n / ncpu / span:7.3f}")
sl.sort()
if sl:
    q = lambda f: sl[min(len(sl) - 1, int(f * len(sl)))]
    print(f"timer wheel's next event at {len(sl)} idle entries (ms): p10 {q(.1):.0f}, "
          f"p50 {q(.5):.0f}, p90 {q(.9):.0f}, max {sl[-1]:.0f}")
PY
