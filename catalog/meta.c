/*
 * What a trace's metadata may hold (catalog.h: the limits): labels, names
 * and descriptions checked, whoever gives them (an upload, a patch, a
 * migration), and a record's labels changed. Pure functions of their
 * arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_internal.h"
#include "../provider/utf8.h"

static int key_char(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
	       ch == '.' || ch == '-' || ch == '/' || ch == ':';
}

/* 0 when s (n bytes) is valid UTF-8 without control bytes (tab and
 * newline allowed when multiline), else CAT_EINVAL. */
static int text_ok(const char *s, size_t n, int multiline)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;

	while (p < end) {
		unsigned c = *p;
		size_t len = utf8_seq_len(p, (size_t)(end - p));

		if (len == 0 || (c < 0x20 && !(multiline && (c == '\t' || c == '\n'))) || c == 0x7f)
			return CAT_EINVAL;
		p += len;
	}
	return 0;
}

int cat_text_check(const char *what, const char *s, size_t max, int multiline, char *err, size_t errlen)
{
	size_t n = strlen(s);

	if (n > max) {
		snprintf(err, errlen, "the %s is longer than %zu bytes", what, max);
		return CAT_EINVAL;
	}
	if (text_ok(s, n, multiline) != 0) {
		snprintf(err, errlen, "the %s must be UTF-8 text without control characters", what);
		return CAT_EINVAL;
	}
	return 0;
}

int cat_label_parse(const char *s, int allow_bare, struct cat_label *l, char *err, size_t errlen)
{
	const char *eq = strchr(s, '=');
	size_t klen = eq ? (size_t)(eq - s) : strlen(s), i;

	if (eq == NULL && !allow_bare) {
		snprintf(err, errlen, "a label is written key=value (e.g. build=1234), not '%.*s'",
			 (int)utf8_cut(s, strlen(s), 64), s);
		return CAT_EINVAL;
	}
	if (klen == 0 || klen > CAT_MAX_KEY) {
		snprintf(err, errlen, "a label key has 1 to %d characters", CAT_MAX_KEY);
		return CAT_EINVAL;
	}
	for (i = 0; i < klen; i++) {
		if (!key_char((unsigned char)s[i])) {
			snprintf(err, errlen, "a label key holds only letters, digits and _ . - / :, not '%.*s'",
				 (int)(klen > 64 ? 64 : klen), s);
			return CAT_EINVAL;
		}
	}
	memcpy(l->key, s, klen);
	l->key[klen] = '\0';
	l->value[0] = '\0';
	if (eq == NULL)
		return 0;
	if (strlen(eq + 1) > CAT_MAX_VALUE || text_ok(eq + 1, strlen(eq + 1), 0) != 0) {
		snprintf(err, errlen, "the value of label '%s' must be at most %d bytes of text without control "
				      "characters", l->key, CAT_MAX_VALUE);
		return CAT_EINVAL;
	}
	snprintf(l->value, sizeof(l->value), "%s", eq + 1);
	return 0;
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cat_label *)a)->key, ((const struct cat_label *)b)->key);
}

/*
 * Applies set and unset to a label array (sorted by key); returns the new
 * array in *out (sorted, a key at most once: the last set wins), or
 * CAT_EFAIL when out of memory, CAT_ELABELS when more than CAT_MAX_LABELS
 * would remain.
 */
int cat_labels_apply(const struct cat_label *cur, size_t ncur, const struct cat_label *set, size_t nset,
		     const char *const *unset, size_t nunset, struct cat_label **out, size_t *nout)
{
	struct cat_label *v = malloc((ncur + nset + 1) * sizeof(*v));
	size_t n = 0, i, j;

	if (v == NULL)
		return CAT_EFAIL;
	for (i = 0; i < ncur; i++)
		v[n++] = cur[i];
	for (i = 0; i < nset; i++) {
		for (j = 0; j < n && strcmp(v[j].key, set[i].key) != 0; j++)
			;
		v[j] = set[i];
		if (j == n)
			n++;
	}
	for (i = 0; i < nunset; i++) {
		for (j = 0; j < n; j++) {
			if (strcmp(v[j].key, unset[i]) == 0) {
				v[j] = v[--n];
				break;
			}
		}
	}
	if (n > CAT_MAX_LABELS) {
		free(v);
		return CAT_ELABELS;
	}
	qsort(v, n, sizeof(*v), label_cmp);
	*out = v;
	*nout = n;
	return 0;
}

/*
 * What the catalog stores, it checks, whoever asks (an upload, a patch, a
 * migration): paging and search hold for every value it takes. name and
 * description may be NULL (unchanged). 0, or CAT_EINVAL with err.
 */
int cat_meta_check(const char *name, const char *description, const struct cat_label *labels, size_t nlabels,
		   char *err, size_t errlen)
{
	size_t i;

	if (name && (name[0] == '\0' || strlen(name) > CAT_MAX_NAME)) {
		snprintf(err, errlen, "a trace's name is 1 to %d bytes", CAT_MAX_NAME);
		return CAT_EINVAL;
	}
	if (description && cat_text_check("description", description, CAT_MAX_DESCRIPTION, 1, err, errlen) != 0)
		return CAT_EINVAL;
	for (i = 0; i < nlabels; i++) {
		char kv[CAT_MAX_KEY + CAT_MAX_VALUE + 2];
		struct cat_label l;

		snprintf(kv, sizeof(kv), "%s=%s", labels[i].key, labels[i].value);
		if (cat_label_parse(kv, 0, &l, err, errlen) != 0)
			return CAT_EINVAL;
	}
	return 0;
}
