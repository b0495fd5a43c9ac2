/* schedlab shim: scx/user_exit_info.h is part of scx/common.bpf.h natively. */
#include <scx/common.bpf.h>
