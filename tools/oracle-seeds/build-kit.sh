#!/bin/bash
# Build the seed oracle kit (`schedlab oracle --kernel 5.10-seeds`, docs/validation.md,
# "The seeds on a real kernel"): Debian's linux-source-5.10 (bullseye; its
# select_idle_core / select_idle_cpu / select_idle_smt are the seeds' bases' own
# shape) with schedlab's own implementation of the seeds as sched_features, off by
# default (seeds-5.10.patch, written for this project from the seeds'
# descriptions: seed 000 IDLE_CPU_MASK, seed 003 SMT_BALANCE), and a trace_printk()
# per select_idle_sibling() call reporting the CPUs each scan tested:
#   schedlab_sis: pid=P prev=C target=C cpu=C core=N idle_cpu=N smt=N skipped=N groups=N
# x86_64 defconfig plus what the oracle needs (SCHED_DEBUG for the features file,
# SCHEDSTATS, ftrace, NUMA, SMT and MC domains, virtio block); ~25 min with
# `make -j2` on a 2-core machine (17 min measured with other work running).
# Usage: build-kit.sh [KIT_DIR]   (default ~/.cache/schedlab/oracle/kernels/5.10-seeds;
#        schedlab finds it there, or at $SCHEDLAB_SEEDS_KIT). Needs root for apt.
#        Idempotent: a finished step is not redone.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
kit=${1:-${SCHEDLAB_SEEDS_KIT:-$HOME/.cache/schedlab/oracle/kernels/5.10-seeds}}
mkdir -p "$kit"
kit=$(cd "$kit" && pwd)
cd "$kit"

. "$here/../oracle-apt.sh"
oracle_apt "$kit" bullseye
oracle_build_deps

# The patch is written against this source package: another version is refused
# rather than patched with fuzz.
version=5.10.223-1
# A tree patched with another version of the patch is extracted again.
sum=$(sha256sum "$here/seeds-5.10.patch" | cut -d' ' -f1)
if [ -d src ] && [ "$(cat src/.schedlab-patch 2>/dev/null)" != "$sum" ]; then
    rm -rf src
fi
if [ ! -d src ]; then
    if [ ! -f "linux-source-5.10_${version}_all.deb" ]; then
        apt-get $O update >/dev/null
        apt-get $O download "linux-source-5.10=$version"
    fi
    rm -rf x && dpkg -x "linux-source-5.10_${version}_all.deb" x
    rm -rf linux-source-5.10 src.tmp
    tar -xf x/usr/src/linux-source-5.10.tar.xz
    mv linux-source-5.10 src.tmp
    rm -rf x
    (cd src.tmp && patch -p1 --fuzz=0 --quiet < "$here/seeds-5.10.patch")
    echo "$sum" > src.tmp/.schedlab-patch
    mv src.tmp src
fi

cd src
if [ ! -f arch/x86/boot/bzImage ] || [ .schedlab-patch -nt arch/x86/boot/bzImage ]; then
    make x86_64_defconfig >/dev/null
    ./scripts/config -e SCHED_DEBUG -e SCHEDSTATS -e FTRACE -e FUNCTION_TRACER -e NUMA \
      -e X86_64_ACPI_NUMA -e SCHED_MC -e SCHED_SMT -e VIRTIO_PCI -e VIRTIO_BLK -e DEVTMPFS \
      -d DEBUG_INFO
    make olddefconfig >/dev/null
    make -j"$(nproc)" bzImage
fi
cp arch/x86/boot/bzImage "$kit/bzImage.tmp"
mv "$kit/bzImage.tmp" "$kit/bzImage"
echo "$version" > "$kit/source_version"
echo "kit ready: $kit/bzImage"
