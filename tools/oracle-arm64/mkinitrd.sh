#!/bin/sh
# usage: mkinitrd.sh KDIR(k/510|k/61|k/612) OUT.cpio.gz
set -e
H=${SPIKE_DIR:-$PWD}; K=$H/$1; OUT=$2
R=$(mktemp -d)
mkdir -p $R/bin $R/dev $R/proc $R/sys $R/tmp $R/jobs $R/lib/modules $R/lib/aarch64-linux-gnu $R/usr/lib/aarch64-linux-gnu $R/usr/bin
cp $H/ul/bin/busybox $R/bin/busybox
cp $H/ul/usr/bin/rt-app $R/usr/bin/
cp -a $H/ul/lib/ld-linux-aarch64.so.1 $R/lib/
for l in ld-linux-aarch64.so.1 libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libgcc_s.so.1; do cp -L $H/ul/lib/aarch64-linux-gnu/$l $R/lib/aarch64-linux-gnu/; done
cp -L $H/ul/usr/lib/aarch64-linux-gnu/libjson-c.so.5 $R/usr/lib/aarch64-linux-gnu/
MD=$(ls -d $K/lib/modules/*)
: > $R/lib/modules/order
for m in kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko kernel/drivers/virtio/virtio_mmio.ko kernel/drivers/block/virtio_blk.ko; do
  if [ -f $MD/$m ]; then cp $MD/$m $R/lib/modules/; elif [ -f $MD/$m.xz ]; then xz -dc $MD/$m.xz > $R/lib/modules/$(basename $m); else continue; fi
  echo $(basename $m) >> $R/lib/modules/order
done
cp $H/init.sh $R/init; chmod +x $R/init
cp ${JOBS:-$H/jobs}/*.json $R/jobs/
(cd $R && find . | cpio -o -H newc --quiet | gzip -1) > $OUT
rm -rf $R
echo "$OUT: $(stat -c %s $OUT) bytes, modules: $(cat /dev/null)"
