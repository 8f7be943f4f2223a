// An S3-compatible store for the tests: s3rver (pinned in package-lock.json)
// on a loopback port, keeping its objects under a given directory, with one
// bucket made at start. s3rver checks no signatures, and real S3 refuses
// every request whose signature is not the one it computes: so a
// middleware in front of it checks each request's AWS Signature Version 4
// the way S3 does, with an implementation independent of ours (aws4 from
// npm, pinned too): it signs the request's method, path, query and the
// headers the request says it signed, with the tests' credentials
// (S3RVER/S3RVER, or AWS_SECRET_ACCESS_KEY), and answers 403
// SignatureDoesNotMatch, as S3 does, when the signatures differ (a test's
// own look into the bucket, which the server never makes, says so with
// the header x-test-inspect and is let through unsigned). A break
// in store/sigv4.c or store/s3.c (an unsorted canonical query, a header
// signed but not sent) fails the tests that use this store.
// tests/store/test_sigv4.c also checks ours against AWS's own examples.
//
//   node tests/store/s3rver.mjs DIR BUCKET [PORT]
//
// Prints "port N" on its first line once it listens (PORT 0 or absent: a
// free port chosen by the kernel), then runs until killed. With S3RVER_LOG
// set, appends "METHOD URL" of every request to that file, so that a test
// can count what a client sent (the parts of a multipart upload; s3rver's
// ETag of the assembled object does not tell).
import { appendFileSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const S3rver = require('s3rver');
const aws4 = require('aws4');

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
const secret = process.env.AWS_SECRET_ACCESS_KEY || 'S3RVER';

// s3rver keeps a key's object under directories named by its slashes, and
// a DELETE removes the directories it leaves empty: a PUT into the same
// directory at that moment (made, then opened) finds it gone, and the
// unhandled ENOENT ends the whole store (a trace deleted while its source
// is put compressed did that in CI). S3 has no directories, so neither
// race exists there: this store leaves empty directories in place, which
// no listing shows (keys come from the object files alone).
server.store.deleteObject = async function deleteObject(b, key) {
  await Promise.all(['object', 'object.md5', 'metadata.json'].map(r =>
    unlink(this.getResourcePath(b, key, r)).catch(err => {
      if (err.code !== 'ENOENT') throw err;
    })));
};

function s3Error(ctx, status, code, message) {
  ctx.status = status;
  ctx.type = 'application/xml';
  ctx.body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`;
}

// The signature S3 would compute for this request, or why it cannot.
server.middleware.unshift((ctx, next) => {
  if (ctx.get('x-test-inspect') === 'unsigned' && !ctx.get('authorization'))
    return next();
  const auth = ctx.get('authorization');
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) {
    s3Error(ctx, 403, 'AccessDenied', 'the request is not signed with AWS Signature Version 4');
    return undefined;
  }
  const [, keyId, day, region, service, signed, signature] = m;
  const headers = {};
  for (const h of signed.split(';')) {
    if (ctx.get(h) === '' && h !== 'host') {
      s3Error(ctx, 403, 'SignatureDoesNotMatch', `the signed header ${h} is not in the request`);
      return undefined;
    }
    headers[h] = ctx.get(h);
  }
  if (!headers['x-amz-date'] || headers['x-amz-date'].slice(0, 8) !== day) {
    s3Error(ctx, 403, 'SignatureDoesNotMatch', 'x-amz-date is not signed, or is not the credential scope\'s day');
    return undefined;
  }
  const req = { method: ctx.method, host: ctx.get('host'), path: ctx.url, service, region, headers };
  aws4.sign(req, { accessKeyId: keyId, secretAccessKey: secret });
  const want = /Signature=([0-9a-f]{64})/.exec(req.headers.Authorization)[1];
  const wantSigned = /SignedHeaders=([^,]+)/.exec(req.headers.Authorization)[1];
  if (want !== signature || wantSigned !== signed) {
    s3Error(ctx, 403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided.');
    return undefined;
  }
  return next();
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
