/*
 * The command line's clients of a running server: `trace-server stream`
 * (stream.c) sends a growing file or standard input as a live trace, or
 * plays a provider (provide.c); `trace-server record` (record.c) records a
 * program through the capture API. They talk to the server only through
 * its documented API (docs/API.md), as any other client, over one HTTP
 * client (http.c, libcurl; client_internal.h).
 */
#ifndef CLIENT_CLIENT_H
#define CLIENT_CLIENT_H

/* trace-server stream ...; argv[0] is "stream". The exit status. */
int cl_stream_main(int argc, char **argv);

/* trace-server record ...; argv[1] is "record". The exit status: the
 * recorded command's, or 2 for a bad command line. */
int cl_record_main(int argc, char **argv);

#endif
