/* schedlab shim: vmlinux.h is part of scx/common.bpf.h natively. */
#include <scx/common.bpf.h>
