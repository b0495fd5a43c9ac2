/*
 * llc_vtime: one weighted-vtime queue per last-level cache.
 *
 * A reference scheduler of schedlab's own in the sched_ext style, the C twin of the
 * built-in `llc-vtime` (crates/schedlab/src/sched/ext/llc_vtime.rs); the tests
 * check that both make the same decisions. The topology comes the way a real
 * scheduler gets it, from its user-space half before load: here from
 * `[kernel.scheduler_globals]`, `nr_llcs = "nr_llcs"` and `cpu_llc = "cpu_llc"`.
 *
 * Every LLC has its own DSQ (id = the LLC's index) and its own virtual clock. A
 * waking task that the default idle search places on an idle CPU goes straight to
 * that CPU; otherwise it queues on the LLC of the CPU the search returned, keyed by
 * its vtime, with at most one slice of sleep credit against that LLC's clock. A CPU
 * consumes its own LLC's queue first, then the others in index order after its own.
 * A stopping task's vtime advances by the slice it used, scaled by 100 / weight.
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

#define MAX_LLCS 256

const volatile u32 nr_llcs = 1;
const volatile u32 cpu_llc[MAX_CPUS];

/* Each LLC's clock: the highest vtime a task has started running with there. */
static u64 llc_vtime_now[MAX_LLCS];

static inline bool vtime_before(u64 a, u64 b)
{
	return (s64)(a - b) < 0;
}

static u32 llc_of(s32 cpu)
{
	u32 llc = cpu >= 0 && cpu < MAX_CPUS ? cpu_llc[cpu] : 0;
	return llc < MAX_LLCS ? llc : 0;
}

s32 BPF_STRUCT_OPS(llcv_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool idle = false;
	s32 cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);

	if (idle)
		scx_bpf_dispatch(p, SCX_DSQ_LOCAL, SCX_SLICE_DFL, 0);
	return cpu;
}

void BPF_STRUCT_OPS(llcv_enqueue, struct task_struct *p, u64 enq_flags)
{
	u32 llc = llc_of(scx_bpf_task_cpu(p));
	u64 vtime = p->scx.dsq_vtime;

	if (vtime_before(vtime, llc_vtime_now[llc] - SCX_SLICE_DFL))
		vtime = llc_vtime_now[llc] - SCX_SLICE_DFL;
	scx_bpf_dispatch_vtime(p, llc, SCX_SLICE_DFL, vtime, enq_flags);
}

void BPF_STRUCT_OPS(llcv_dispatch, s32 cpu, struct task_struct *prev)
{
	u32 own = llc_of(cpu), i;

	bpf_for(i, 0, nr_llcs) {
		if (scx_bpf_consume((own + i) % nr_llcs))
			return;
	}
}

void BPF_STRUCT_OPS(llcv_running, struct task_struct *p)
{
	u32 llc = llc_of(scx_bpf_task_cpu(p));

	if (vtime_before(llc_vtime_now[llc], p->scx.dsq_vtime))
		llc_vtime_now[llc] = p->scx.dsq_vtime;
}

void BPF_STRUCT_OPS(llcv_stopping, struct task_struct *p, bool runnable)
{
	p->scx.dsq_vtime += (SCX_SLICE_DFL - p->scx.slice) * 100 / p->scx.weight;
}

void BPF_STRUCT_OPS(llcv_enable, struct task_struct *p)
{
	p->scx.dsq_vtime = llc_vtime_now[llc_of(scx_bpf_task_cpu(p))];
}

s32 BPF_STRUCT_OPS_SLEEPABLE(llcv_init)
{
	u32 i;

	if (nr_llcs > MAX_LLCS) {
		scx_bpf_error("%u LLCs, at most %d", nr_llcs, MAX_LLCS);
		return -EINVAL;
	}
	bpf_for(i, 0, nr_llcs) {
		s32 ret = scx_bpf_create_dsq(i, -1);
		if (ret)
			return ret;
	}
	return 0;
}

SCX_OPS_DEFINE(llcv_ops,
	       .select_cpu = (void *)llcv_select_cpu,
	       .enqueue = (void *)llcv_enqueue,
	       .dispatch = (void *)llcv_dispatch,
	       .running = (void *)llcv_running,
	       .stopping = (void *)llcv_stopping,
	       .enable = (void *)llcv_enable,
	       .init = (void *)llcv_init,
	       .name = "llc_vtime");
