/*
 * A broken scheduler for the sched_ext watchdog: the task whose pid is
 * `starved_pid` is queued on a DSQ nothing consumes, so it never runs. With
 * `.timeout_ms = 1000`, the watchdog (checking every 500 ms) must fail the scheduler
 * with a runnable-task stall once the task has waited more than a second.
 */
#include <scx/common.bpf.h>

char _license[] SEC("license") = "GPL";

const volatile s32 starved_pid = 3;

s32 BPF_STRUCT_OPS(st_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	return prev_cpu;
}

void BPF_STRUCT_OPS(st_enqueue, struct task_struct *p, u64 enq_flags)
{
	scx_bpf_dsq_insert(p, p->pid == starved_pid ? 1 : 0, SCX_SLICE_DFL, enq_flags);
}

void BPF_STRUCT_OPS(st_dispatch, s32 cpu, struct task_struct *prev)
{
	scx_bpf_dsq_move_to_local(0);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(st_init)
{
	return scx_bpf_create_dsq(0, -1) ?: scx_bpf_create_dsq(1, -1);
}

SCX_OPS_DEFINE(st_ops,
	       .select_cpu = (void *)st_select_cpu,
	       .enqueue = (void *)st_enqueue,
	       .dispatch = (void *)st_dispatch,
	       .init = (void *)st_init,
	       .timeout_ms = 1000,
	       .name = "starver");
