/*
 * schedlab's shim runtime, compiled into every native scheduler object beside the
 * scheduler's own source.
 *
 * In the kernel a sched_ext scheduler's kfuncs run in ext.c, its helpers in the
 * BPF core, and its maps live in kernel memory. Here the kfuncs are forwarded to
 * schedlab through a table of functions it passes at load (`schedlab_shim_attach`),
 * and the maps are kept in this object's own memory: arrays and per-CPU arrays
 * as flat zeroed storage, hash maps as open-addressing tables of `max_entries`
 * entries, queues and stacks as rings, task storage as one block per pid. A map
 * is created the first time a helper names it, from the attributes its definition
 * carries. Every loaded instance has its own globals and maps, so two runs never
 * share state, and nothing here reads a clock or a random source: the same
 * callbacks give the same answers.
 */
#include <scx/common.bpf.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The functions schedlab provides; `ctx` is its own state. */
struct schedlab_host {
	u32 abi;
	void *ctx;
	u64 (*now)(void *ctx);
	s32 (*cpu)(void *ctx);
	u32 (*nr_cpus)(void *ctx);
	s32 (*create_dsq)(void *ctx, u64 id, s32 node);
	void (*destroy_dsq)(void *ctx, u64 id);
	s32 (*select_cpu_dfl)(void *ctx, struct task_struct *p, s32 prev_cpu, u64 wake_flags,
			      bool *is_idle);
	void (*dispatch)(void *ctx, struct task_struct *p, u64 dsq_id, u64 slice, u64 vtime,
			 u64 enq_flags, bool vtime_ordered);
	u32 (*dispatch_nr_slots)(void *ctx);
	void (*dispatch_cancel)(void *ctx);
	bool (*consume)(void *ctx, u64 dsq_id);
	void (*kick_cpu)(void *ctx, s32 cpu, u64 flags);
	s32 (*dsq_nr_queued)(void *ctx, u64 dsq_id);
	bool (*test_and_clear_cpu_idle)(void *ctx, s32 cpu);
	s32 (*pick_idle_cpu)(void *ctx, const struct cpumask *allowed, u64 flags);
	s32 (*pick_any_cpu)(void *ctx, const struct cpumask *allowed, u64 flags);
	void (*idle_mask)(void *ctx, struct cpumask *out, bool smt);
	u32 (*any_distribute)(void *ctx, const struct cpumask *a, const struct cpumask *b);
	bool (*task_running)(void *ctx, const struct task_struct *p);
	s32 (*task_cpu)(void *ctx, const struct task_struct *p);
	struct task_struct *(*task_from_pid)(void *ctx, s32 pid);
	u32 (*cpuperf_cap)(void *ctx, s32 cpu);
	u32 (*cpuperf_cur)(void *ctx, s32 cpu);
	void (*cpuperf_set)(void *ctx, s32 cpu, u32 perf);
	void (*error)(void *ctx, const char *msg);
	void (*exit)(void *ctx, s64 code, const char *msg);
	void (*timer_start)(void *ctx, u32 id, u64 at_ns);
	void (*timer_cancel)(void *ctx, u32 id);
};

extern struct sched_ext_ops *const __schedlab_scx_ops;

static const struct schedlab_host *H;

#define SHIM_EXPORT __attribute__((visibility("default")))

/* The layout schedlab checks its own view against: sizes and field offsets. */
SHIM_EXPORT void schedlab_shim_layout(u64 out[16])
{
	out[0] = sizeof(struct task_struct);
	out[1] = offsetof(struct task_struct, pid);
	out[2] = offsetof(struct task_struct, flags);
	out[3] = offsetof(struct task_struct, nr_cpus_allowed);
	out[4] = offsetof(struct task_struct, comm);
	out[5] = offsetof(struct task_struct, cpus_ptr);
	out[6] = offsetof(struct task_struct, cpus_mask);
	out[7] = offsetof(struct task_struct, se.sum_exec_runtime);
	out[8] = offsetof(struct task_struct, scx.dsq_vtime);
	out[9] = offsetof(struct task_struct, scx.slice);
	out[10] = offsetof(struct task_struct, scx.weight);
	out[11] = offsetof(struct task_struct, scx.disallow);
	out[12] = sizeof(struct sched_ext_ops);
	out[13] = offsetof(struct sched_ext_ops, dispatch_max_batch);
	out[14] = offsetof(struct sched_ext_ops, name);
	out[15] = sizeof(struct schedlab_host);
}

SHIM_EXPORT struct sched_ext_ops *schedlab_shim_attach(const struct schedlab_host *host)
{
	if (host->abi != SCHEDLAB_SHIM_ABI)
		return NULL;
	H = host;
	return __schedlab_scx_ops;
}

/* ---- kfuncs --------------------------------------------------------------------- */

s32 scx_bpf_create_dsq(u64 dsq_id, s32 node) { return H->create_dsq(H->ctx, dsq_id, node); }
void scx_bpf_destroy_dsq(u64 dsq_id) { H->destroy_dsq(H->ctx, dsq_id); }
s32 scx_bpf_select_cpu_dfl(struct task_struct *p, s32 prev_cpu, u64 wake_flags, bool *is_idle)
{
	bool idle = false;
	s32 cpu = H->select_cpu_dfl(H->ctx, p, prev_cpu, wake_flags, &idle);
	*is_idle = idle;
	return cpu;
}
void scx_bpf_dsq_insert(struct task_struct *p, u64 dsq_id, u64 slice, u64 enq_flags)
{
	H->dispatch(H->ctx, p, dsq_id, slice, 0, enq_flags, false);
}
void scx_bpf_dsq_insert_vtime(struct task_struct *p, u64 dsq_id, u64 slice, u64 vtime, u64 enq_flags)
{
	H->dispatch(H->ctx, p, dsq_id, slice, vtime, enq_flags, true);
}
void scx_bpf_dispatch(struct task_struct *p, u64 dsq_id, u64 slice, u64 enq_flags)
{
	scx_bpf_dsq_insert(p, dsq_id, slice, enq_flags);
}
void scx_bpf_dispatch_vtime(struct task_struct *p, u64 dsq_id, u64 slice, u64 vtime, u64 enq_flags)
{
	scx_bpf_dsq_insert_vtime(p, dsq_id, slice, vtime, enq_flags);
}
u32 scx_bpf_dispatch_nr_slots(void) { return H->dispatch_nr_slots(H->ctx); }
void scx_bpf_dispatch_cancel(void) { H->dispatch_cancel(H->ctx); }
bool scx_bpf_dsq_move_to_local(u64 dsq_id) { return H->consume(H->ctx, dsq_id); }
bool scx_bpf_consume(u64 dsq_id) { return H->consume(H->ctx, dsq_id); }
void scx_bpf_kick_cpu(s32 cpu, u64 flags) { H->kick_cpu(H->ctx, cpu, flags); }
s32 scx_bpf_dsq_nr_queued(u64 dsq_id) { return H->dsq_nr_queued(H->ctx, dsq_id); }
bool scx_bpf_test_and_clear_cpu_idle(s32 cpu) { return H->test_and_clear_cpu_idle(H->ctx, cpu); }
s32 scx_bpf_pick_idle_cpu(const cpumask_t *cpus_allowed, u64 flags)
{
	return H->pick_idle_cpu(H->ctx, cpus_allowed, flags);
}
s32 scx_bpf_pick_any_cpu(const cpumask_t *cpus_allowed, u64 flags)
{
	return H->pick_any_cpu(H->ctx, cpus_allowed, flags);
}

/* The masks a getter hands out stay valid until the matching put; one buffer of
 * each kind per object is enough, as the kernel's are read-only snapshots too. */
static struct cpumask idle_buf, smt_buf, possible_buf;

const struct cpumask *scx_bpf_get_idle_cpumask(void)
{
	H->idle_mask(H->ctx, &idle_buf, false);
	return &idle_buf;
}
const struct cpumask *scx_bpf_get_idle_smtmask(void)
{
	H->idle_mask(H->ctx, &smt_buf, true);
	return &smt_buf;
}
void scx_bpf_put_idle_cpumask(const struct cpumask *cpumask) { (void)cpumask; }
const struct cpumask *scx_bpf_get_possible_cpumask(void)
{
	u32 n = H->nr_cpus(H->ctx);
	memset(&possible_buf, 0, sizeof(possible_buf));
	for (u32 i = 0; i < n; i++)
		possible_buf.bits[i / 64] |= 1UL << (i % 64);
	return &possible_buf;
}
const struct cpumask *scx_bpf_get_online_cpumask(void) { return scx_bpf_get_possible_cpumask(); }
void scx_bpf_put_cpumask(const struct cpumask *cpumask) { (void)cpumask; }
bool scx_bpf_task_running(const struct task_struct *p) { return H->task_running(H->ctx, p); }
s32 scx_bpf_task_cpu(const struct task_struct *p) { return H->task_cpu(H->ctx, p); }
u32 scx_bpf_nr_cpu_ids(void) { return H->nr_cpus(H->ctx); }
u32 scx_bpf_cpuperf_cap(s32 cpu) { return H->cpuperf_cap(H->ctx, cpu); }
u32 scx_bpf_cpuperf_cur(s32 cpu) { return H->cpuperf_cur(H->ctx, cpu); }
void scx_bpf_cpuperf_set(s32 cpu, u32 perf) { H->cpuperf_set(H->ctx, cpu, perf); }

static void vformat(char *buf, size_t len, const char *fmt, va_list ap)
{
	vsnprintf(buf, len, fmt, ap);
}

void __schedlab_scx_error(const char *fmt, ...)
{
	char msg[UEI_MSG_LEN];
	va_list ap;
	va_start(ap, fmt);
	vformat(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	H->error(H->ctx, msg);
}
void __schedlab_scx_exit(s64 code, const char *fmt, ...)
{
	char msg[UEI_MSG_LEN];
	va_list ap;
	va_start(ap, fmt);
	vformat(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	H->exit(H->ctx, code, msg);
}
void __schedlab_scx_dump(const char *fmt, ...)
{
	/* Dumps and trace_printk output go nowhere: schedlab's traces are its own. */
	(void)fmt;
}

void __schedlab_uei_record(struct user_exit_info *uei, const struct scx_exit_info *ei)
{
	uei->kind = ei->kind;
	uei->exit_code = ei->exit_code;
	snprintf(uei->reason, sizeof(uei->reason), "%s", ei->reason ? ei->reason : "");
	snprintf(uei->msg, sizeof(uei->msg), "%s", ei->msg ? ei->msg : "");
}

/* ---- generic kfuncs and helpers ------------------------------------------------- */

struct task_struct *bpf_task_from_pid(s32 pid) { return H->task_from_pid(H->ctx, pid); }
struct task_struct *bpf_task_acquire(struct task_struct *p) { return p; }
void bpf_task_release(struct task_struct *p) { (void)p; }
void bpf_rcu_read_lock(void) {}
void bpf_rcu_read_unlock(void) {}

u64 bpf_ktime_get_ns(void) { return H->now(H->ctx); }
u64 bpf_ktime_get_boot_ns(void) { return H->now(H->ctx); }
u32 bpf_get_smp_processor_id(void) { return (u32)H->cpu(H->ctx); }

/* bpf_get_prandom_u32: a per-object xorshift32 from a fixed seed (deterministic). */
static u32 prandom_state = 0x2545f491;
u32 bpf_get_prandom_u32(void)
{
	u32 x = prandom_state;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	prandom_state = x;
	return x;
}
long bpf_probe_read_kernel(void *dst, u32 size, const void *src)
{
	memcpy(dst, src, size);
	return 0;
}
long bpf_probe_read_kernel_str(void *dst, u32 size, const void *src)
{
	if (!size)
		return 0;
	if (!src) {
		((char *)dst)[0] = 0;
		return -EFAULT;
	}
	size_t n = strnlen(src, size - 1);
	memcpy(dst, src, n);
	((char *)dst)[n] = 0;
	return (long)n + 1;
}

/* cpumasks */
static bool bit(const struct cpumask *m, u32 cpu)
{
	return cpu < NR_CPUS && (m->bits[cpu / 64] >> (cpu % 64)) & 1;
}
struct bpf_cpumask *bpf_cpumask_create(void)
{
	struct bpf_cpumask *m = calloc(1, sizeof(*m));
	if (m)
		m->usage = 1;
	return m;
}
struct bpf_cpumask *bpf_cpumask_acquire(struct bpf_cpumask *m)
{
	m->usage++;
	return m;
}
void bpf_cpumask_release(struct bpf_cpumask *m)
{
	if (m && --m->usage == 0)
		free(m);
}
u32 bpf_cpumask_first(const struct cpumask *m)
{
	for (u32 i = 0; i < NR_CPUS; i++)
		if (bit(m, i))
			return i;
	return NR_CPUS;
}
u32 bpf_cpumask_first_zero(const struct cpumask *m)
{
	for (u32 i = 0; i < NR_CPUS; i++)
		if (!bit(m, i))
			return i;
	return NR_CPUS;
}
void bpf_cpumask_set_cpu(u32 cpu, struct bpf_cpumask *m)
{
	if (cpu < NR_CPUS)
		m->cpumask.bits[cpu / 64] |= 1UL << (cpu % 64);
}
void bpf_cpumask_clear_cpu(u32 cpu, struct bpf_cpumask *m)
{
	if (cpu < NR_CPUS)
		m->cpumask.bits[cpu / 64] &= ~(1UL << (cpu % 64));
}
bool bpf_cpumask_test_cpu(u32 cpu, const struct cpumask *m) { return bit(m, cpu); }
bool bpf_cpumask_test_and_set_cpu(u32 cpu, struct bpf_cpumask *m)
{
	bool was = bit(&m->cpumask, cpu);
	bpf_cpumask_set_cpu(cpu, m);
	return was;
}
bool bpf_cpumask_test_and_clear_cpu(u32 cpu, struct bpf_cpumask *m)
{
	bool was = bit(&m->cpumask, cpu);
	bpf_cpumask_clear_cpu(cpu, m);
	return was;
}
void bpf_cpumask_setall(struct bpf_cpumask *m) { memset(&m->cpumask, 0xff, sizeof(m->cpumask)); }
void bpf_cpumask_clear(struct bpf_cpumask *m) { memset(&m->cpumask, 0, sizeof(m->cpumask)); }
bool bpf_cpumask_and(struct bpf_cpumask *d, const struct cpumask *a, const struct cpumask *b)
{
	bool any = false;
	for (int i = 0; i < NR_CPUS / 64; i++)
		any |= (d->cpumask.bits[i] = a->bits[i] & b->bits[i]) != 0;
	return any;
}
void bpf_cpumask_or(struct bpf_cpumask *d, const struct cpumask *a, const struct cpumask *b)
{
	for (int i = 0; i < NR_CPUS / 64; i++)
		d->cpumask.bits[i] = a->bits[i] | b->bits[i];
}
void bpf_cpumask_xor(struct bpf_cpumask *d, const struct cpumask *a, const struct cpumask *b)
{
	for (int i = 0; i < NR_CPUS / 64; i++)
		d->cpumask.bits[i] = a->bits[i] ^ b->bits[i];
}
bool bpf_cpumask_equal(const struct cpumask *a, const struct cpumask *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}
bool bpf_cpumask_intersects(const struct cpumask *a, const struct cpumask *b)
{
	for (int i = 0; i < NR_CPUS / 64; i++)
		if (a->bits[i] & b->bits[i])
			return true;
	return false;
}
bool bpf_cpumask_subset(const struct cpumask *a, const struct cpumask *b)
{
	for (int i = 0; i < NR_CPUS / 64; i++)
		if (a->bits[i] & ~b->bits[i])
			return false;
	return true;
}
bool bpf_cpumask_empty(const struct cpumask *m) { return bpf_cpumask_first(m) == NR_CPUS; }
bool bpf_cpumask_full(const struct cpumask *m)
{
	/* Full over the machine's CPUs (nr_cpumask_bits), not all NR_CPUS bits. */
	u32 n = H->nr_cpus(H->ctx);
	for (u32 i = 0; i < n; i++)
		if (!bit(m, i))
			return false;
	return true;
}
void bpf_cpumask_copy(struct bpf_cpumask *d, const struct cpumask *s) { d->cpumask = *s; }
u32 bpf_cpumask_weight(const struct cpumask *m)
{
	u32 w = 0;
	for (int i = 0; i < NR_CPUS / 64; i++)
		w += __builtin_popcountl(m->bits[i]);
	return w;
}

/* cpumask_any_distribute: the CPU after the one this CPU last returned, wrapping,
 * with the kernel's per-CPU cursor, the one the built-in idle picking also moves. */
static u32 any_distribute(const struct cpumask *a, const struct cpumask *b)
{
	return H->any_distribute(H->ctx, a, b);
}
u32 bpf_cpumask_any_distribute(const struct cpumask *m) { return any_distribute(m, NULL); }
u32 bpf_cpumask_any_and_distribute(const struct cpumask *a, const struct cpumask *b)
{
	return any_distribute(a, b);
}

/* ---- maps ----------------------------------------------------------------------- */

struct shim_map {
	void *def;
	int type;
	u32 key_size, value_size, max_entries;
	/* array, per-CPU array: values; hash: slots of [state][key][value]; queue: ring */
	char *data;
	u32 cap, head, len;
	/* task storage: one block per pid */
	void **blocks;
	u32 nr_blocks;
};

#define MAX_MAPS 64
static struct shim_map maps[MAX_MAPS];
static int nr_maps;

static struct shim_map *map_of(void *def, int type, u32 ks, u32 vs, u32 max)
{
	for (int i = 0; i < nr_maps; i++)
		if (maps[i].def == def)
			return &maps[i];
	if (nr_maps == MAX_MAPS) {
		scx_bpf_error("schedlab shim: more than %d maps", MAX_MAPS);
		return NULL;
	}
	struct shim_map *m = &maps[nr_maps++];
	m->def = def;
	m->type = type;
	m->key_size = ks;
	m->value_size = vs;
	m->max_entries = max;
	switch (type) {
	case BPF_MAP_TYPE_ARRAY:
		m->data = calloc(max ? max : 1, vs);
		break;
	case BPF_MAP_TYPE_PERCPU_ARRAY:
		m->data = calloc((size_t)(max ? max : 1) * H->nr_cpus(H->ctx), vs);
		break;
	case BPF_MAP_TYPE_HASH:
	case BPF_MAP_TYPE_LRU_HASH:
		m->cap = 2;
		while (m->cap < 2 * max)
			m->cap *= 2;
		m->data = calloc(m->cap, 1 + ks + vs);
		break;
	case BPF_MAP_TYPE_QUEUE:
	case BPF_MAP_TYPE_STACK:
		m->data = calloc(max ? max : 1, vs);
		break;
	default:
		scx_bpf_error("schedlab shim: map type %d is not supported", type);
		nr_maps--;
		return NULL;
	}
	return m;
}

static u32 hash_bytes(const void *k, u32 n)
{
	const unsigned char *b = k;
	u32 h = 2166136261u;
	for (u32 i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

/* The slot holding `key`, or the first free one on its probe path (empty: 0,
 * used: 1, deleted: 2). */
static char *hash_slot(struct shim_map *m, const void *key, bool for_insert)
{
	size_t sz = 1 + m->key_size + m->value_size;
	u32 i = hash_bytes(key, m->key_size) & (m->cap - 1);
	char *tomb = NULL;
	for (u32 n = 0; n < m->cap; n++, i = (i + 1) & (m->cap - 1)) {
		char *s = m->data + i * sz;
		if (s[0] == 0)
			return for_insert ? (tomb ? tomb : s) : NULL;
		if (s[0] == 2) {
			if (!tomb)
				tomb = s;
			continue;
		}
		if (memcmp(s + 1, key, m->key_size) == 0)
			return s;
	}
	return for_insert ? tomb : NULL;
}

void *__schedlab_map_lookup(void *def, int type, u32 ks, u32 vs, u32 max, const void *key, s32 cpu)
{
	struct shim_map *m = map_of(def, type, ks, vs, max);
	if (!m)
		return NULL;
	switch (type) {
	case BPF_MAP_TYPE_ARRAY: {
		u32 i = *(const u32 *)key;
		return i < max ? m->data + (size_t)i * vs : NULL;
	}
	case BPF_MAP_TYPE_PERCPU_ARRAY: {
		u32 i = *(const u32 *)key;
		u32 n = H->nr_cpus(H->ctx);
		if (cpu < 0)
			cpu = H->cpu(H->ctx);
		if (i >= max || (u32)cpu >= n)
			return NULL;
		return m->data + ((size_t)cpu * max + i) * vs;
	}
	case BPF_MAP_TYPE_HASH:
	case BPF_MAP_TYPE_LRU_HASH: {
		char *s = hash_slot(m, key, false);
		return s ? s + 1 + ks : NULL;
	}
	default:
		return NULL;
	}
}

long __schedlab_map_update(void *def, int type, u32 ks, u32 vs, u32 max, const void *key,
			   const void *value, u64 flags)
{
	struct shim_map *m = map_of(def, type, ks, vs, max);
	if (!m)
		return -EINVAL;
	if (type == BPF_MAP_TYPE_ARRAY || type == BPF_MAP_TYPE_PERCPU_ARRAY) {
		if (flags == BPF_NOEXIST)
			return -EEXIST;
		void *v = __schedlab_map_lookup(def, type, ks, vs, max, key, -1);
		if (!v)
			return -E2BIG;
		memcpy(v, value, vs);
		return 0;
	}
	if (type != BPF_MAP_TYPE_HASH && type != BPF_MAP_TYPE_LRU_HASH)
		return -EINVAL;
	char *s = hash_slot(m, key, false);
	if (s) {
		if (flags == BPF_NOEXIST)
			return -EEXIST;
	} else {
		if (flags == BPF_EXIST)
			return -ENOENT;
		if (m->len >= max)
			return -E2BIG;
		s = hash_slot(m, key, true);
		if (!s)
			return -E2BIG;
		s[0] = 1;
		memcpy(s + 1, key, ks);
		m->len++;
	}
	memcpy(s + 1 + ks, value, vs);
	return 0;
}

long __schedlab_map_delete(void *def, int type, u32 ks, u32 vs, u32 max, const void *key)
{
	struct shim_map *m = map_of(def, type, ks, vs, max);
	if (!m || (type != BPF_MAP_TYPE_HASH && type != BPF_MAP_TYPE_LRU_HASH))
		return -EINVAL;
	char *s = hash_slot(m, key, false);
	if (!s)
		return -ENOENT;
	s[0] = 2;
	m->len--;
	return 0;
}

long __schedlab_map_push(void *def, int type, u32 vs, u32 max, const void *value, u64 flags)
{
	(void)flags;
	struct shim_map *m = map_of(def, type, 0, vs, max);
	if (!m || (type != BPF_MAP_TYPE_QUEUE && type != BPF_MAP_TYPE_STACK))
		return -EINVAL;
	if (m->len == max)
		return -E2BIG;
	memcpy(m->data + (size_t)((m->head + m->len) % max) * vs, value, vs);
	m->len++;
	return 0;
}

long __schedlab_map_pop(void *def, int type, u32 vs, u32 max, void *value, bool peek)
{
	struct shim_map *m = map_of(def, type, 0, vs, max);
	if (!m || (type != BPF_MAP_TYPE_QUEUE && type != BPF_MAP_TYPE_STACK))
		return -EINVAL;
	if (m->len == 0)
		return -ENOENT;
	u32 at = type == BPF_MAP_TYPE_QUEUE ? m->head : (m->head + m->len - 1) % max;
	memcpy(value, m->data + (size_t)at * vs, vs);
	if (!peek) {
		if (type == BPF_MAP_TYPE_QUEUE)
			m->head = (m->head + 1) % max;
		m->len--;
	}
	return 0;
}

static struct shim_map *storage_of(void *def, u32 vs)
{
	for (int i = 0; i < nr_maps; i++)
		if (maps[i].def == def)
			return &maps[i];
	if (nr_maps == MAX_MAPS)
		return NULL;
	struct shim_map *m = &maps[nr_maps++];
	m->def = def;
	m->type = BPF_MAP_TYPE_TASK_STORAGE;
	m->value_size = vs;
	return m;
}

void *__schedlab_task_storage_get(void *def, u32 vs, struct task_struct *p, void *value, u64 flags)
{
	struct shim_map *m = storage_of(def, vs);
	if (!m || !p || p->pid < 0)
		return NULL;
	u32 pid = (u32)p->pid;
	if (pid >= m->nr_blocks) {
		if (!(flags & BPF_LOCAL_STORAGE_GET_F_CREATE))
			return NULL;
		u32 n = m->nr_blocks ? m->nr_blocks : 64;
		while (n <= pid)
			n *= 2;
		void **b = realloc(m->blocks, n * sizeof(void *));
		if (!b)
			return NULL;
		memset(b + m->nr_blocks, 0, (n - m->nr_blocks) * sizeof(void *));
		m->blocks = b;
		m->nr_blocks = n;
	}
	if (!m->blocks[pid] && (flags & BPF_LOCAL_STORAGE_GET_F_CREATE)) {
		m->blocks[pid] = calloc(1, vs);
		if (m->blocks[pid] && value)
			memcpy(m->blocks[pid], value, vs);
	}
	return m->blocks[pid];
}

long __schedlab_task_storage_delete(void *def, struct task_struct *p)
{
	struct shim_map *m = storage_of(def, 0);
	if (!m || !p || (u32)p->pid >= m->nr_blocks || !m->blocks[p->pid])
		return -ENOENT;
	free(m->blocks[p->pid]);
	m->blocks[p->pid] = NULL;
	return 0;
}

/* ---- BPF timers ---------------------------------------------------------------- */

struct shim_timer {
	struct bpf_timer *timer;
	void *map;
	int (*callback)(void *map, void *key, void *value);
};

#define MAX_TIMERS 256
static struct shim_timer timers[MAX_TIMERS];
static u32 nr_timers;

static s32 timer_id(struct bpf_timer *t)
{
	for (u32 i = 0; i < nr_timers; i++)
		if (timers[i].timer == t)
			return (s32)i;
	return -1;
}

long bpf_timer_init(struct bpf_timer *timer, void *map, u64 flags)
{
	(void)flags;
	if (timer_id(timer) >= 0)
		return -EBUSY;
	if (nr_timers == MAX_TIMERS) {
		scx_bpf_error("schedlab shim: more than %d BPF timers", MAX_TIMERS);
		return -ENOMEM;
	}
	timers[nr_timers].timer = timer;
	timers[nr_timers].map = map;
	timers[nr_timers].callback = NULL;
	nr_timers++;
	return 0;
}

long bpf_timer_set_callback(struct bpf_timer *timer, void *callback_fn)
{
	s32 id = timer_id(timer);
	if (id < 0)
		return -EINVAL;
	timers[id].callback = (int (*)(void *, void *, void *))callback_fn;
	return 0;
}

long bpf_timer_start(struct bpf_timer *timer, u64 nsecs, u64 flags)
{
	s32 id = timer_id(timer);
	if (id < 0 || !timers[id].callback)
		return -EINVAL;
	u64 now = H->now(H->ctx);
	/* A relative expiry past the end of time saturates instead of wrapping. */
	u64 at = flags & BPF_F_TIMER_ABS ? nsecs : nsecs > ~0ULL - now ? ~0ULL : now + nsecs;
	H->timer_start(H->ctx, (u32)id, at);
	return 0;
}

long bpf_timer_cancel(struct bpf_timer *timer)
{
	s32 id = timer_id(timer);
	if (id < 0)
		return -EINVAL;
	H->timer_cancel(H->ctx, (u32)id);
	return 0;
}

/* A timer's expiry: its callback with the map, key and value of the element that
 * holds it (an array element's index is its key; elsewhere the key reads 0). */
SHIM_EXPORT void schedlab_shim_timer_fire(u32 id)
{
	if (id >= nr_timers || !timers[id].callback)
		return;
	struct shim_timer *t = &timers[id];
	u32 key = 0;
	void *value = t->timer;
	for (int i = 0; i < nr_maps; i++) {
		struct shim_map *m = &maps[i];
		if (m->def != t->map || m->type != BPF_MAP_TYPE_ARRAY || !m->value_size)
			continue;
		size_t off = (size_t)((char *)t->timer - m->data);
		if ((char *)t->timer >= m->data && off < (size_t)m->max_entries * m->value_size) {
			key = (u32)(off / m->value_size);
			value = m->data + (size_t)key * m->value_size;
		}
	}
	t->callback(t->map, &key, value);
}

/* Everything this object allocated, released before schedlab unloads it. */
SHIM_EXPORT void schedlab_shim_detach(void)
{
	for (int i = 0; i < nr_maps; i++) {
		free(maps[i].data);
		for (u32 b = 0; b < maps[i].nr_blocks; b++)
			free(maps[i].blocks[b]);
		free(maps[i].blocks);
	}
	nr_maps = 0;
	nr_timers = 0;
	H = NULL;
}
