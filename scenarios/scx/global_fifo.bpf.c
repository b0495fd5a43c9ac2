/*
 * global_fifo: one queue for the whole machine, first in first out.
 *
 * A reference scheduler of schedlab's own, written in the sched_ext style as a
 * BPF program would be; schedlab compiles it natively (docs/sched-ext.md). It is the
 * C twin of the built-in `simple-fifo`, and the tests check that both make the
 * same decisions.
 *
 * A waking task goes where the kernel's default idle search sends it; when that CPU
 * is idle the task goes straight to its local queue. Otherwise it joins the shared
 * queue, and a CPU that runs out of work takes the queue's head. Slices are the
 * default 20 ms; nothing preempts.
 */
#include <scx/common.bpf.h>

/*
 * Written with the v6.12 kfunc names (scx_bpf_dispatch, scx_bpf_dispatch_vtime,
 * scx_bpf_consume): the names of the kernel the oracle runs it on (v6.13 renamed them
 * scx_bpf_dsq_insert[_vtime] and scx_bpf_dsq_move_to_local; schedlab's shim has both).
 */

char _license[] SEC("license") = "GPL";

#define SHARED_DSQ 0

/* What the user-space half would print: wakeups placed directly, and queued. */
u64 nr_direct, nr_queued;

s32 BPF_STRUCT_OPS(fifo_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool idle = false;
	s32 cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);

	if (idle) {
		__sync_fetch_and_add(&nr_direct, 1);
		scx_bpf_dispatch(p, SCX_DSQ_LOCAL, SCX_SLICE_DFL, 0);
	}
	return cpu;
}

void BPF_STRUCT_OPS(fifo_enqueue, struct task_struct *p, u64 enq_flags)
{
	__sync_fetch_and_add(&nr_queued, 1);
	scx_bpf_dispatch(p, SHARED_DSQ, SCX_SLICE_DFL, enq_flags);
}

void BPF_STRUCT_OPS(fifo_dispatch, s32 cpu, struct task_struct *prev)
{
	scx_bpf_consume(SHARED_DSQ);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(fifo_init)
{
	return scx_bpf_create_dsq(SHARED_DSQ, -1);
}

SCX_OPS_DEFINE(fifo_ops,
	       .select_cpu = (void *)fifo_select_cpu,
	       .enqueue = (void *)fifo_enqueue,
	       .dispatch = (void *)fifo_dispatch,
	       .init = (void *)fifo_init,
	       .name = "global_fifo");
