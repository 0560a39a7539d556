// The validating admission webhook's HTTPS server: POST /validation with an admission.k8s.io/v1 AdmissionReview,
// answered with the Validator's verdict (review.ts, admission.ts). Thin on purpose: all deciding is pure.
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../common/log.js';
import type { Verdict } from './admission.js';
import { changeOf, parseReview, responseReview, type AdmissionRequest } from './review.js';

export const VALIDATION_PATH = '/validation';
/** Larger bodies are refused: the API server caps objects at 3 MiB, and a review holds two of them */
const MAX_BODY = 8 * 1024 * 1024;

export interface WebhookServerOptions {
  host: string;
  port: number;
  cert: string;
  key: string;
  /** the verdict on one change (undefined change: a kind the controller does not read) */
  check: (req: AdmissionRequest) => Verdict;
  logger: Logger;
  /** seconds each review took, for metrics */
  observe?: (seconds: number, allowed: boolean) => void;
}

export interface RunningWebhook {
  port: number;
  /** a new certificate (a rotated Secret), for the next connections */
  setCertificate(cert: string, key: string): void;
  stop(): Promise<void>;
}

export async function startWebhookServer(options: WebhookServerOptions): Promise<RunningWebhook> {
  const log = options.logger;
  const server = https.createServer({ cert: options.cert, key: options.key }, (req, res) => {
    const reply = (status: number, body: unknown): void => {
      const text = JSON.stringify(body);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    if (req.url?.split('?')[0] !== VALIDATION_PATH) return reply(404, { error: `not found; the webhook is at ${VALIDATION_PATH}` });
    if (req.method !== 'POST') return reply(405, { error: 'POST an AdmissionReview' });
    const started = performance.now();
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) req.destroy();
      else chunks.push(c);
    });
    req.on('end', () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return reply(400, { error: 'the body is not JSON' });
      }
      const request = parseReview(body);
      if (typeof request === 'string') return reply(400, { error: request });
      const apiVersion =
        typeof (body as { apiVersion?: unknown }).apiVersion === 'string' ? (body as { apiVersion: string }).apiVersion : '';
      let verdict: Verdict;
      try {
        verdict = options.check(request);
      } catch (err) {
        // a bug, not the user's resource: the webhook configuration's failurePolicy decides
        log.error('validation failed unexpectedly', { kind: request.kind.kind, name: request.name, error: err });
        return reply(500, { error: 'validation failed unexpectedly; see the controller log' });
      }
      const what = { kind: request.kind.kind, namespace: request.namespace, name: request.name, operation: request.operation };
      const dryRun = request.dryRun === true;
      if (verdict.acceptedAnyway)
        log.warn('validation would refuse this; accepted (gateway.validation.alwaysAccept)', { ...what, dryRun, reason: verdict.message });
      else if (!verdict.allowed) log.info('refused', { ...what, dryRun, reason: verdict.message });
      else log.debug('admitted', { ...what, dryRun, ...(verdict.skipped ? { skipped: verdict.skipped } : {}) });
      reply(200, responseReview(apiVersion || 'admission.k8s.io/v1', request, verdict));
      options.observe?.((performance.now() - started) / 1000, verdict.allowed);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    setCertificate: (cert, key) => server.setSecureContext({ cert, key }),
    stop: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

/** The verdict for a request: its change checked, or admitted when it is of a kind the controller does not read. */
export function checkRequest(check: (change: NonNullable<ReturnType<typeof changeOf>>) => Verdict): (req: AdmissionRequest) => Verdict {
  return (req) => {
    const change = changeOf(req);
    return change ? check(change) : { allowed: true, warnings: [], skipped: `${req.kind.kind} is not a kind Legate reads` };
  };
}
