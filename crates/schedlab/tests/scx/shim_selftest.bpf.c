/*
 * The shim's maps, helpers and cpumask kfuncs checked from inside a scheduler:
 * `init` runs the checks and fails the load with scx_bpf_error() naming the first
 * that does not hold; then the scheduler runs as a global FIFO whose `running`
 * counts runs per CPU in a per-CPU array and per task in task storage, and whose
 * `tick` checks those counts against each other. tests/ext.rs runs it with --check.
 */
#include <scx/common.bpf.h>

char _license[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, u32);
	__type(value, u64);
} arr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u64));
	__uint(max_entries, 1);
} runs_on_cpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8);
	__type(key, u64);
	__type(value, u32);
} hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 3);
	__type(value, s32);
} q SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK);
	__uint(max_entries, 3);
	__type(value, s32);
} st SEC(".maps");

struct task_ctx {
	u64 runs;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} tctx SEC(".maps");

const volatile u32 expect_cpus;
u64 total_runs;

#define CHECK(cond)                                                  \
	do {                                                         \
		if (!(cond)) {                                       \
			scx_bpf_error("shim check failed: %s", #cond); \
			return -EINVAL;                              \
		}                                                    \
	} while (0)

static s32 check_maps(void)
{
	u32 k = 2, bad = 4;
	u64 v = 7, hk;
	u32 hv;
	s32 x, i;

	/* array: zeroed, in range only, update in place */
	u64 *a = bpf_map_lookup_elem(&arr, &k);
	CHECK(a && *a == 0);
	CHECK(!bpf_map_lookup_elem(&arr, &bad));
	CHECK(bpf_map_update_elem(&arr, &k, &v, BPF_ANY) == 0);
	CHECK(*a == 7);
	CHECK(bpf_map_update_elem(&arr, &k, &v, BPF_NOEXIST) == -EEXIST);

	/* hash: insert, find, NOEXIST/EXIST, full at max_entries, delete */
	for (hk = 0; hk < 8; hk++) {
		hv = (u32)hk * 10;
		CHECK(bpf_map_update_elem(&hash, &hk, &hv, BPF_NOEXIST) == 0);
	}
	hk = 100;
	hv = 1;
	CHECK(bpf_map_update_elem(&hash, &hk, &hv, BPF_ANY) == -E2BIG);
	hk = 5;
	u32 *hp = bpf_map_lookup_elem(&hash, &hk);
	CHECK(hp && *hp == 50);
	CHECK(bpf_map_update_elem(&hash, &hk, &hv, BPF_NOEXIST) == -EEXIST);
	CHECK(bpf_map_delete_elem(&hash, &hk) == 0);
	CHECK(!bpf_map_lookup_elem(&hash, &hk));
	CHECK(bpf_map_delete_elem(&hash, &hk) == -ENOENT);
	hk = 100;
	CHECK(bpf_map_update_elem(&hash, &hk, &hv, BPF_EXIST) == -ENOENT);
	CHECK(bpf_map_update_elem(&hash, &hk, &hv, BPF_ANY) == 0);
	hk = 7;
	hp = bpf_map_lookup_elem(&hash, &hk);
	CHECK(hp && *hp == 70);

	/* queue: FIFO, bounded; stack: LIFO */
	for (i = 1; i <= 3; i++) {
		CHECK(bpf_map_push_elem(&q, &i, 0) == 0);
		CHECK(bpf_map_push_elem(&st, &i, 0) == 0);
	}
	CHECK(bpf_map_push_elem(&q, &i, 0) == -E2BIG);
	CHECK(bpf_map_peek_elem(&q, &x) == 0 && x == 1);
	CHECK(bpf_map_pop_elem(&q, &x) == 0 && x == 1);
	CHECK(bpf_map_pop_elem(&st, &x) == 0 && x == 3);
	CHECK(bpf_map_push_elem(&q, &i, 0) == 0);
	CHECK(bpf_map_pop_elem(&q, &x) == 0 && x == 2);
	CHECK(bpf_map_pop_elem(&q, &x) == 0 && x == 3);
	CHECK(bpf_map_pop_elem(&q, &x) == 0 && x == 4);
	CHECK(bpf_map_pop_elem(&q, &x) == -ENOENT);
	return 0;
}

static s32 check_cpumasks(void)
{
	struct bpf_cpumask *m = bpf_cpumask_create();
	const struct cpumask *all = scx_bpf_get_possible_cpumask();
	s32 ret = 0;

	CHECK(m);
	CHECK(scx_bpf_nr_cpu_ids() == expect_cpus);
	CHECK(bpf_cpumask_weight(all) == expect_cpus);
	CHECK(bpf_cpumask_full(all));
	CHECK(bpf_cpumask_empty(cast_mask(m)));
	bpf_cpumask_set_cpu(1, m);
	bpf_cpumask_set_cpu(3, m);
	CHECK(bpf_cpumask_first(cast_mask(m)) == 1);
	CHECK(bpf_cpumask_first_zero(cast_mask(m)) == 0);
	CHECK(bpf_cpumask_test_cpu(3, cast_mask(m)) && !bpf_cpumask_test_cpu(2, cast_mask(m)));
	CHECK(bpf_cpumask_subset(cast_mask(m), all));
	CHECK(bpf_cpumask_test_and_clear_cpu(1, m) && !bpf_cpumask_test_cpu(1, cast_mask(m)));
	CHECK(bpf_cpumask_weight(cast_mask(m)) == 1);
	scx_bpf_put_cpumask(all);
	bpf_cpumask_release(m);
	return ret;
}

s32 BPF_STRUCT_OPS(self_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool idle = false;
	s32 cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);

	if (idle)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, SCX_SLICE_DFL, 0);
	return cpu;
}

void BPF_STRUCT_OPS(self_enqueue, struct task_struct *p, u64 enq_flags)
{
	scx_bpf_dsq_insert(p, 0, SCX_SLICE_DFL, enq_flags);
}

void BPF_STRUCT_OPS(self_dispatch, s32 cpu, struct task_struct *prev)
{
	scx_bpf_dsq_move_to_local(0);
}

void BPF_STRUCT_OPS(self_running, struct task_struct *p)
{
	u32 zero = 0;
	u64 *c = bpf_map_lookup_elem(&runs_on_cpu, &zero);
	struct task_ctx *t = bpf_task_storage_get(&tctx, p, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!c || !t) {
		scx_bpf_error("per-CPU or task storage lookup failed");
		return;
	}
	(*c)++;
	t->runs++;
	total_runs++;
	if (bpf_task_from_pid(p->pid) != p)
		scx_bpf_error("bpf_task_from_pid(%d) is not the task", p->pid);
}

void BPF_STRUCT_OPS(self_tick, struct task_struct *p)
{
	u32 zero = 0, cpu;
	u64 sum = 0;
	struct task_ctx *t = bpf_task_storage_get(&tctx, p, NULL, 0);

	bpf_for(cpu, 0, scx_bpf_nr_cpu_ids()) {
		u64 *c = bpf_map_lookup_percpu_elem(&runs_on_cpu, &zero, cpu);
		if (c)
			sum += *c;
	}
	if (sum != total_runs)
		scx_bpf_error("per-CPU run counts sum to %llu, not %llu", sum, total_runs);
	if (!t || !t->runs)
		scx_bpf_error("tick on PID %d, which never ran", p->pid);
	/* ops.running runs before rq->curr changes; at a tick p is current. */
	if (!scx_bpf_task_running(p))
		scx_bpf_error("tick: PID %d is not its CPU's current task", p->pid);
	if (scx_bpf_task_cpu(p) != (s32)bpf_get_smp_processor_id())
		scx_bpf_error("tick: PID %d is on CPU %d, not this one", p->pid, scx_bpf_task_cpu(p));
}

s32 BPF_STRUCT_OPS_SLEEPABLE(self_init)
{
	s32 ret = check_maps();
	if (ret)
		return ret;
	ret = check_cpumasks();
	if (ret)
		return ret;
	return scx_bpf_create_dsq(0, -1);
}

SCX_OPS_DEFINE(self_ops,
	       .select_cpu = (void *)self_select_cpu,
	       .enqueue = (void *)self_enqueue,
	       .dispatch = (void *)self_dispatch,
	       .running = (void *)self_running,
	       .tick = (void *)self_tick,
	       .init = (void *)self_init,
	       .name = "shim_selftest");
