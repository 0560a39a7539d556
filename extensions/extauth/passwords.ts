// Basic credentials and the password hashes Gloo's basicAuth stores: apr1 (Apache's iterated MD5,
// `htpasswd -m`) and sha1 (hex sha1(password + salt), Gloo's `encryption.sha1`). Pure functions; the
// comparison is constant-time on the digests.
import { createHash, hash, timingSafeEqual } from 'node:crypto';

/** `Authorization: Basic <base64(user:password)>` (scheme case-insensitive) -> the credentials, or undefined. */
export function parseBasic(header: string | undefined): { user: string; password: string } | undefined {
  if (header === undefined || header.length > 8192) return undefined;
  const m = /^basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header);
  if (!m) return undefined;
  const text = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon <= 0) return undefined;
  return { user: text.slice(0, colon), password: text.slice(colon + 1) };
}

const ITOA64 = './0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function to64(v: number, n: number): string {
  let out = '';
  for (let i = 0; i < n; i++) {
    out += ITOA64[v & 0x3f];
    v >>>= 6;
  }
  return out;
}

/** The 22-character hash of Apache's `$apr1$<salt>$<hash>` (MD5-crypt with the apr1 magic). */
export function apr1Hash(password: string, salt: string): string {
  const pw = Buffer.from(password, 'utf8');
  const s = Buffer.from(salt.split('$')[0]!.slice(0, 8), 'utf8');
  const magic = Buffer.from('$apr1$');
  let fin = createHash('md5').update(pw).update(s).update(pw).digest();
  const ctx = createHash('md5').update(pw).update(magic).update(s);
  for (let pl = pw.length; pl > 0; pl -= 16) ctx.update(fin.subarray(0, Math.min(pl, 16)));
  for (let i = pw.length; i > 0; i >>= 1) ctx.update(i & 1 ? Buffer.of(0) : pw.subarray(0, 1));
  fin = ctx.digest();
  // the 1000 rounds with one-shot hashes over a reused buffer (a Hash object per round is ~8x slower)
  const buf = Buffer.alloc(16 + s.length + 2 * pw.length + 16);
  for (let i = 0; i < 1000; i++) {
    let n = i & 1 ? pw.copy(buf, 0) : fin.copy(buf, 0);
    if (i % 3) n += s.copy(buf, n);
    if (i % 7) n += pw.copy(buf, n);
    n += i & 1 ? fin.copy(buf, n) : pw.copy(buf, n);
    fin = hash('md5', buf.subarray(0, n), 'buffer');
  }
  const b = fin;
  return (
    to64((b[0]! << 16) | (b[6]! << 8) | b[12]!, 4) +
    to64((b[1]! << 16) | (b[7]! << 8) | b[13]!, 4) +
    to64((b[2]! << 16) | (b[8]! << 8) | b[14]!, 4) +
    to64((b[3]! << 16) | (b[9]! << 8) | b[15]!, 4) +
    to64((b[4]! << 16) | (b[10]! << 8) | b[5]!, 4) +
    to64(b[11]!, 2)
  );
}

/** Gloo's sha1 form: lower-case hex of sha1(password + salt). */
export function sha1Hash(password: string, salt: string): string {
  return createHash('sha1').update(password, 'utf8').update(salt, 'utf8').digest('hex');
}

function sameText(a: string, b: string): boolean {
  const x = createHash('sha256').update(a).digest();
  const y = createHash('sha256').update(b).digest();
  return timingSafeEqual(x, y);
}

/** Whether `password` matches a stored salted hash (sha1 hex compared case-insensitively, as Gloo). */
export function verifyPassword(encryption: 'apr' | 'sha1', password: string, salt: string, hashed: string): boolean {
  if (encryption === 'sha1') return sameText(sha1Hash(password, salt), hashed.toLowerCase());
  return sameText(apr1Hash(password, salt), hashed);
}
