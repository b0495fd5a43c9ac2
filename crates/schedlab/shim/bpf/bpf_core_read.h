/* schedlab shim: bpf/bpf_core_read.h is part of scx/common.bpf.h natively. */
#include <scx/common.bpf.h>
