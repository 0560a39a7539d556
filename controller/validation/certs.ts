// A private CA and a serving certificate for the webhook, made with node:crypto alone (EC P-256 keys, ECDSA-SHA256
// signatures; the X.509 structures written as DER here, as node:crypto reads certificates but does not make them).
// The controller makes a pair at start when it is given none, and puts the CA in the webhook configuration.
import { generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';

export interface WebhookCertificates {
  /** PEM: the CA the API server trusts (the webhook configuration's caBundle) */
  ca: string;
  /** PEM: the serving certificate, and its key */
  cert: string;
  key: string;
}

// ---- DER ----

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let x = n; x > 0; x >>= 8) bytes.unshift(x & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}
const tlv = (tag: number, value: Buffer): Buffer => Buffer.concat([Buffer.from([tag]), length(value.length), value]);
const seq = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));
const explicit = (n: number, inner: Buffer): Buffer => tlv(0xa0 + n, inner);
const octets = (value: Buffer): Buffer => tlv(0x04, value);
const bits = (value: Buffer, unused = 0): Buffer => tlv(0x03, Buffer.concat([Buffer.from([unused]), value]));
const bool = (v: boolean): Buffer => tlv(0x01, Buffer.from([v ? 0xff : 0]));
const utf8 = (s: string): Buffer => tlv(0x0c, Buffer.from(s, 'utf8'));

function integer(bytes: Buffer): Buffer {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  const v = bytes.subarray(i);
  return tlv(0x02, v[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), v]) : v);
}

function oid(dotted: string): Buffer {
  const [a = 0, b = 0, ...rest] = dotted.split('.').map(Number);
  const out = [40 * a + b];
  for (const n of rest) {
    const chunk: number[] = [n & 0x7f];
    for (let x = n >>> 7; x > 0; x >>>= 7) chunk.unshift((x & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z'; // YYYYMMDDHHMMSSZ
  // RFC 5280: UTCTime through 2049, GeneralizedTime from 2050
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(iso.slice(2))) : tlv(0x18, Buffer.from(iso));
}

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));
const name = (cn: string): Buffer => seq(set(seq(oid('2.5.4.3'), utf8(cn))));
const extension = (id: string, critical: boolean, value: Buffer): Buffer => seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  // IPv6: expand `::`, then 8 groups of 16 bits
  const [head = '', tail = ''] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = ip.includes('::') ? (tail ? tail.split(':') : []) : [];
  const groups = ip.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  return Buffer.concat(groups.map((g) => Buffer.from([(parseInt(g, 16) >> 8) & 0xff, parseInt(g, 16) & 0xff])));
}

interface CertSpec {
  subject: string;
  issuer: string;
  publicKey: KeyObject;
  signer: KeyObject;
  ca: boolean;
  /** DNS names and IP addresses (subjectAltName) */
  hosts?: readonly string[];
  notBefore: Date;
  notAfter: Date;
}

function certificate(spec: CertSpec): string {
  const extensions: Buffer[] = [
    extension('2.5.29.19', true, spec.ca ? seq(bool(true)) : seq()),
    // keyCertSign + cRLSign for the CA; digitalSignature for the server
    extension('2.5.29.15', true, spec.ca ? bits(Buffer.from([0x06]), 1) : bits(Buffer.from([0x80]), 7)),
  ];
  if (!spec.ca) {
    // serverAuth
    extensions.push(extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))));
    const names = (spec.hosts ?? []).map((h) => (isIP(h) ? tlv(0x87, ipBytes(h)) : tlv(0x82, Buffer.from(h, 'ascii'))));
    if (names.length) extensions.push(extension('2.5.29.17', false, seq(...names)));
  }
  const serial = randomBytes(16);
  serial[0] = serial[0]! & 0x7f;
  const tbs = seq(
    explicit(0, integer(Buffer.from([2]))),
    integer(serial),
    ECDSA_SHA256,
    name(spec.issuer),
    seq(time(spec.notBefore), time(spec.notAfter)),
    name(spec.subject),
    spec.publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, seq(...extensions)),
  );
  const signature = sign('sha256', tbs, { key: spec.signer, dsaEncoding: 'der' });
  const der = seq(tbs, ECDSA_SHA256, bits(signature));
  const b64 = der.toString('base64').replace(/.{64}/g, '$&\n');
  return `-----BEGIN CERTIFICATE-----\n${b64}${b64.endsWith('\n') ? '' : '\n'}-----END CERTIFICATE-----\n`;
}

/** A new CA and a certificate it signs for `hosts` (DNS names, IP addresses), valid from an hour ago for `days`. */
export function makeWebhookCertificates(hosts: readonly string[], days = 3650, now = new Date()): WebhookCertificates {
  const notBefore = new Date(now.getTime() - 3600_000);
  const notAfter = new Date(now.getTime() + days * 86400_000);
  const ca = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const server = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const caCert = certificate({
    subject: 'legate-webhook-ca',
    issuer: 'legate-webhook-ca',
    publicKey: ca.publicKey,
    signer: ca.privateKey,
    ca: true,
    notBefore,
    notAfter,
  });
  const cert = certificate({
    subject: hosts[0] ?? 'legate-webhook',
    issuer: 'legate-webhook-ca',
    publicKey: server.publicKey,
    signer: ca.privateKey,
    ca: false,
    hosts,
    notBefore,
    notAfter,
  });
  return { ca: caCert, cert, key: server.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}
