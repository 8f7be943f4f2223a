/*
 * A small S3 client: the handful of calls a store of immutable files
 * needs (put a file, get it back into a file, head, delete, delete a
 * prefix), over libcurl, signed with SigV4 (sigv4.h), path-style
 * (endpoint/bucket/key) so that any S3-compatible store answers.
 *
 * Files go up in parts of part_size bytes (multipart upload) when larger
 * than one part, and come down straight to disk: no call holds a whole
 * object in memory. Each call makes its own curl handle, so calls from
 * several threads at once are safe.
 *
 * Keys come from the environment only (AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN): a key on the command line
 * would show in ps and in shell history.
 */
#ifndef STORE_S3_H
#define STORE_S3_H

#include <stddef.h>
#include <stdint.h>

enum s3_error {
	S3_OK = 0,
	S3_ENOTFOUND = -1,    /* no such object (404) */
	S3_EUNAVAILABLE = -2, /* the store cannot be reached or answered 5xx/503: try later */
	S3_EREFUSED = -3,     /* the store refused the request (4xx: keys, bucket, ...) */
	S3_EIO = -4,          /* a local file cannot be read or written */
	S3_ENOMEM = -5,
	S3_EBADURL = -6,      /* an s3:// URL or endpoint it does not take */
};
const char *s3_strerror(int e);

struct s3_config {
	char bucket[64];     /* 3 to 63 bytes, S3's bucket name rule */
	char prefix[512];    /* key prefix without leading or trailing '/'; may be empty */
	char endpoint[512];  /* "http://host:port", no trailing '/' */
	char region[64];     /* "us-east-1" when the URL names none */
	uint64_t part_size;  /* bytes of each part of a multipart upload */
	long timeout;        /* seconds a transfer may go without progress */
};

#define S3_DEFAULT_PART_SIZE ((uint64_t)8 << 20)
#define S3_MIN_PART_SIZE ((uint64_t)5 << 20) /* S3's own floor, the last part excepted */

/*
 * Parses "s3://bucket/prefix?endpoint=http://host:port&region=R" into c
 * (part_size and timeout set to defaults). The endpoint is required: this
 * client does not guess AWS's hostnames. 0, or S3_EBADURL with a sentence
 * in err.
 */
int s3_parse_url(const char *url, struct s3_config *c, char *err, size_t errlen);

struct s3;

/* A client for c, keys read from the environment now. NULL with a
 * sentence in err when a key is missing or out of memory. */
struct s3 *s3_create(const struct s3_config *c, char *err, size_t errlen);
void s3_destroy(struct s3 *s);
const struct s3_config *s3_config_of(const struct s3 *s);

/*
 * The calls. Each returns S3_OK or an enum s3_error with a sentence in err
 * naming the call, the key, the HTTP status and S3's error Code when the
 * store answered (err may be NULL when errlen is 0).
 */

/* Uploads the file at path as key: one PUT up to part_size bytes, else a
 * multipart upload, aborted on any failure so no parts are left behind. */
int s3_put_file(struct s3 *s, const char *key, const char *path, char *err, size_t errlen);
/* Downloads key into path: written to a temporary name beside it, renamed
 * over path only when complete. */
int s3_get_file(struct s3 *s, const char *key, const char *path, char *err, size_t errlen);
/* The object's size into *size (may be NULL). */
int s3_head(struct s3 *s, const char *key, uint64_t *size, char *err, size_t errlen);
/* Whether the bucket answers (HEAD of the bucket). */
int s3_head_bucket(struct s3 *s, char *err, size_t errlen);
/* Deletes key; deleting what is not there is no error (S3's rule too). */
int s3_delete(struct s3 *s, const char *key, char *err, size_t errlen);
/* Deletes every object whose key starts with prefix (ListObjectsV2) but
 * the key keep (NULL: none kept). */
int s3_delete_prefix(struct s3 *s, const char *prefix, const char *keep, char *err, size_t errlen);

#endif
