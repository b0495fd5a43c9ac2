#!/bin/sh
# usage: boot.sh VER(510|61|612) DTB(or "none") TAG [extra append] ; env CPU (default cortex-a57), SMP (6), THREAD (multi)
H=${SPIKE_DIR:-$PWD}; V=$1; DTB=$2; TAG=$3; shift 3
KIMG=$(ls $H/k/$V/boot/vmlinuz-*)
O=$H/run/$TAG; mkdir -p $O; rm -f $O/out.img; truncate -s 64M $O/out.img
DTBARG=""; [ "$DTB" != none ] && DTBARG="-dtb $DTB"
set -- qemu-system-aarch64 -M ${MACHINE:-virt} -accel tcg,thread=${THREAD:-multi} -cpu ${CPU:-cortex-a57} -smp ${SMP:-6} -m 1024 \
  $DTBARG -kernel $KIMG -initrd ${INITRD:-$H/run/initrd-$V.gz} \
  -append "console=ttyAMA0 panic=-1 sched_verbose sched_debug loglevel=6 $*" \
  -drive if=none,file=$O/out.img,format=raw,id=d -device virtio-blk-device,drive=d \
  -nographic -no-reboot
echo "$*" > $O/cmd
S=$(date +%s.%N)
timeout ${TMO:-600} "$@" 2>&1 | while IFS= read -r l; do printf '%s %s\n' "$(awk -v s=$S 'BEGIN{"date +%s.%N"|getline n; printf "%7.2f", n-s}')" "$l"; done > $O/console.log
echo "rc=$? wall=$(echo "$(date +%s.%N) - $S" | bc)" >> $O/console.log
mkdir -p $O/out && tar xf $O/out.img -C $O/out 2>/dev/null; ls $O/out
