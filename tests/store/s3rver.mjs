// An S3-compatible store for the tests: s3rver (pinned in package-lock.json)
// on a loopback port, keeping its objects under a given directory, with one
// bucket made at start. It checks no signatures; tests/store/test_sigv4.c
// checks ours against AWS's examples instead.
//
//   node tests/store/s3rver.mjs DIR BUCKET [PORT]
//
// Prints "port N" on its first line once it listens (PORT 0 or absent: a
// free port chosen by the kernel), then runs until killed. With S3RVER_LOG
// set, appends "METHOD URL" of every request to that file, so that a test
// can count what a client sent (the parts of a multipart upload; s3rver's
// ETag of the assembled object does not tell).
import { appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const S3rver = require('s3rver');

const [dir, bucket, port = '0'] = process.argv.slice(2);
if (!dir || !bucket) {
  process.stderr.write('usage: node tests/store/s3rver.mjs DIR BUCKET [PORT]\n');
  process.exit(2);
}
const server = new S3rver({
  address: '127.0.0.1',
  port: Number(port),
  directory: dir,
  silent: true,
  configureBuckets: [{ name: bucket, configs: [] }],
});
const log = process.env.S3RVER_LOG;
if (log)
  server.middleware.unshift((ctx, next) => {
    appendFileSync(log, `${ctx.method} ${ctx.url}\n`);
    return next();
  });
const addr = await server.run();
process.stdout.write(`port ${addr.port}\n`);
for (const sig of ['SIGTERM', 'SIGINT'])
  process.on(sig, () => server.close().then(() => process.exit(0)));
