#!/bin/bash
# Build the sched_ext oracle kit (`schedlab oracle --kernel 6.12-scx`, docs/sched-ext.md):
#   - a Linux 6.12 bzImage with SCHED_CLASS_EXT and BTF, from Debian's linux-source-6.12
#     (bookworm-backports; Debian's packaged 6.12 images lack SCHED_CLASS_EXT), x86_64
#     defconfig plus what the oracle needs; ~30 min with `make -j2` on a 2-core machine;
#   - the kernel tree's tools/sched_ext build: its own libbpf and bpftool, and vmlinux.h
#     dumped from the new kernel's BTF (what a sched_ext scheduler's BPF side compiles
#     against), and its scx_simple (a smoke test of the tool chain);
#   - scx_load (tools/oracle-scx/scx_load.c), the generic user-space half that loads any
#     scheduler's BPF object in the guest, linked statically against that libbpf;
#   - bpf_cflags: the exact clang flags tools/sched_ext/Makefile uses for a .bpf.c.
# Usage: build-kit.sh [KIT_DIR]   (default ~/.cache/schedlab/oracle/kernels/6.12-scx;
#        schedlab finds it there, or at $SCHEDLAB_SCX_KIT). Needs root for apt. Idempotent:
#        a finished step is not redone.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
kit=${1:-${SCHEDLAB_SCX_KIT:-$HOME/.cache/schedlab/oracle/kernels/6.12-scx}}
mkdir -p "$kit/lists"
kit=$(cd "$kit" && pwd)
cd "$kit"

# A private apt configuration for bookworm-backports (tools/oracle-apt.sh).
. "$here/../oracle-apt.sh"
oracle_apt "$kit" bookworm-backports
oracle_build_deps clang-19 llvm-19

if [ ! -d src ]; then
    apt-get $O update >/dev/null
    apt-get $O download linux-source-6.12
    rm -rf x && dpkg -x linux-source-6.12_*.deb x
    tar -xf x/usr/src/linux-source-6.12.tar.xz
    mv linux-source-6.12 src
    rm -rf x linux-source-6.12_*.deb
fi

cd src
if [ ! -f arch/x86/boot/bzImage ]; then
    make x86_64_defconfig >/dev/null
    ./scripts/config -e BPF -e BPF_SYSCALL -e BPF_JIT -e DEBUG_INFO -e DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT \
      -e DEBUG_INFO_BTF -e SCHED_CLASS_EXT -e SCHED_DEBUG -e FTRACE -e FUNCTION_TRACER -e SCHEDSTATS \
      -e NUMA -e SCHED_MC -e SCHED_SMT -d DEBUG_INFO_REDUCED -e PAHOLE_HAS_SPLIT_BTF \
      -e VIRTIO_PCI -e VIRTIO_BLK
    make olddefconfig >/dev/null
    make -j"$(nproc)" bzImage
fi

# tools/sched_ext: libbpf, bpftool, vmlinux.h from this kernel's BTF, and scx_simple.
make -C tools/sched_ext CLANG=clang-19 LLVM_STRIP=llvm-strip-19 scx_simple >/dev/null
sx=$PWD/tools/sched_ext
test -f "$sx/build/include/vmlinux.h" && test -f "$sx/build/obj/libbpf/libbpf.a"

# The flags of tools/sched_ext/Makefile's BPF_CFLAGS, with absolute paths.
{
    printf '%s\n' -g -D__TARGET_ARCH_x86 -mlittle-endian \
        "-I$sx/include" "-I$sx/include/bpf-compat" "-I$sx/build/include" \
        "-I$PWD/tools/include/uapi" "-I$PWD/include"
    clang-19 -v -E - </dev/null 2>&1 | sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter\n\1|p }'
    printf '%s\n' -Wall -Wno-compare-distinct-pointer-types -O2 -mcpu=v3 -target bpf
} > "$kit/bpf_cflags.tmp"
mv "$kit/bpf_cflags.tmp" "$kit/bpf_cflags"
command -v clang-19 > "$kit/clang"

# The loader, static (the guest has no libelf or zlib).
gcc -O2 -Wall -static -I"$sx/build/include" -o "$kit/scx_load.tmp" "$here/scx_load.c" \
    "$sx/build/obj/libbpf/libbpf.a" -lelf -lz
mv "$kit/scx_load.tmp" "$kit/scx_load"

cp arch/x86/boot/bzImage "$kit/bzImage.tmp" && mv "$kit/bzImage.tmp" "$kit/bzImage"
make -s kernelrelease > "$kit/release"
echo "kit: $kit ($(cat "$kit/release"))"
