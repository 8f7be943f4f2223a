/*
 * Listing the library: filters, sort orders and pages.
 *
 * A page ends with a cursor naming the last trace shown by its sort key
 * and id; the next page starts strictly after that pair, so traces added
 * or removed between pages neither repeat nor shift what follows.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog_internal.h"

static const char *const sort_names[] = { "created", "name", "size", "duration" };

/* Case-insensitive (ASCII) substring. */
static int contains(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++)
		if (strncasecmp(hay, needle, n) == 0)
			return 1;
	return n == 0;
}

const char *cat_label_value(const struct trace_rec *r, const char *key)
{
	size_t i;

	for (i = 0; i < r->meta.nlabels; i++)
		if (strcmp(r->meta.labels[i].key, key) == 0)
			return r->meta.labels[i].value;
	return NULL;
}

int cat_filter_matches(const struct trace_rec *r, const struct cat_filter *f, const struct cat_note_counts *notes)
{
	size_t i;

	if (f->status >= 0 && r->state.status != f->status)
		return 0;
	if (f->pinned >= 0 && (r->meta.pinned != 0) != (f->pinned != 0))
		return 0;
	if (f->format && strcmp(r->state.format[0] ? r->state.format : r->state.format_hint, f->format) != 0)
		return 0;
	if ((int64_t)r->state.created < f->after || (int64_t)r->state.created > f->before)
		return 0;
	if (r->state.size < f->min_size || r->state.size > f->max_size)
		return 0;
	for (i = 0; i < f->nlabels; i++) {
		const char *v = cat_label_value(r, f->labels[i].key);

		if (v == NULL || (!f->bare[i] && strcmp(v, f->labels[i].value) != 0))
			return 0;
	}
	if (f->q && f->q[0]) {
		char kv[CAT_MAX_KEY + CAT_MAX_VALUE + 2];
		const struct cat_note_count *nc = cat_note_count_find(notes, r->id);

		if (contains(r->meta.name, f->q) || contains(r->meta.description, f->q) || (nc && nc->matches))
			return 1;
		for (i = 0; i < r->meta.nlabels; i++) {
			snprintf(kv, sizeof(kv), "%s=%s", r->meta.labels[i].key, r->meta.labels[i].value);
			if (contains(kv, f->q))
				return 1;
		}
		return 0;
	}
	return 1;
}

static int64_t num_key(const struct trace_rec *r, enum cat_sort s)
{
	switch (s) {
	case CAT_SORT_SIZE:
		return (int64_t)r->state.size;
	case CAT_SORT_DURATION:
		return r->state.status == TS_READY ? r->state.end_ns - r->state.start_ns : -1;
	default:
		return (int64_t)r->state.created;
	}
}

struct sorter {
	enum cat_sort sort;
	int desc;
};

/*
 * Names in natural order: runs of digits compare as numbers (run-99 before
 * run-215), everything else byte by byte; a number with leading zeros
 * after the same number without them ("run-7" < "run-007"), and names
 * equal so far by their bytes. A total order: paging by name relies on it.
 */
int cat_name_cmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

	while (*x && *y) {
		if (*x >= '0' && *x <= '9' && *y >= '0' && *y <= '9') {
			const unsigned char *xs = x, *ys = y, *xe, *ye;
			size_t xn, yn;

			while (*xs == '0')
				xs++;
			while (*ys == '0')
				ys++;
			for (xe = xs; *xe >= '0' && *xe <= '9'; xe++)
				;
			for (ye = ys; *ye >= '0' && *ye <= '9'; ye++)
				;
			xn = (size_t)(xe - xs);
			yn = (size_t)(ye - ys);
			if (xn != yn)
				return xn < yn ? -1 : 1;
			for (; xs < xe; xs++, ys++)
				if (*xs != *ys)
					return *xs < *ys ? -1 : 1;
			/* the same number: fewer leading zeros first */
			if (xe - x != ye - y)
				return xe - x < ye - y ? -1 : 1;
			x = xe;
			y = ye;
			continue;
		}
		if (*x != *y)
			return *x < *y ? -1 : 1;
		x++;
		y++;
	}
	return *x == *y ? 0 : *x ? 1 : -1;
}

/* -1, 0, 1 comparing r's (key, id) with the cursor's. */
static int key_cmp(const struct trace_rec *r, enum cat_sort s, int64_t knum, const char *kstr, int64_t kid)
{
	int c;

	if (s == CAT_SORT_NAME) {
		c = cat_name_cmp(r->meta.name, kstr);
	} else {
		int64_t v = num_key(r, s);

		c = v < knum ? -1 : v > knum;
	}
	return c ? c : r->id < kid ? -1 : r->id > kid;
}

static _Thread_local struct sorter g_sorter;

static int rec_cmp(const void *a, const void *b)
{
	const struct trace_rec *x = *(struct trace_rec *const *)a, *y = *(struct trace_rec *const *)b;
	int c = key_cmp(x, g_sorter.sort, num_key(y, g_sorter.sort), y->meta.name, y->id);

	return g_sorter.desc ? -c : c;
}

/* The cursor: "<sort>.<id>.<key>" in hex, so that no byte of a name can
 * break it; <sort> is "-name" for sort=-name, so that a cursor of one
 * direction is refused by the other (docs/API.md: bad_cursor). */
static char *cursor_make(const struct trace_rec *r, enum cat_sort s, int desc)
{
	char plain[CAT_MAX_NAME + 96], *hex;
	size_t n, i;

	if (s == CAT_SORT_NAME)
		n = (size_t)snprintf(plain, sizeof(plain), "%s%s.%" PRId64 ".%s", desc ? "-" : "", sort_names[s], r->id,
				     r->meta.name);
	else
		n = (size_t)snprintf(plain, sizeof(plain), "%s%s.%" PRId64 ".%" PRId64, desc ? "-" : "", sort_names[s],
				     r->id, num_key(r, s));
	if (n >= sizeof(plain))
		n = sizeof(plain) - 1;
	if ((hex = malloc(2 * n + 1)) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", (unsigned char)plain[i]);
	hex[2 * n] = '\0';
	return hex;
}

/* Decodes a cursor into (id, key); 0, or CAT_EINVAL when it is not one of
 * the sort s in that direction. */
static int cursor_read(const char *hex, enum cat_sort s, int desc, int64_t *id, int64_t *knum, char *kstr, size_t kn)
{
	size_t n = strlen(hex), i;
	char plain[CAT_MAX_NAME + 96], *p, *dot, *end;

	if (n % 2 || n / 2 >= sizeof(plain))
		return CAT_EINVAL;
	for (i = 0; i < n / 2; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1 || !strchr("0123456789abcdefABCDEF", hex[2 * i]) ||
		    !strchr("0123456789abcdefABCDEF", hex[2 * i + 1]))
			return CAT_EINVAL;
		plain[i] = (char)v;
	}
	plain[n / 2] = '\0';
	if (strlen(plain) != n / 2)
		return CAT_EINVAL;
	p = plain;
	if (desc && *p++ != '-')
		return CAT_EINVAL;
	n = strlen(sort_names[s]);
	if (strncmp(p, sort_names[s], n) != 0 || p[n] != '.')
		return CAT_EINVAL;
	p += n + 1;
	*id = strtoll(p, &end, 10);
	if (end == p || *end != '.')
		return CAT_EINVAL;
	dot = end + 1;
	if (s == CAT_SORT_NAME) {
		snprintf(kstr, kn, "%s", dot);
		return 0;
	}
	*knum = strtoll(dot, &end, 10);
	return end == dot || *end ? CAT_EINVAL : 0;
}

int cat_list_json(struct catalog *c, const struct cat_filter *f, struct jbuf *out, char *err, size_t errlen)
{
	struct trace_rec **v;
	char kstr[CAT_MAX_NAME + 96] = "";
	int64_t kid = 0, knum = 0;
	size_t n = 0, i, start = 0, shown;
	struct cat_note_counts nc;
	char *next = NULL;
	int rc;

	if (f->cursor && cursor_read(f->cursor, f->sort, f->desc, &kid, &knum, kstr, sizeof(kstr)) != 0) {
		snprintf(err, errlen, "'cursor' is not one this listing gave (or the sort changed since)");
		return CAT_EINVAL;
	}
	/* each trace's notes, and those whose text holds q: asked before the
	 * lock is taken, as the database never is under it */
	if ((rc = cat_note_counts(c, 0, f->q, &nc, err, errlen)) != 0)
		return rc;
	pthread_mutex_lock(&c->mu);
	if (cat_sync_locked(c, 0) != 0) {
		pthread_mutex_unlock(&c->mu);
		cat_note_counts_free(&nc);
		snprintf(err, errlen, "the catalog's database cannot be reached now; try again shortly");
		return CAT_EUNAVAILABLE;
	}
	if ((v = malloc((c->n + 1) * sizeof(*v))) == NULL) {
		pthread_mutex_unlock(&c->mu);
		cat_note_counts_free(&nc);
		snprintf(err, errlen, "out of memory");
		return CAT_EFAIL;
	}
	for (i = 0; i < c->n; i++)
		if (cat_filter_matches(c->v[i], f, &nc))
			v[n++] = c->v[i];
	g_sorter.sort = f->sort;
	g_sorter.desc = f->desc;
	qsort(v, n, sizeof(*v), rec_cmp);
	if (f->cursor) {
		for (start = 0; start < n; start++) {
			int cmp = key_cmp(v[start], f->sort, knum, kstr, kid);

			if (f->desc ? cmp < 0 : cmp > 0)
				break;
		}
	}
	jb_obj(out);
	jb_key(out, "traces");
	jb_arr(out);
	for (i = start, shown = 0; i < n && shown < f->limit; i++, shown++) {
		const struct cat_note_count *hit = cat_note_count_find(&nc, v[i]->id);

		cat_rec_json(v[i], hit ? hit->count : 0, out);
	}
	jb_arr_end(out);
	jb_key(out, "total");
	jb_u64(out, n);
	if (i < n && shown > 0)
		next = cursor_make(v[i - 1], f->sort, f->desc);
	pthread_mutex_unlock(&c->mu);
	jb_key(out, "next_cursor");
	jb_str(out, next);
	jb_obj_end(out);
	free(next);
	free(v);
	cat_note_counts_free(&nc);
	return 0;
}

int cat_matching(struct catalog *c, const struct cat_filter *f, struct cat_match **out, size_t *nout, char *err,
		 size_t errlen)
{
	struct cat_note_counts nc;
	struct cat_match *v = NULL;
	size_t i, n = 0;
	int rc;

	*out = NULL;
	*nout = 0;
	if ((rc = cat_note_counts(c, 0, f->q, &nc, err, errlen)) != 0)
		return rc;
	pthread_mutex_lock(&c->mu);
	if (cat_sync_locked(c, 0) != 0) {
		snprintf(err, errlen, "the catalog's database cannot be reached now; try again shortly");
		rc = CAT_EUNAVAILABLE;
	} else if ((v = calloc(c->n + 1, sizeof(*v))) == NULL) {
		snprintf(err, errlen, "out of memory");
		rc = CAT_EFAIL;
	}
	/* newest first, as the library lists them */
	for (i = c->n; rc == 0 && i > 0; i--) {
		const struct trace_rec *r = c->v[i - 1];
		struct jbuf b;

		if (r->state.status != TS_READY || !cat_filter_matches(r, f, &nc))
			continue;
		jb_init(&b);
		cat_labels_json(r, &b);
		jb_raw(&b, "", 1);
		v[n].id = r->id;
		v[n].name = strdup(r->meta.name);
		v[n].labels_json = jb_take(&b, NULL);
		if (v[n++].name == NULL || v[n - 1].labels_json == NULL) {
			snprintf(err, errlen, "out of memory");
			rc = CAT_EFAIL;
		}
	}
	pthread_mutex_unlock(&c->mu);
	cat_note_counts_free(&nc);
	if (rc != 0) {
		cat_matching_free(v, n);
		return rc;
	}
	*out = v;
	*nout = n;
	return 0;
}

void cat_matching_free(struct cat_match *v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++) {
		free(v[i].name);
		free(v[i].labels_json);
	}
	free(v);
}
