/*
 * A SQLite column as a JSON value, for every reply that passes values
 * through as stored (query.h).
 */
#include "query.h"

void jb_column(struct jbuf *b, sqlite3_stmt *st, int col)
{
	switch (sqlite3_column_type(st, col)) {
	case SQLITE_INTEGER:
		jb_i64(b, sqlite3_column_int64(st, col));
		break;
	case SQLITE_FLOAT:
		jb_dbl(b, sqlite3_column_double(st, col));
		break;
	case SQLITE_TEXT:
		jb_strn(b, (const char *)sqlite3_column_text(st, col), (size_t)sqlite3_column_bytes(st, col));
		break;
	case SQLITE_BLOB:
		jb_obj(b);
		jb_key(b, "blob_bytes");
		jb_i64(b, sqlite3_column_bytes(st, col));
		jb_obj_end(b);
		break;
	default:
		jb_null(b);
	}
}
