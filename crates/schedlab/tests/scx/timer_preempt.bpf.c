/*
 * Preemption by a BPF timer only: tasks run with infinite slices (the tick never
 * ends one), and a 5 ms timer on CPU 0 kicks every CPU with SCX_KICK_PREEMPT, which
 * zeroes the running task's slice and sends it to the back of the shared queue.
 * With `no_timer` set, nothing preempts and each task runs to its end.
 * tests/ext.rs checks the switches this gives, hand-computed.
 */
#include <scx/common.bpf.h>

char _license[] SEC("license") = "GPL";

#define SHARED_DSQ 0
#define PERIOD_NS (5ULL * 1000 * 1000)

const volatile bool no_timer;

struct rr_timer {
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct rr_timer);
} rr_timer SEC(".maps");

u64 nr_fired;

static int rr_timerfn(void *map, int *key, struct bpf_timer *timer)
{
	u32 cpu;

	if (bpf_get_smp_processor_id() != 0)
		scx_bpf_error("timer ran on CPU %u", bpf_get_smp_processor_id());
	if (*key != 0)
		scx_bpf_error("timer callback got key %d", *key);
	if (bpf_ktime_get_ns() < (nr_fired + 1) * PERIOD_NS)
		scx_bpf_error("timer fired early at %llu", bpf_ktime_get_ns());
	nr_fired++;
	bpf_for(cpu, 0, scx_bpf_nr_cpu_ids())
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	bpf_timer_start(timer, PERIOD_NS, 0);
	return 0;
}

s32 BPF_STRUCT_OPS(rr_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool idle = false;
	s32 cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);

	if (idle)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, SCX_SLICE_INF, 0);
	return cpu;
}

void BPF_STRUCT_OPS(rr_enqueue, struct task_struct *p, u64 enq_flags)
{
	scx_bpf_dsq_insert(p, SHARED_DSQ, SCX_SLICE_INF, enq_flags);
}

void BPF_STRUCT_OPS(rr_dispatch, s32 cpu, struct task_struct *prev)
{
	scx_bpf_dsq_move_to_local(SHARED_DSQ);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(rr_init)
{
	u32 key = 0;
	struct rr_timer *t;
	s32 ret = scx_bpf_create_dsq(SHARED_DSQ, -1);

	if (ret || no_timer)
		return ret;
	t = bpf_map_lookup_elem(&rr_timer, &key);
	if (!t)
		return -ESRCH;
	if (bpf_timer_init(&t->timer, &rr_timer, CLOCK_MONOTONIC) ||
	    bpf_timer_init(&t->timer, &rr_timer, CLOCK_MONOTONIC) != -EBUSY)
		return -EINVAL;
	if (bpf_timer_start(&t->timer, PERIOD_NS, 0) != -EINVAL)
		return -EINVAL; /* no callback yet */
	bpf_timer_set_callback(&t->timer, rr_timerfn);
	return bpf_timer_start(&t->timer, PERIOD_NS, 0);
}

SCX_OPS_DEFINE(rr_ops,
	       .select_cpu = (void *)rr_select_cpu,
	       .enqueue = (void *)rr_enqueue,
	       .dispatch = (void *)rr_dispatch,
	       .init = (void *)rr_init,
	       .name = "timer_preempt");
