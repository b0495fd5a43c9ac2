/*
 * scx_load: the user-space half of any sched_ext scheduler, for the oracle's guest.
 *
 * A sched_ext scheduler is a BPF object whose struct_ops map is the ops table. Its
 * own user-space program (scx_simple.c and the like) opens the object through a
 * generated skeleton, writes the read-only globals, loads it, attaches the ops and
 * then waits, printing statistics, until it is interrupted or the kernel ejects the
 * scheduler. schedlab runs schedulers from their .bpf.c alone, so the guest needs
 * one loader for all of them. This is it, written against libbpf's generic object
 * API instead of a skeleton:
 *
 *   scx_load OBJ [NAME=VALUE | NAME=V0,V1,... ]...
 *
 * Each NAME is a global of the object (in .rodata, .data or .bss) found through the
 * object's BTF; its bytes are set before load, as a skeleton's `rodata->NAME = v`
 * would. Integers of 1, 2, 4 or 8 bytes and arrays of them are understood; a name
 * that is not a global, or a value that does not fit, is an error (exit 2).
 *
 * Arrays declared with RESIZABLE_ARRAY (their own `.data.NAME` / `.bss.NAME`
 * section) are per-CPU arrays in the kernel's examples, which their loaders resize
 * to the number of possible CPUs before load (scx_central's cpu_gimme_task and
 * cpu_started_at); scx_load does so for every one but the exit dump (`*_dump`).
 *
 * After attach it prints "scx_load: enabled <ops name>" and sleeps until SIGINT or
 * SIGTERM, never waking on its own. Then, if /sys/kernel/sched_ext/state still reads
 * "enabled", it detaches and prints "scx_load: unloaded"; if the kernel disabled the
 * scheduler before (an error, a stall caught by the watchdog), it says so, prints
 * the exit record of the scheduler's `uei` global (kind, reason, message) when the
 * object has one, and exits 1.
 */
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct global {
	struct bpf_map *map; /* the internal map of the section holding it */
	__u32 offset, size;
	__u32 elem_size, nelems; /* nelems 0: a scalar */
	int is_signed;
};

static const struct btf_type *skip_mods(const struct btf *btf, __u32 *id)
{
	const struct btf_type *t = btf__type_by_id(btf, *id);

	while (t && (btf_is_mod(t) || btf_is_typedef(t))) {
		*id = t->type;
		t = btf__type_by_id(btf, *id);
	}
	return t;
}

/* The internal map of the section whose BTF DATASEC is type `id` (an internal map's
 * value type is its section's DATASEC; names are truncated, ids are not). */
static struct bpf_map *section_map(struct bpf_object *obj, __u32 id)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, obj) {
		if (bpf_map__is_internal(map) && bpf_map__btf_value_type_id(map) == id)
			return map;
	}
	return NULL;
}

static int find_global(struct bpf_object *obj, const char *name, struct global *g)
{
	const struct btf *btf = bpf_object__btf(obj);
	__u32 i, n;

	if (!btf)
		return -1;
	n = btf__type_cnt(btf);
	for (i = 1; i < n; i++) {
		const struct btf_type *t = btf__type_by_id(btf, i);
		const struct btf_var_secinfo *vs;
		const char *sec;
		int j;

		if (!btf_is_datasec(t))
			continue;
		sec = btf__name_by_offset(btf, t->name_off);
		if (strcmp(sec, ".rodata") && strcmp(sec, ".data") && strcmp(sec, ".bss"))
			continue;
		vs = btf_var_secinfos(t);
		for (j = 0; j < btf_vlen(t); j++, vs++) {
			const struct btf_type *v = btf__type_by_id(btf, vs->type);
			const struct btf_type *ty;
			__u32 tid;

			if (strcmp(btf__name_by_offset(btf, v->name_off), name))
				continue;
			tid = v->type;
			ty = skip_mods(btf, &tid);
			memset(g, 0, sizeof(*g));
			g->map = section_map(obj, i);
			g->offset = vs->offset;
			g->size = vs->size;
			if (btf_is_array(ty)) {
				const struct btf_array *a = btf_array(ty);
				__u32 eid = a->type;
				const struct btf_type *e = skip_mods(btf, &eid);

				if (!btf_is_int(e) && !btf_is_enum(e))
					return -2;
				g->nelems = a->nelems;
				g->elem_size = e->size;
				g->is_signed = btf_is_int(e) && (btf_int_encoding(e) & BTF_INT_SIGNED);
			} else if (btf_is_int(ty) || btf_is_enum(ty)) {
				g->elem_size = ty->size;
				g->is_signed = btf_is_int(ty) && (btf_int_encoding(ty) & BTF_INT_SIGNED);
			} else {
				return -2;
			}
			return g->map ? 0 : -1;
		}
	}
	return -1;
}

static int fits(long long v, __u32 size, int is_signed)
{
	if (size >= 8)
		return 1;
	if (is_signed) {
		long long lim = 1LL << (size * 8 - 1);
		return v >= -lim && v < lim;
	}
	return v >= 0 && (unsigned long long)v < (1ULL << (size * 8));
}

static int set_global(struct bpf_object *obj, const char *arg)
{
	char name[256];
	const char *eq = strchr(arg, '='), *p;
	struct global g;
	size_t sz;
	char *base;
	__u32 k = 0;
	int rc;

	if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof(name)) {
		fprintf(stderr, "scx_load: `%s`: expected NAME=VALUE\n", arg);
		return -1;
	}
	memcpy(name, arg, eq - arg);
	name[eq - arg] = 0;
	rc = find_global(obj, name, &g);
	if (rc) {
		fprintf(stderr, "scx_load: `%s`: %s\n", name,
			rc == -2 ? "not an integer or an array of integers" :
				   "no such global in .rodata, .data or .bss");
		return -1;
	}
	base = bpf_map__initial_value(g.map, &sz);
	if (!base || g.offset + g.size > sz) {
		fprintf(stderr, "scx_load: `%s`: its section cannot be written\n", name);
		return -1;
	}
	for (p = eq + 1;; k++) {
		char *end;
		long long v;

		errno = 0;
		v = strtoll(p, &end, 0);
		if (errno || end == p || (*end && *end != ',')) {
			fprintf(stderr, "scx_load: `%s`: `%s` is not a list of integers\n", name, eq + 1);
			return -1;
		}
		if ((g.nelems ? k >= g.nelems : k > 0) || !fits(v, g.elem_size, g.is_signed)) {
			fprintf(stderr, "scx_load: `%s`: value %lld (element %u) does not fit\n", name,
				v, k);
			return -1;
		}
		/* Little-endian hosts only (x86_64 guest): the low bytes first. */
		memcpy(base + g.offset + k * g.elem_size, &v, g.elem_size);
		if (!*end)
			break;
		p = end + 1;
	}
	return 0;
}

/* Resize every RESIZABLE_ARRAY but the exit dump to `n` elements. */
static int resize_arrays(struct bpf_object *obj, int n)
{
	const struct btf *btf = bpf_object__btf(obj);
	__u32 i, cnt = btf ? btf__type_cnt(btf) : 0;

	for (i = 1; i < cnt; i++) {
		const struct btf_type *t = btf__type_by_id(btf, i);
		const struct btf_var_secinfo *vs;
		const struct btf_type *v, *ty;
		const char *sec, *name;
		struct bpf_map *map;
		__u32 tid, eid;

		if (!btf_is_datasec(t) || btf_vlen(t) != 1)
			continue;
		sec = btf__name_by_offset(btf, t->name_off);
		if (strncmp(sec, ".data.", 6) && strncmp(sec, ".bss.", 5))
			continue;
		vs = btf_var_secinfos(t);
		v = btf__type_by_id(btf, vs->type);
		name = btf__name_by_offset(btf, v->name_off);
		if (strlen(name) >= 5 && !strcmp(name + strlen(name) - 5, "_dump"))
			continue;
		tid = v->type;
		ty = skip_mods(btf, &tid);
		if (!btf_is_array(ty))
			continue;
		eid = btf_array(ty)->type;
		ty = skip_mods(btf, &eid);
		map = section_map(obj, i);
		if (!map || bpf_map__set_value_size(map, ty->size * n)) {
			fprintf(stderr, "scx_load: cannot resize `%s` to %d elements\n", name, n);
			return -1;
		}
		printf("scx_load: resized %s to %d elements\n", name, n);
	}
	return 0;
}

static void read_state(char *buf, size_t n)
{
	FILE *f = fopen("/sys/kernel/sched_ext/state", "r");

	buf[0] = 0;
	if (!f)
		return;
	if (fgets(buf, n, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/* The scheduler's exit record (`struct user_exit_info uei`), read from its section. */
static void print_exit(struct bpf_object *obj)
{
	const struct btf *btf = bpf_object__btf(obj);
	struct global g;
	size_t sz;
	char *base;
	int kind;

	/* uei is a struct: find_global refuses it, so look up its place by hand. */
	__u32 i, n = btf ? btf__type_cnt(btf) : 0;

	for (i = 1; i < n; i++) {
		const struct btf_type *t = btf__type_by_id(btf, i);
		const struct btf_var_secinfo *vs;
		int j;

		if (!btf_is_datasec(t) || strcmp(btf__name_by_offset(btf, t->name_off), ".data"))
			continue;
		vs = btf_var_secinfos(t);
		for (j = 0; j < btf_vlen(t); j++, vs++) {
			const struct btf_type *v = btf__type_by_id(btf, vs->type);

			if (strcmp(btf__name_by_offset(btf, v->name_off), "uei"))
				continue;
			g.map = section_map(obj, i);
			base = g.map ? bpf_map__initial_value(g.map, &sz) : NULL;
			if (!base || vs->offset + 16 + 128 + 1024 > sz)
				return;
			base += vs->offset;
			memcpy(&kind, base, sizeof(kind));
			printf("scx_load: exit kind %d reason \"%.128s\" msg \"%.1024s\"\n", kind,
			       base + 16, base + 16 + 128);
			return;
		}
	}
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_map *map, *ops = NULL;
	struct bpf_link *link;
	char state[64];
	sigset_t mask, old;
	int i;

	if (argc < 2) {
		fprintf(stderr, "usage: scx_load OBJ [NAME=VALUE]...\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "scx_load: %s: cannot open: %s\n", argv[1], strerror(errno));
		return 2;
	}
	for (i = 2; i < argc; i++)
		if (set_global(obj, argv[i]))
			return 2;
	if (resize_arrays(obj, libbpf_num_possible_cpus()))
		return 2;
	bpf_object__for_each_map(map, obj)
		if (bpf_map__type(map) == BPF_MAP_TYPE_STRUCT_OPS)
			ops = map;
	if (!ops) {
		fprintf(stderr, "scx_load: %s: no struct_ops map (no SCX_OPS_DEFINE?)\n", argv[1]);
		return 2;
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "scx_load: %s: load failed: %s\n", argv[1], strerror(errno));
		return 1;
	}
	/*
	 * Wait without waking: a loader that polls would run on some CPU every period,
	 * and under a scheduler that does not kick idle CPUs (scx_simple) each of those
	 * wake-ups lets an idle CPU pull queued work; the oracle would measure the loader.
	 * Signals are blocked except inside sigsuspend, so none is missed.
	 */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, &old);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	link = bpf_map__attach_struct_ops(ops);
	if (!link) {
		fprintf(stderr, "scx_load: attach failed: %s\n", strerror(errno));
		return 1;
	}
	read_state(state, sizeof(state));
	printf("scx_load: enabled %s (state %s)\n", bpf_map__name(ops), state);
	while (!stop)
		sigsuspend(&old);
	read_state(state, sizeof(state));
	if (strcmp(state, "enabled")) {
		/* The kernel disabled it before we were told to stop: an error or a stall. */
		printf("scx_load: the kernel disabled the scheduler (state %s)\n", state);
		print_exit(obj);
		bpf_link__destroy(link);
		return 1;
	}
	bpf_link__destroy(link);
	printf("scx_load: unloaded\n");
	print_exit(obj);
	return 0;
}
