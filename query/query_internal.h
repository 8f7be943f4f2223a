/*
 * What the files of query/ share and nothing outside needs.
 */
#ifndef QUERY_QUERY_INTERNAL_H
#define QUERY_QUERY_INTERNAL_H

#include "query.h"

/* Sets err to code and the formatted message; returns code. */
__attribute__((format(printf, 3, 4))) int qry_fail(struct qry_error *err, int code, const char *fmt, ...);

#endif
