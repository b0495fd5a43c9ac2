/* schedlab shim: bpf/bpf_helpers.h is part of scx/common.bpf.h natively. */
#include <scx/common.bpf.h>
