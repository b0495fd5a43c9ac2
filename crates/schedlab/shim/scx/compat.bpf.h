/*
 * schedlab's shim: the compatibility wrappers schedulers call to run on kernels
 * with and without a kfunc. Natively a kfunc the shim lacks is a weak symbol that
 * resolves to NULL, so a wrapper takes its fallback exactly as on an older kernel.
 */
#ifndef SCHEDLAB_SCX_COMPAT_BPF_H
#define SCHEDLAB_SCX_COMPAT_BPF_H
#include "common.bpf.h"

#define __COMPAT_ENUM_OR_ZERO(type, value) (value)
#define __COMPAT_scx_bpf_task_cgroup(p)                                                      \
	(bpf_ksym_exists(scx_bpf_task_cgroup) ? scx_bpf_task_cgroup((p)) : NULL)
#define __COMPAT_scx_bpf_dispatch_from_dsq_set_slice(it, slice)                              \
	(bpf_ksym_exists(scx_bpf_dispatch_from_dsq_set_slice)                                \
		 ? scx_bpf_dispatch_from_dsq_set_slice((it), (slice))                        \
		 : (void)0)
#define __COMPAT_scx_bpf_dispatch_from_dsq_set_vtime(it, vtime)                              \
	(bpf_ksym_exists(scx_bpf_dispatch_from_dsq_set_vtime)                                \
		 ? scx_bpf_dispatch_from_dsq_set_vtime((it), (vtime))                        \
		 : (void)0)
#define __COMPAT_scx_bpf_dispatch_from_dsq(it, p, dsq_id, enq_flags)                         \
	(bpf_ksym_exists(scx_bpf_dispatch_from_dsq)                                          \
		 ? scx_bpf_dispatch_from_dsq((it), (p), (dsq_id), (enq_flags))               \
		 : false)
#define __COMPAT_scx_bpf_dispatch_vtime_from_dsq(it, p, dsq_id, enq_flags)                   \
	(bpf_ksym_exists(scx_bpf_dispatch_vtime_from_dsq)                                    \
		 ? scx_bpf_dispatch_vtime_from_dsq((it), (p), (dsq_id), (enq_flags))         \
		 : false)

#endif /* SCHEDLAB_SCX_COMPAT_BPF_H */
