/*
 * central_fifo: one CPU makes every scheduling decision.
 *
 * A reference scheduler of schedlab's own in the sched_ext style, after the idea of
 * the kernel's scx_central example but simpler (no timer, no infinite slices):
 * waking tasks are queued, by pid, in one BPF queue map that only the central CPU
 * (`central_cpu`, CPU 0 unless set) reads. When a CPU runs out of work it raises its
 * hand and kicks the central CPU, preempting whatever runs there; the central CPU's
 * `dispatch` then hands the queue's head to every CPU that asked or that it finds
 * idle, straight onto that CPU's local DSQ, and kicks it. Tasks run 20 ms slices.
 * A task that may not run on the CPU it was handed to goes to a fallback DSQ, which
 * any CPU consumes first.
 */
#include <scx/common.bpf.h>

/*
 * Written with the v6.12 kfunc names (scx_bpf_dispatch, scx_bpf_dispatch_vtime,
 * scx_bpf_consume): the names of the kernel the oracle runs it on (v6.13 renamed them
 * scx_bpf_dsq_insert[_vtime] and scx_bpf_dsq_move_to_local; schedlab's shim has both).
 */

/* The kernel's NR_CPUS is not visible to BPF: a bound of our own. */
#define MAX_CPUS 1024

char _license[] SEC("license") = "GPL";

#define FALLBACK_DSQ 0
#define QUEUE_LEN 4096

const volatile s32 central_cpu;

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, QUEUE_LEN);
	__type(value, s32);
} central_q SEC(".maps");

/* Queued pids (a queue map cannot be asked its length), and who asked for work. */
u64 nr_queued;
bool wants[MAX_CPUS];
/* Statistics the user-space half would print. */
u64 nr_handed, nr_fallback, nr_exited;

s32 BPF_STRUCT_OPS(cf_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	/* Where a task waits does not matter: the central CPU places it. */
	return prev_cpu;
}

void BPF_STRUCT_OPS(cf_enqueue, struct task_struct *p, u64 enq_flags)
{
	s32 pid = p->pid;

	if (bpf_map_push_elem(&central_q, &pid, 0)) {
		__sync_fetch_and_add(&nr_fallback, 1);
		scx_bpf_dispatch(p, FALLBACK_DSQ, SCX_SLICE_DFL, enq_flags);
		return;
	}
	__sync_fetch_and_add(&nr_queued, 1);
	scx_bpf_kick_cpu(central_cpu, SCX_KICK_IDLE);
}

/* The queue's next task that still exists, or NULL. */
static struct task_struct *pop_task(void)
{
	s32 pid;

	while (nr_queued) {
		if (bpf_map_pop_elem(&central_q, &pid))
			return NULL;
		__sync_fetch_and_sub(&nr_queued, 1);
		struct task_struct *p = bpf_task_from_pid(pid);
		if (p)
			return p;
		__sync_fetch_and_add(&nr_exited, 1);
	}
	return NULL;
}

/* Hand the queue's head to `cpu`: false when the queue is empty. */
static bool hand_to(s32 cpu)
{
	struct task_struct *p = pop_task();

	if (!p)
		return false;
	if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr)) {
		__sync_fetch_and_add(&nr_fallback, 1);
		scx_bpf_dispatch(p, FALLBACK_DSQ, SCX_SLICE_DFL, 0);
	} else {
		__sync_fetch_and_add(&nr_handed, 1);
		scx_bpf_dispatch(p, SCX_DSQ_LOCAL_ON | cpu, SCX_SLICE_DFL, 0);
	}
	scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	return true;
}

void BPF_STRUCT_OPS(cf_dispatch, s32 cpu, struct task_struct *prev)
{
	s32 c;

	if (scx_bpf_consume(FALLBACK_DSQ))
		return;
	if (cpu != central_cpu) {
		wants[cpu] = true;
		scx_bpf_kick_cpu(central_cpu, SCX_KICK_PREEMPT);
		return;
	}
	bpf_for(c, 0, scx_bpf_nr_cpu_ids()) {
		if (c == central_cpu || !nr_queued)
			continue;
		/* One slot stays for the central CPU's own task; the CPUs not
		 * served this round keep their hands up, and the central CPU
		 * comes back to them at once. */
		if (scx_bpf_dispatch_nr_slots() <= 1) {
			scx_bpf_kick_cpu(central_cpu, SCX_KICK_PREEMPT);
			break;
		}
		if (wants[c] || scx_bpf_test_and_clear_cpu_idle(c)) {
			wants[c] = false;
			hand_to(c);
		}
	}
	/* Then work for the central CPU itself. */
	struct task_struct *p = pop_task();
	if (p)
		scx_bpf_dispatch(p, SCX_DSQ_LOCAL, SCX_SLICE_DFL, 0);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(cf_init)
{
	if (central_cpu < 0 || (u32)central_cpu >= scx_bpf_nr_cpu_ids()) {
		scx_bpf_error("central_cpu %d is not a CPU", central_cpu);
		return -EINVAL;
	}
	return scx_bpf_create_dsq(FALLBACK_DSQ, -1);
}

SCX_OPS_DEFINE(cf_ops,
	       .select_cpu = (void *)cf_select_cpu,
	       .enqueue = (void *)cf_enqueue,
	       .dispatch = (void *)cf_dispatch,
	       .init = (void *)cf_init,
	       .name = "central_fifo");
