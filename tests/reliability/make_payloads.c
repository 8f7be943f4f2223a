/*
 * make_payloads: writes an FXT archive whose every string a viewer shows is
 * a hostile payload, for tests/e2e/payloads.test.mjs.
 *
 *   make_payloads PAYLOADS.txt OUT.fxt
 *
 * PAYLOADS.txt holds one payload a line (at most 64 lines, each under
 * 1000 bytes). With P[i] the i-th payload and n their count, the archive
 * holds (1 tick = 1 ns, times in ns):
 *   provider "P[0] #provider"
 *   process pid 100 "P[1] #process", thread tid 101 "P[2] #thread"
 *     (of pid 100), thread tid 102 "P[3] #thread2"
 *   on thread 101, for each i: a complete slice "P[i] #slice" in category
 *     "P[i] #cat" over [i ms, i ms + 800 us), with the string argument
 *     "P[i] #key" = "P[i] #value"; and a log message "P[i] #log" at
 *     i ms + 100 us
 *   on thread 102: a complete slice "P[3] #t2slice" (category "P[3] #cat2")
 *     over [0, 500 us), an async operation "P[4] #async" (category "P[5]
 *     #acat") over [0, n ms), and a counter "P[6] #counter" with series
 *     "P[7] #series" stepping every ms
 *   context switches on cpu 0 between 101 and 102 every ms
 * The trace ends at n ms.
 *
 * Build: cc -std=c11 -O2 -o make_payloads tests/reliability/make_payloads.c tests/fxt_writer.c
 * Exits 0, 1 on I/O error, 2 on usage.
 */
#include "../fxt_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_PAYLOADS = 64, MS = 1000000 };

static char P[MAX_PAYLOADS][1100];
static int NP;

/* "P[i] tag" as an inline string. */
static struct fxtw_str tagged(int i, const char *tag, char *buf, size_t n)
{
	snprintf(buf, n, "%s %s", P[i % NP], tag);
	return FXTW_INL(buf);
}

static int load(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1100];

	if (f == NULL)
		return -1;
	while (NP < MAX_PAYLOADS && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0])
			snprintf(P[NP++], sizeof(P[0]), "%s", line);
	}
	fclose(f);
	return NP >= 8 ? 0 : -1;
}

static void names(struct fxtw *w)
{
	char a[1200], b[1200];
	struct fxtw_arg arg = fxtw_arg_koid(FXTW_INL("process"), 100);

	fxtw_kernel_object(w, 1, tagged(1, "#process", a, sizeof(a)), 100, NULL, 0);
	fxtw_kernel_object(w, 2, tagged(2, "#thread", a, sizeof(a)), 101, &arg, 1);
	fxtw_kernel_object(w, 2, tagged(3, "#thread2", b, sizeof(b)), 102, &arg, 1);
	fxtw_thread(w, 1, 100, 101);
	fxtw_thread(w, 2, 100, 102);
}

static void events(struct fxtw *w)
{
	char a[1200], b[1200], c[1200], d[1200];
	int i;

	for (i = 0; i < NP; i++) {
		struct fxtw_arg arg = fxtw_arg_str(tagged(i, "#key", c, sizeof(c)), tagged(i, "#value", d, sizeof(d)));
		uint64_t t = (uint64_t)i * MS;

		fxtw_complete(w, FXTW_TIDX(1), tagged(i, "#cat", a, sizeof(a)), tagged(i, "#slice", b, sizeof(b)), t,
			      t + 800000, &arg, 1);
		fxtw_log(w, FXTW_TIDX(1), t + 100000, tagged(i, "#log", a, sizeof(a)).inl);
		fxtw_context_switch(w, 0, 3, t, i % 2 ? 102 : 101, i % 2 ? 101 : 102, NULL, 0);
	}
	fxtw_complete(w, FXTW_TIDX(2), tagged(3, "#cat2", a, sizeof(a)), tagged(3, "#t2slice", b, sizeof(b)), 0, MS / 2,
		      NULL, 0);
	fxtw_async(w, 5, FXTW_TIDX(2), tagged(5, "#acat", a, sizeof(a)), tagged(4, "#async", b, sizeof(b)), 0, 1, NULL,
		   0);
	fxtw_async(w, 7, FXTW_TIDX(2), tagged(5, "#acat", a, sizeof(a)), tagged(4, "#async", b, sizeof(b)),
		   (uint64_t)NP * MS, 1, NULL, 0);
	for (i = 0; i <= NP; i++) {
		struct fxtw_arg v = fxtw_arg_i64(tagged(7, "#series", c, sizeof(c)), i % 5);

		fxtw_counter(w, FXTW_TIDX(2), FXTW_INL("stats"), tagged(6, "#counter", a, sizeof(a)), (uint64_t)i * MS, 1,
			     &v, 1);
	}
}

int main(int argc, char **argv)
{
	char prov[1200];
	struct fxtw w;
	int rc = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: make_payloads PAYLOADS.txt OUT.fxt\n");
		return 2;
	}
	if (load(argv[1]) != 0) {
		fprintf(stderr, "make_payloads: %s: cannot read 8 to 64 payloads\n", argv[1]);
		return 1;
	}
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, tagged(0, "#provider", prov, sizeof(prov)).inl);
	fxtw_init_record(&w, 1000000000);
	names(&w);
	events(&w);
	if (fxtw_save(&w, argv[2]) != 0) {
		perror(argv[2]);
		rc = 1;
	}
	fxtw_fini(&w);
	return rc;
}
