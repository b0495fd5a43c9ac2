#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin
mount -t devtmpfs dev /dev; mount -t proc proc /proc; mount -t sysfs sys /sys
mount -t debugfs debugfs /sys/kernel/debug; mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
echo "@@ INIT at uptime $(cut -d' ' -f1 /proc/uptime) kernel $(uname -r)"
for m in $(cat /lib/modules/order 2>/dev/null); do insmod /lib/modules/$m || echo "insmod $m failed"; done
mkdir -p /out
{
echo "== cmdline: $(cat /proc/cmdline)"
for c in /sys/devices/system/cpu/cpu[0-9]*; do
  echo "$(basename $c) cpu_capacity=$(cat $c/cpu_capacity) package=$(cat $c/topology/physical_package_id) cluster_id=$(cat $c/topology/cluster_id 2>/dev/null) core_siblings=$(cat $c/topology/core_siblings_list) cluster_cpus=$(cat $c/topology/cluster_cpus_list 2>/dev/null)"
done
for x in /sys/devices/system/cpu/cpu[0-9]*/cache/index*; do echo "$x level=$(cat $x/level) type=$(cat $x/type) shared=$(cat $x/shared_cpu_list)"; done
echo "== sched_energy_aware: $(cat /proc/sys/kernel/sched_energy_aware 2>&1)"; echo "== energy_model: $(ls /sys/kernel/debug/energy_model 2>&1)"
echo "== dmesg:"; dmesg | grep -i -E "energy|EAS|capacit|topology|cpufreq|AMU|misfit|root domain|rd 0" 
echo "== cpufreq: $(ls /sys/devices/system/cpu/cpufreq 2>&1)"
echo "== domains"
if [ -d /sys/kernel/debug/sched/domains ]; then D=/sys/kernel/debug/sched/domains; else D=/proc/sys/kernel/sched_domain; fi
for c in $D/cpu*; do for d in $c/domain*; do echo "$(basename $c)/$(basename $d) name=$(cat $d/name) flags=$(cat $d/flags)"; done; done
echo "== sched_features: $(cat /sys/kernel/debug/sched/features /sys/kernel/debug/sched_features 2>/dev/null)"
} > /out/info.txt 2>&1
cat /out/info.txt
T=/sys/kernel/tracing; [ -e $T/trace ] || T=/sys/kernel/debug/tracing
cd /jobs
for j in *.json; do
  n=${j%.json}
  echo 0 > $T/tracing_on; echo > $T/trace; echo 8192 > $T/buffer_size_kb; echo mono > $T/trace_clock
  for e in sched_switch sched_wakeup sched_wakeup_new sched_migrate_task sched_process_fork sched_process_exit; do echo 1 > $T/events/sched/$e/enable; done
  echo 1 > $T/tracing_on
  echo "@@ JOB $n start uptime $(cut -d' ' -f1 /proc/uptime)"
  rt-app $j > /out/$n.stdout 2>&1; echo "exit=$?" >> /out/$n.stdout
  echo 0 > $T/tracing_on
  echo "@@ JOB $n end uptime $(cut -d' ' -f1 /proc/uptime)"
  cat $T/trace > /out/$n.trace
  tail -3 /out/$n.stdout
  echo "-- $n: lines $(wc -l < /out/$n.trace); migrations of the hog:"
  grep sched_migrate_task /out/$n.trace | grep 'comm=hog' | head -20
  echo "-- $n: cpus the hog was switched in on (count cpu):"
  grep 'sched_switch' /out/$n.trace | grep 'next_comm=hog' | sed 's/.*\[\(...\)\].*/\1/' | sort | uniq -c
done
echo "@@ WRITE uptime $(cut -d' ' -f1 /proc/uptime)"
if [ -b /dev/vda ]; then tar cf /dev/vda -C /out . && sync && echo "@@ tar to /dev/vda ok"; else echo "@@ no /dev/vda"; ls /dev; fi
echo "@@ DONE uptime $(cut -d' ' -f1 /proc/uptime)"
poweroff -f
