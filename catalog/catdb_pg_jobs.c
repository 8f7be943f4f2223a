/*
 * The catalog in PostgreSQL (catdb_pg.h): shared ingest jobs, claimed by one
 * server at a time under a lease, their results fenced by a token
 * (catdb.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catdb_pg.h"

/* ---- shared ingest jobs ----------------------------------------------------- */

/* Runs one statement of text parameters on the index's connection, in a
 * transaction of its own; its result in *out when it returns rows. */
static int job_exec(struct pg_lane *p, const char *what, const char *sql, int n, const char *const *vals,
		    PGresult **out, char *err, size_t errlen)
{
	PGresult *res;
	int rc;

	if ((rc = pg_enter(p, "BEGIN", what, err, errlen)) != CATDB_OK)
		return rc;
	res = pg_run(p, sql, n, vals, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
		return pg_leave(p, pg_fail(p, what, res, err, errlen), what, err, errlen);
	rc = strcmp(PQcmdTuples(res), "0") == 0 ? CATDB_ENOENT : CATDB_OK;
	if (out)
		*out = res;
	else
		PQclear(res);
	if (rc == CATDB_ENOENT) /* nothing done: nothing to commit */
		PQclear(PQexec(p->conn, "ROLLBACK"));
	return pg_leave(p, rc, what, err, errlen);
}

int pg_job_queue(struct catdb *d, int64_t trace, char *err, size_t errlen)
{
	char num[24];
	const char *vals[1] = { num };
	int rc;

	i64_text(trace, num, sizeof(num));
	rc = job_exec(&((struct catdb_pg *)d)->idx, "queueing an ingest job",
		      "INSERT INTO jobs (trace_id) VALUES ($1) ON CONFLICT (trace_id) DO NOTHING", 1, vals, NULL, err,
		      errlen);
	return rc == CATDB_ENOENT ? CATDB_OK : rc; /* queued already: still once */
}

/* The oldest job nobody holds (never claimed, or its lease over), locked
 * so that a server claiming at the same time takes the next one. */
int pg_job_claim(struct catdb *d, const char *owner, int lease_ms, struct catdb_job *out, char *err,
			size_t errlen)
{
	char ms[24];
	const char *vals[2] = { owner, ms };
	PGresult *res = NULL;
	int rc;

	i64_text(lease_ms, ms, sizeof(ms));
	rc = job_exec(&((struct catdb_pg *)d)->idx, "claiming an ingest job",
		      "UPDATE jobs SET owner = $1, lease_until = clock_timestamp() + $2 * interval '1 millisecond', "
		      "token = nextval('job_tokens'), attempts = attempts + 1 "
		      "WHERE trace_id = (SELECT trace_id FROM jobs WHERE lease_until IS NULL "
		      "OR lease_until < clock_timestamp() ORDER BY trace_id LIMIT 1 FOR UPDATE SKIP LOCKED) "
		      "RETURNING trace_id, token, attempts",
		      2, vals, &res, err, errlen);
	if (rc == CATDB_OK) {
		out->trace = col_i64(res, 0, 0);
		out->token = col_i64(res, 0, 1);
		out->attempts = (int)col_i64(res, 0, 2);
	}
	PQclear(res);
	return rc;
}

/* Renewed while the claim's token is the job's, even past its lease when
 * nobody claimed it since: the token, not the clock, says whose it is. */
int pg_job_renew(struct catdb *d, const struct catdb_job *j, int lease_ms, char *err, size_t errlen)
{
	char id[24], token[24], ms[24];
	const char *vals[3] = { id, token, ms };

	i64_text(j->trace, id, sizeof(id));
	i64_text(j->token, token, sizeof(token));
	i64_text(lease_ms, ms, sizeof(ms));
	return job_exec(&((struct catdb_pg *)d)->idx, "renewing an ingest job's lease",
			"UPDATE jobs SET lease_until = clock_timestamp() + $3 * interval '1 millisecond' "
			"WHERE trace_id = $1 AND token = $2",
			3, vals, NULL, err, errlen);
}

/* The fencing check and the result in one transaction: the job's row goes
 * only with the claim's token, and the trace's state is written only then. */
int pg_job_done(struct catdb *d, const struct catdb_job *j, const struct trace_rec *r, char *err,
		       size_t errlen)
{
	struct pg_lane *p = &((struct catdb_pg *)d)->idx;
	char id[24], token[24];
	const char *vals[2] = { id, token };
	PGresult *res;
	int rc;

	i64_text(j->trace, id, sizeof(id));
	i64_text(j->token, token, sizeof(token));
	if ((rc = pg_enter(p, "BEGIN", "ending an ingest job", err, errlen)) != CATDB_OK)
		return rc;
	res = pg_run(p, "DELETE FROM jobs WHERE trace_id = $1 AND token = $2", 2, vals, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		return pg_leave(p, pg_fail(p, "ending an ingest job", res, err, errlen), "ending an ingest job", err,
				errlen);
	if (strcmp(PQcmdTuples(res), "1") != 0) {
		PQclear(res);
		PQclear(PQexec(p->conn, "ROLLBACK"));
		snprintf(err, errlen, "the ingest job of trace %" PRId64 " was claimed by another server since "
				      "(its lease ran out): this result is not kept", j->trace);
		return pg_leave(p, CATDB_ENOENT, "ending an ingest job", err, errlen);
	}
	PQclear(res);
	return pg_leave(p, pg_save_tx(p, r, CATDB_STATE, NULL, err, errlen), "ending an ingest job", err, errlen);
}
