/*
 * check: compares our decoding of an XRay log (the output of tests/xray/dump)
 * with LLVM's (`llvm-xray convert --output-format=trace_event --symbolize`),
 * thread by thread and slice by slice.
 *
 *   check LLVM.json DUMP.txt
 *
 * LLVM's trace_event output holds, per thread, "B" and "E" events with the
 * time in microseconds as a decimal string ("ts") and the symbolized name;
 * a slice is a B and the E that closes it, its depth the number of slices
 * open when it begins. LLVM drops exits that find the stack empty, and an E
 * is written for every frame an exit closes; calls never exited have a B
 * and no E. Our dump lists the same slices (ns, dur -1 when open).
 *
 * Both sides are compared one to one in the order they come in: LLVM's in
 * the order of the B events (the order of the calls), ours in (start,
 * longest first) order, which is the same order since our times are exact
 * (sorting LLVM's side too would not be: its coarse times tie):
 * the same threads (pid, tid), the same number of slices, and for each the
 * same name, the same depth, and start and duration within TOL_NS (LLVM
 * converts ticks to microseconds through a double, which at today's
 * absolute TSC values is 0.25 us coarse). Prints a summary line per thread
 * and the first few differences; exits 0 when all agree, 1 when not or when
 * an input cannot be read, 2 on usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

enum { TOL_NS = 1000, MAX_REPORTS = 20, MAX_THREADS = 4096 };

struct cslice {
	long long ts, dur; /* ns; dur < 0 while open */
	unsigned depth;
	char name[128];
};

struct cthread {
	unsigned long long pid, tid;
	struct cslice *v;
	size_t n, cap;
	size_t open[256];  /* LLVM side: indexes of open slices, innermost last */
	size_t depth;
};

struct side {
	struct cthread t[MAX_THREADS];
	size_t n;
};

static struct side llvm_side, our_side;

static struct cthread *thread_get(struct side *s, unsigned long long pid, unsigned long long tid)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->t[i].pid == pid && s->t[i].tid == tid)
			return &s->t[i];
	if (s->n == MAX_THREADS)
		return NULL;
	memset(&s->t[s->n], 0, sizeof(s->t[s->n]));
	s->t[s->n].pid = pid;
	s->t[s->n].tid = tid;
	return &s->t[s->n++];
}

/* The thread of side s that is t: the same (pid, tid), else the only one
 * with t's tid (LLVM writes pid 1 for logs before version 3, we write 0).
 * Adds an empty one when there is none. */
static struct cthread *thread_match(struct side *s, const struct cthread *t)
{
	struct cthread *found = NULL;
	size_t i, n = 0;

	for (i = 0; i < s->n; i++) {
		if (s->t[i].pid == t->pid && s->t[i].tid == t->tid)
			return &s->t[i];
		if (s->t[i].tid == t->tid) {
			found = &s->t[i];
			n++;
		}
	}
	return n == 1 ? found : thread_get(s, t->pid, t->tid);
}

static struct cslice *slice_add(struct cthread *t)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		struct cslice *v = realloc(t->v, cap * sizeof(*v));

		if (v == NULL)
			return NULL;
		t->v = v;
		t->cap = cap;
	}
	memset(&t->v[t->n], 0, sizeof(t->v[t->n]));
	return &t->v[t->n++];
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) != NULL) {
		if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		} else {
			buf[n] = '\0';
		}
	}
	fclose(f);
	return buf;
}

/* A decimal number of microseconds ("123.4567") as integer nanoseconds,
 * without a detour through a double (1.8e18 ns do not fit its mantissa). */
static long long us_to_ns(const char *text)
{
	char *s;
	long long ns = strtoll(text, &s, 10) * 1000, scale = 100;
	int neg = text[0] == '-';

	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9' && scale > 0; s++, scale /= 10)
			ns += (neg ? -1 : 1) * (*s - '0') * scale;
	return ns;
}

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* One B or E event of LLVM's output. */
static int llvm_event(const cJSON *e)
{
	const char *ph = jstr(e, "ph"), *name = jstr(e, "name"), *ts = jstr(e, "ts");
	const char *pid = jstr(e, "pid"), *tid = jstr(e, "tid");
	struct cthread *t;
	struct cslice *s;

	if (ph == NULL || name == NULL || ts == NULL || pid == NULL || tid == NULL)
		return -1;
	if ((t = thread_get(&llvm_side, strtoull(pid, NULL, 10), strtoull(tid, NULL, 10))) == NULL)
		return -1;
	if (strcmp(ph, "B") == 0) {
		if (t->depth == 256 || (s = slice_add(t)) == NULL)
			return -1;
		s->ts = us_to_ns(ts);
		s->dur = -1;
		s->depth = (unsigned)t->depth;
		/* without --symbolize LLVM names a function by its bare id */
		snprintf(s->name, sizeof(s->name), "%s%s", strspn(name, "0123456789") == strlen(name) ? "fn#" : "", name);
		t->open[t->depth++] = t->n - 1;
	} else if (strcmp(ph, "E") == 0 && t->depth > 0) {
		s = &t->v[t->open[--t->depth]];
		s->dur = us_to_ns(ts) - s->ts;
	}
	return 0;
}

static int load_llvm(const char *path)
{
	char *text = slurp(path);
	cJSON *root, *events, *e;
	int rc = -1;

	if (text == NULL || (root = cJSON_Parse(text)) == NULL) {
		fprintf(stderr, "check: %s: cannot read or parse\n", path);
		free(text);
		return -1;
	}
	events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
	if (cJSON_IsArray(events)) {
		rc = 0;
		cJSON_ArrayForEach(e, events)
			if (llvm_event(e) != 0)
				rc = -1;
	}
	cJSON_Delete(root);
	free(text);
	return rc;
}

static int load_ours(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int at = 0;
	struct cthread *t = NULL;
	unsigned long long pid, tid;
	long long ts, dur;
	unsigned depth;
	struct cslice *s;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "thread %llu %llu", &pid, &tid) == 2) {
			t = thread_get(&our_side, pid, tid);
		} else if (t != NULL && sscanf(line, "%lld %lld %u %n", &ts, &dur, &depth, &at) == 3) {
			if ((s = slice_add(t)) == NULL)
				break;
			s->ts = ts;
			s->dur = dur;
			s->depth = depth;
			line[strcspn(line, "\n")] = '\0';
			snprintf(s->name, sizeof(s->name), "%s", line + at); /* the rest of the line */
		}
	}
	fclose(f);
	return 0;
}

/* Compares one thread; returns the number of differences. */
static size_t compare_thread(struct cthread *a, struct cthread *b, size_t *reports)
{
	size_t i, bad = 0;

	if (a->n != b->n) {
		printf("thread %llu/%llu: llvm-xray %zu slices, ours %zu\n", a->pid, a->tid, a->n, b->n);
		bad++;
	}
	for (i = 0; i < a->n && i < b->n; i++) {
		const struct cslice *x = &a->v[i], *y = &b->v[i];
		int same = strcmp(x->name, y->name) == 0 && x->depth == y->depth && llabs(x->ts - y->ts) <= TOL_NS &&
			   ((x->dur < 0 && y->dur < 0) || (x->dur >= 0 && y->dur >= 0 && llabs(x->dur - y->dur) <= TOL_NS));

		if (same)
			continue;
		if ((*reports)++ < MAX_REPORTS)
			printf("thread %llu/%llu slice %zu: llvm-xray %s ts %lld dur %lld depth %u; ours %s ts %lld dur %lld depth %u\n",
			       a->pid, a->tid, i, x->name, x->ts, x->dur, x->depth, y->name, y->ts, y->dur, y->depth);
		bad++;
	}
	printf("thread %llu/%llu: %zu slices, %zu differences\n", a->pid, a->tid, a->n, bad);
	return bad;
}

int main(int argc, char **argv)
{
	size_t i, bad = 0, reports = 0, slices = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: check LLVM.json DUMP.txt\n");
		return 2;
	}
	if (load_llvm(argv[1]) != 0 || load_ours(argv[2]) != 0) {
		fprintf(stderr, "check: cannot load the inputs\n");
		return 1;
	}
	for (i = 0; i < llvm_side.n; i++) {
		struct cthread *o = thread_match(&our_side, &llvm_side.t[i]);

		slices += llvm_side.t[i].n;
		bad += compare_thread(&llvm_side.t[i], o, &reports);
	}
	for (i = 0; i < our_side.n; i++)
		if (our_side.t[i].n > 0 && thread_match(&llvm_side, &our_side.t[i])->n == 0) {
			printf("thread %llu/%llu: %zu slices of ours, none in llvm-xray\n", our_side.t[i].pid,
			       our_side.t[i].tid, our_side.t[i].n);
			bad++;
		}
	printf("%s: %zu threads, %zu slices, %zu differences\n", bad ? "FAIL" : "PASS", llvm_side.n, slices, bad);
	return bad ? 1 : 0;
}
