/*
 * schedlab's native shim for sched_ext schedulers written for Linux v6.12.
 *
 * A sched_ext scheduler is C compiled to BPF: it includes <scx/common.bpf.h>,
 * declares maps and `struct_ops` programs with libbpf's macros, and calls kfuncs
 * that the kernel resolves at load time. schedlab compiles the same source as
 * ordinary C for the host instead, with this directory first on the include path:
 * every name a scheduler expects from the kernel's headers is declared here, the
 * kfuncs and BPF helpers become calls into the simulator (through the function
 * table schedlab hands the loaded object, schedlab_shim.c), maps become plain
 * arrays, hash tables and queues in the object's own memory, and `task_struct`
 * is a view with the fields schedulers read, kept in step with the simulated task
 * around every callback.
 *
 * What is not here is an error at build time that names it: an undeclared helper
 * (implicit declarations are errors), a task field this view lacks, or a kfunc
 * declared here but not provided (a link error naming the symbol). Written for
 * schedlab from the kernel's documented interface (include/linux/sched/ext.h,
 * kernel/sched/ext.c, tools/sched_ext); no kernel code is reproduced.
 */
#ifndef SCHEDLAB_SCX_COMMON_BPF_H
#define SCHEDLAB_SCX_COMMON_BPF_H

/*
 * The scheduler is compiled with the compiler's own headers only (no libc
 * headers: it is not a program of the host), so the error numbers it returns
 * are defined here, with Linux's values.
 */
#ifndef EPERM
#define EPERM 1
#define ENOENT 2
#define ESRCH 3
#define EINTR 4
#define EIO 5
#define ENXIO 6
#define E2BIG 7
#define EBADF 9
#define EAGAIN 11
#define ENOMEM 12
#define EACCES 13
#define EFAULT 14
#define EBUSY 16
#define EEXIST 17
#define ENODEV 19
#define EINVAL 22
#define ENOSPC 28
#define ERANGE 34
#define ENOSYS 38
#define EOPNOTSUPP 95
#define ETIMEDOUT 110
#endif
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCHEDLAB_SHIM 1
/* The ABI between this header and schedlab: bumped when a struct below changes. */
#define SCHEDLAB_SHIM_ABI 1

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;
typedef u8 __u8;
typedef u16 __u16;
typedef u32 __u32;
typedef u64 __u64;
typedef s8 __s8;
typedef s16 __s16;
typedef s32 __s32;
typedef s64 __s64;

/* ---- libbpf's annotations, as no-ops or plain C ------------------------------ */

#define SEC(name)
#define __ksym
#define __kptr
#define __kptr_untrusted
#define __percpu_kptr
#define __rcu
#define __arg_ctx
#define __arg_nonnull
#define __arg_trusted
#define __arg_arena
#define __weak __attribute__((weak))
#define __hidden __attribute__((visibility("hidden")))
#define __always_inline inline __attribute__((always_inline))
#ifndef __noinline
#define __noinline __attribute__((noinline))
#endif
#define __contains(name, node)
#define private(name) __attribute__((aligned(8)))
#define __bpf__ 1

/* Map definitions: each attribute becomes a pointer member whose pointee's size
 * carries the value, so the helper macros below read them at compile time. */
#define __uint(name, val) int (*name)[val]
#define __type(name, val) __typeof__(val) *name; int (*name##_size)[sizeof(val)]
#define __array(name, val) __typeof__(val) *name[]

#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PERCPU_HASH 5
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_LRU_HASH 9
#define BPF_MAP_TYPE_LRU_PERCPU_HASH 10
#define BPF_MAP_TYPE_ARRAY_OF_MAPS 12
#define BPF_MAP_TYPE_QUEUE 22
#define BPF_MAP_TYPE_STACK 23
#define BPF_MAP_TYPE_TASK_STORAGE 29

#define BPF_ANY 0
#define BPF_NOEXIST 1
#define BPF_EXIST 2
#define BPF_F_NO_PREALLOC (1U << 0)
#define BPF_LOCAL_STORAGE_GET_F_CREATE (1ULL << 0)
#define BPF_MAX_LOOPS (8 * 1024 * 1024)

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define __maybe_unused __attribute__((__unused__))
#define barrier() __atomic_signal_fence(__ATOMIC_SEQ_CST)
#define READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, val) ((*(volatile __typeof__(x) *)&(x)) = (val))
#ifndef container_of
#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#endif
#ifndef min
#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))
#endif

/* CO-RE: the native view is the only layout, so every field and value exists. */
#define bpf_core_field_exists(field) 1
#define bpf_core_type_exists(type) 1
#define bpf_core_enum_value_exists(type, value) 1
#define bpf_core_read(dst, sz, src) (__builtin_memcpy((dst), (src), (sz)), 0)
#define BPF_CORE_READ(src, a) ((src)->a)
#define bpf_ksym_exists(sym) (!!(sym))

/* Open-coded loops: plain C loops natively. */
#define bpf_for(i, start, end) for ((i) = (start); (i) < (end); (i)++)
#define bpf_repeat(n) for (long ___schedlab_rep = 0; ___schedlab_rep < (long)(n); ___schedlab_rep++)

/* ---- the kernel's view ------------------------------------------------------- */

#define PF_EXITING 0x00000004
#define PF_WQ_WORKER 0x00000020
#define PF_KTHREAD 0x00200000
#define CLOCK_MONOTONIC 1
#define TASK_COMM_LEN 16
#define NR_CPUS 1024

struct cpumask {
	unsigned long bits[NR_CPUS / 64];
};
typedef struct cpumask cpumask_t;

/* A cpumask BPF owns (bpf_cpumask_create). */
struct bpf_cpumask {
	struct cpumask cpumask;
	int usage;
};

struct sched_entity {
	u64 exec_start;
	u64 sum_exec_runtime;
	u64 prev_sum_exec_runtime;
	u64 vruntime;
};

/* `struct sched_ext_entity`: BPF may write `slice`, `dsq_vtime` and `disallow`. */
struct sched_ext_entity {
	u64 dsq_vtime;
	u64 slice;
	u32 weight;
	u32 flags;
	s32 sticky_cpu;
	s32 holding_cpu;
	unsigned long runnable_at;
	u64 core_sched_at;
	u64 ddsp_dsq_id;
	u64 ddsp_enq_flags;
	bool disallow;
};

struct task_struct {
	s32 pid;
	s32 tgid;
	u32 flags;
	s32 prio;
	s32 static_prio;
	s32 normal_prio;
	u32 policy;
	s32 nr_cpus_allowed;
	u16 migration_disabled;
	char comm[TASK_COMM_LEN];
	const struct cpumask *cpus_ptr;
	struct cpumask cpus_mask;
	struct sched_entity se;
	struct sched_ext_entity scx;
};

static inline bool is_migration_disabled(const struct task_struct *p)
{
	return p->migration_disabled != 0;
}

/* ---- sched_ext's constants (include/linux/sched/ext.h, kernel/sched/ext.c) ---- */

#define SCX_SLICE_DFL (20ULL * 1000 * 1000)
#define SCX_SLICE_INF (~0ULL)
#define SCX_DSQ_FLAG_BUILTIN (1ULL << 63)
#define SCX_DSQ_FLAG_LOCAL_ON (1ULL << 62)
#define SCX_DSQ_INVALID (SCX_DSQ_FLAG_BUILTIN | 0)
#define SCX_DSQ_GLOBAL (SCX_DSQ_FLAG_BUILTIN | 1)
#define SCX_DSQ_LOCAL (SCX_DSQ_FLAG_BUILTIN | 2)
#define SCX_DSQ_LOCAL_ON (SCX_DSQ_FLAG_BUILTIN | SCX_DSQ_FLAG_LOCAL_ON)
#define SCX_DSQ_LOCAL_CPU_MASK 0xffffffffULL

enum scx_enq_flags {
	SCX_ENQ_WAKEUP = 1ULL << 0,
	SCX_ENQ_HEAD = 1ULL << 4,
	SCX_ENQ_CPU_SELECTED = 1ULL << 10,
	SCX_ENQ_PREEMPT = 1ULL << 32,
	SCX_ENQ_REENQ = 1ULL << 40,
	SCX_ENQ_LAST = 1ULL << 41,
};
enum scx_deq_flags {
	SCX_DEQ_SLEEP = 1ULL << 0,
	SCX_DEQ_CORE_SCHED_EXEC = 1ULL << 32,
};
enum scx_wake_flags {
	SCX_WAKE_FORK = 0x04,
	SCX_WAKE_TTWU = 0x08,
	SCX_WAKE_SYNC = 0x10,
};
enum scx_kick_flags {
	SCX_KICK_IDLE = 1LLU << 0,
	SCX_KICK_PREEMPT = 1LLU << 1,
	SCX_KICK_WAIT = 1LLU << 2,
};
enum scx_pick_idle_cpu_flags {
	SCX_PICK_IDLE_CORE = 1LLU << 0,
};
enum scx_ops_flags {
	SCX_OPS_KEEP_BUILTIN_IDLE = 1LLU << 0,
	SCX_OPS_ENQ_LAST = 1LLU << 1,
	SCX_OPS_ENQ_EXITING = 1LLU << 2,
	SCX_OPS_SWITCH_PARTIAL = 1LLU << 3,
	SCX_OPS_HAS_CGROUP_WEIGHT = 1LLU << 16,
};
enum scx_exit_kind {
	SCX_EXIT_NONE,
	SCX_EXIT_DONE,
	SCX_EXIT_UNREG = 64,
	SCX_EXIT_UNREG_BPF,
	SCX_EXIT_UNREG_KERN,
	SCX_EXIT_SYSRQ,
	SCX_EXIT_ERROR = 1024,
	SCX_EXIT_ERROR_BPF,
	SCX_EXIT_ERROR_STALL,
};
enum scx_dsq_iter_flags {
	SCX_DSQ_ITER_REV = 1U << 16,
};
#define SCX_CPUPERF_ONE 1024

struct scx_exit_info {
	enum scx_exit_kind kind;
	s64 exit_code;
	const char *reason;
	unsigned long *bt;
	u32 bt_len;
	char *msg;
	char *dump;
};
struct scx_init_task_args {
	bool fork;
	struct cgroup *cgroup;
};
struct scx_exit_task_args {
	bool cancelled;
};
struct scx_cpu_acquire_args {
	int __unused;
};
struct scx_cpu_release_args {
	int reason;
	struct task_struct *task;
};
struct scx_dump_ctx {
	enum scx_exit_kind kind;
	s64 exit_code;
	const char *reason;
	u64 at_ns;
	u64 at_jiffies;
};
struct cgroup;
struct rq;
struct bpf_iter_scx_dsq {
	u64 __opaque[6];
};

/* `struct sched_ext_ops`: the callbacks schedlab calls (others are refused at
 * load), and the scheduler's settings. */
struct sched_ext_ops {
	s32 (*select_cpu)(struct task_struct *p, s32 prev_cpu, u64 wake_flags);
	void (*enqueue)(struct task_struct *p, u64 enq_flags);
	void (*dequeue)(struct task_struct *p, u64 deq_flags);
	void (*dispatch)(s32 cpu, struct task_struct *prev);
	void (*tick)(struct task_struct *p);
	void (*runnable)(struct task_struct *p, u64 enq_flags);
	void (*running)(struct task_struct *p);
	void (*stopping)(struct task_struct *p, bool runnable);
	void (*quiescent)(struct task_struct *p, u64 deq_flags);
	bool (*yield)(struct task_struct *from, struct task_struct *to);
	bool (*core_sched_before)(struct task_struct *a, struct task_struct *b);
	void (*set_weight)(struct task_struct *p, u32 weight);
	void (*set_cpumask)(struct task_struct *p, const struct cpumask *cpumask);
	void (*update_idle)(s32 cpu, bool idle);
	void (*cpu_acquire)(s32 cpu, struct scx_cpu_acquire_args *args);
	void (*cpu_release)(s32 cpu, struct scx_cpu_release_args *args);
	s32 (*init_task)(struct task_struct *p, struct scx_init_task_args *args);
	void (*exit_task)(struct task_struct *p, struct scx_exit_task_args *args);
	void (*enable)(struct task_struct *p);
	void (*disable)(struct task_struct *p);
	void (*dump)(struct scx_dump_ctx *ctx);
	void (*dump_cpu)(struct scx_dump_ctx *ctx, s32 cpu, bool idle);
	void (*dump_task)(struct scx_dump_ctx *ctx, struct task_struct *p);
	s32 (*cgroup_init)(struct cgroup *cgrp, void *args);
	void (*cgroup_exit)(struct cgroup *cgrp);
	s32 (*cgroup_prep_move)(struct task_struct *p, struct cgroup *from, struct cgroup *to);
	void (*cgroup_move)(struct task_struct *p, struct cgroup *from, struct cgroup *to);
	void (*cgroup_cancel_move)(struct task_struct *p, struct cgroup *from, struct cgroup *to);
	void (*cgroup_set_weight)(struct cgroup *cgrp, u32 weight);
	void (*cpu_online)(s32 cpu);
	void (*cpu_offline)(s32 cpu);
	s32 (*init)(void);
	void (*exit)(struct scx_exit_info *info);
	u32 dispatch_max_batch;
	u64 flags;
	u32 timeout_ms;
	u32 exit_dump_len;
	u64 hotplug_seq;
	char name[128];
};

/* ---- kfuncs: v6.12 names, and the v6.13 renames schedulers written since use -- */

s32 scx_bpf_create_dsq(u64 dsq_id, s32 node);
void scx_bpf_destroy_dsq(u64 dsq_id);
s32 scx_bpf_select_cpu_dfl(struct task_struct *p, s32 prev_cpu, u64 wake_flags, bool *is_idle);
void scx_bpf_dispatch(struct task_struct *p, u64 dsq_id, u64 slice, u64 enq_flags);
void scx_bpf_dispatch_vtime(struct task_struct *p, u64 dsq_id, u64 slice, u64 vtime, u64 enq_flags);
void scx_bpf_dsq_insert(struct task_struct *p, u64 dsq_id, u64 slice, u64 enq_flags);
void scx_bpf_dsq_insert_vtime(struct task_struct *p, u64 dsq_id, u64 slice, u64 vtime, u64 enq_flags);
u32 scx_bpf_dispatch_nr_slots(void);
void scx_bpf_dispatch_cancel(void);
bool scx_bpf_consume(u64 dsq_id);
bool scx_bpf_dsq_move_to_local(u64 dsq_id);
void scx_bpf_kick_cpu(s32 cpu, u64 flags);
s32 scx_bpf_dsq_nr_queued(u64 dsq_id);
bool scx_bpf_test_and_clear_cpu_idle(s32 cpu);
s32 scx_bpf_pick_idle_cpu(const cpumask_t *cpus_allowed, u64 flags);
s32 scx_bpf_pick_any_cpu(const cpumask_t *cpus_allowed, u64 flags);
const struct cpumask *scx_bpf_get_idle_cpumask(void);
const struct cpumask *scx_bpf_get_idle_smtmask(void);
void scx_bpf_put_idle_cpumask(const struct cpumask *cpumask);
const struct cpumask *scx_bpf_get_possible_cpumask(void);
const struct cpumask *scx_bpf_get_online_cpumask(void);
void scx_bpf_put_cpumask(const struct cpumask *cpumask);
bool scx_bpf_task_running(const struct task_struct *p);
s32 scx_bpf_task_cpu(const struct task_struct *p);
u32 scx_bpf_nr_cpu_ids(void);
u32 scx_bpf_cpuperf_cap(s32 cpu);
u32 scx_bpf_cpuperf_cur(s32 cpu);
void scx_bpf_cpuperf_set(s32 cpu, u32 perf);

/* Declared so a scheduler using them compiles; not provided yet, so the link
 * names them (weak: `bpf_ksym_exists` sees them missing, as on an older kernel). */
u32 scx_bpf_reenqueue_local(void) __weak;
struct rq *scx_bpf_cpu_rq(s32 cpu) __weak;
struct cgroup *scx_bpf_task_cgroup(struct task_struct *p) __weak;
int bpf_iter_scx_dsq_new(struct bpf_iter_scx_dsq *it, u64 dsq_id, u64 flags) __weak;
struct task_struct *bpf_iter_scx_dsq_next(struct bpf_iter_scx_dsq *it) __weak;
void bpf_iter_scx_dsq_destroy(struct bpf_iter_scx_dsq *it) __weak;
void scx_bpf_dispatch_from_dsq_set_slice(struct bpf_iter_scx_dsq *it, u64 slice) __weak;
void scx_bpf_dispatch_from_dsq_set_vtime(struct bpf_iter_scx_dsq *it, u64 vtime) __weak;
bool scx_bpf_dispatch_from_dsq(struct bpf_iter_scx_dsq *it, struct task_struct *p, u64 dsq_id, u64 enq_flags) __weak;
bool scx_bpf_dispatch_vtime_from_dsq(struct bpf_iter_scx_dsq *it, struct task_struct *p, u64 dsq_id, u64 enq_flags) __weak;

/* Errors, exits and dumps take a printf format natively. */
void __schedlab_scx_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void __schedlab_scx_exit(s64 code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void __schedlab_scx_dump(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define scx_bpf_error(fmt, args...) __schedlab_scx_error(fmt, ##args)
#define scx_bpf_exit(code, fmt, args...) __schedlab_scx_exit(code, fmt, ##args)
#define scx_bpf_dump(fmt, args...) __schedlab_scx_dump(fmt, ##args)
#define bpf_printk(fmt, args...) __schedlab_scx_dump(fmt, ##args)

/* ---- generic kfuncs and helpers ----------------------------------------------- */

struct task_struct *bpf_task_from_pid(s32 pid);
struct task_struct *bpf_task_acquire(struct task_struct *p);
void bpf_task_release(struct task_struct *p);
void bpf_rcu_read_lock(void);
void bpf_rcu_read_unlock(void);

struct bpf_cpumask *bpf_cpumask_create(void);
struct bpf_cpumask *bpf_cpumask_acquire(struct bpf_cpumask *cpumask);
void bpf_cpumask_release(struct bpf_cpumask *cpumask);
u32 bpf_cpumask_first(const struct cpumask *cpumask);
u32 bpf_cpumask_first_zero(const struct cpumask *cpumask);
void bpf_cpumask_set_cpu(u32 cpu, struct bpf_cpumask *cpumask);
void bpf_cpumask_clear_cpu(u32 cpu, struct bpf_cpumask *cpumask);
bool bpf_cpumask_test_cpu(u32 cpu, const struct cpumask *cpumask);
bool bpf_cpumask_test_and_set_cpu(u32 cpu, struct bpf_cpumask *cpumask);
bool bpf_cpumask_test_and_clear_cpu(u32 cpu, struct bpf_cpumask *cpumask);
void bpf_cpumask_setall(struct bpf_cpumask *cpumask);
void bpf_cpumask_clear(struct bpf_cpumask *cpumask);
bool bpf_cpumask_and(struct bpf_cpumask *dst, const struct cpumask *src1, const struct cpumask *src2);
void bpf_cpumask_or(struct bpf_cpumask *dst, const struct cpumask *src1, const struct cpumask *src2);
void bpf_cpumask_xor(struct bpf_cpumask *dst, const struct cpumask *src1, const struct cpumask *src2);
bool bpf_cpumask_equal(const struct cpumask *src1, const struct cpumask *src2);
bool bpf_cpumask_intersects(const struct cpumask *src1, const struct cpumask *src2);
bool bpf_cpumask_subset(const struct cpumask *src1, const struct cpumask *src2);
bool bpf_cpumask_empty(const struct cpumask *cpumask);
bool bpf_cpumask_full(const struct cpumask *cpumask);
void bpf_cpumask_copy(struct bpf_cpumask *dst, const struct cpumask *src);
u32 bpf_cpumask_any_distribute(const struct cpumask *cpumask);
u32 bpf_cpumask_any_and_distribute(const struct cpumask *src1, const struct cpumask *src2);
u32 bpf_cpumask_weight(const struct cpumask *cpumask);
struct bpf_cpumask *bpf_kptr_xchg_cpumask(struct bpf_cpumask **dst, struct bpf_cpumask *val);
#define bpf_kptr_xchg(dst, val) __atomic_exchange_n((dst), (val), __ATOMIC_SEQ_CST)

static __always_inline const struct cpumask *cast_mask(struct bpf_cpumask *mask)
{
	return (const struct cpumask *)mask;
}

/* BPF timers: an hrtimer of the CPU that starts it; the callback gets the map,
 * the key and the value of the element holding the timer. */
struct bpf_timer {
	u64 __opaque[2];
} __attribute__((aligned(8)));
enum {
	BPF_F_TIMER_ABS = 1ULL << 0,
	BPF_F_TIMER_CPU_PIN = 1ULL << 1,
};
long bpf_timer_init(struct bpf_timer *timer, void *map, u64 flags);
long bpf_timer_set_callback(struct bpf_timer *timer, void *callback_fn);
long bpf_timer_start(struct bpf_timer *timer, u64 nsecs, u64 flags);
long bpf_timer_cancel(struct bpf_timer *timer);

u64 bpf_ktime_get_ns(void);
u64 bpf_ktime_get_boot_ns(void);
u32 bpf_get_smp_processor_id(void);
u32 bpf_get_prandom_u32(void);
long bpf_probe_read_kernel(void *dst, u32 size, const void *src);
long bpf_probe_read_kernel_str(void *dst, u32 size, const void *src);

/* Maps: a helper receives the map's address (its identity) and its attributes. */
void *__schedlab_map_lookup(void *map, int type, u32 key_size, u32 value_size, u32 max_entries,
			    const void *key, s32 cpu);
long __schedlab_map_update(void *map, int type, u32 key_size, u32 value_size, u32 max_entries,
			   const void *key, const void *value, u64 flags);
long __schedlab_map_delete(void *map, int type, u32 key_size, u32 value_size, u32 max_entries,
			   const void *key);
long __schedlab_map_push(void *map, int type, u32 value_size, u32 max_entries, const void *value,
			 u64 flags);
long __schedlab_map_pop(void *map, int type, u32 value_size, u32 max_entries, void *value, bool peek);
void *__schedlab_task_storage_get(void *map, u32 value_size, struct task_struct *p, void *value,
				  u64 flags);
long __schedlab_task_storage_delete(void *map, struct task_struct *p);

#define __SCHEDLAB_ATTR(m, attr) ((u32)(sizeof(*(m)->attr) / sizeof(int)))
#define __SCHEDLAB_KV(m)                                                                    \
	(void *)(m), (int)__SCHEDLAB_ATTR(m, type), __SCHEDLAB_ATTR(m, key_size),           \
		__SCHEDLAB_ATTR(m, value_size), __SCHEDLAB_ATTR(m, max_entries)
#define __SCHEDLAB_V(m)                                                                     \
	(void *)(m), (int)__SCHEDLAB_ATTR(m, type), __SCHEDLAB_ATTR(m, value_size),         \
		__SCHEDLAB_ATTR(m, max_entries)

#define bpf_map_lookup_elem(m, key) __schedlab_map_lookup(__SCHEDLAB_KV(m), (key), -1)
#define bpf_map_lookup_percpu_elem(m, key, cpu) __schedlab_map_lookup(__SCHEDLAB_KV(m), (key), (s32)(cpu))
#define bpf_map_update_elem(m, key, value, flags) __schedlab_map_update(__SCHEDLAB_KV(m), (key), (value), (flags))
#define bpf_map_delete_elem(m, key) __schedlab_map_delete(__SCHEDLAB_KV(m), (key))
#define bpf_map_push_elem(m, value, flags) __schedlab_map_push(__SCHEDLAB_V(m), (value), (flags))
#define bpf_map_pop_elem(m, value) __schedlab_map_pop(__SCHEDLAB_V(m), (value), false)
#define bpf_map_peek_elem(m, value) __schedlab_map_pop(__SCHEDLAB_V(m), (value), true)
#define bpf_task_storage_get(m, p, value, flags)                                            \
	__schedlab_task_storage_get((void *)(m), __SCHEDLAB_ATTR(m, value_size), (p), (value), (flags))
#define bpf_task_storage_delete(m, p) __schedlab_task_storage_delete((void *)(m), (p))

/* ---- the struct_ops glue ------------------------------------------------------- */

/* A callback is an ordinary function natively. */
#define BPF_STRUCT_OPS(name, args...) name(args)
#define BPF_STRUCT_OPS_SLEEPABLE(name, args...) name(args)
#define BPF_PROG(name, args...) name(args)

/* The scheduler's ops table, found by the shim when schedlab loads the object. */
#define SCX_OPS_DEFINE(__name, ...)                                                          \
	struct sched_ext_ops __name = { __VA_ARGS__ };                                       \
	struct sched_ext_ops *const __schedlab_scx_ops = &__name

/* Arrays user space resizes before loading (to nr_cpus, in every scheduler that
 * uses them): NR_CPUS elements natively. */
#define RESIZABLE_ARRAY(elfsec, arr) arr[NR_CPUS]
/* The verifier-friendly member and element pointers: bounds checks natively. */
#define MEMBER_VPTR(base, member)                                                           \
	((__typeof__((base)member) *)((size_t)((char *)&((base)member) - (char *)&(base)) <=  \
						  sizeof(base) - sizeof((base)member)         \
					  ? &((base)member)                                   \
					  : NULL))
#define ARRAY_ELEM_PTR(arr, i, n)                                                           \
	((__typeof__((arr)[i]) *)((u64)(i) < (u64)(n) ? &(arr)[i] : NULL))

/* ---- user_exit_info ------------------------------------------------------------ */

enum uei_sizes {
	UEI_REASON_LEN = 128,
	UEI_MSG_LEN = 1024,
	UEI_DUMP_DFL_LEN = 32768,
};
struct user_exit_info {
	int kind;
	s64 exit_code;
	char reason[UEI_REASON_LEN];
	char msg[UEI_MSG_LEN];
};
void __schedlab_uei_record(struct user_exit_info *uei, const struct scx_exit_info *ei);
#define UEI_DEFINE(__name)                                                                   \
	char __name##_dump[1];                                                               \
	const volatile u32 __name##_dump_len;                                                \
	struct user_exit_info __name
#define UEI_RECORD(__name, __ei) __schedlab_uei_record(&(__name), (__ei))

static inline u32 log2_u32(u32 v)
{
	return v ? 31 - __builtin_clz(v) : 0;
}
static inline u32 log2_u64(u64 v)
{
	return v ? 63 - __builtin_clzll(v) : 0;
}

#include "compat.bpf.h"

#endif /* SCHEDLAB_SCX_COMMON_BPF_H */
