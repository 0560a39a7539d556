// apiKeyAuth as an AuthStep: the request header `headerName` must hold one of the configured keys. The
// service never sees the keys: the controller sends their sha256 digests, and the presented value is
// hashed and compared with every digest in constant time (crypto.timingSafeEqual over equal-length
// digests; no early exit, so the time does not tell which key, or how much of one, matched).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { ApiKeyStepConfig } from '../../../common/auth-config.js';
import type { Outcome } from '../outcome.js';
import { addUpstreamHeader, type AuthStep, type Hold, type StepFactory, type StepSummary } from '../step.js';

/** Longest header value hashed; longer ones are denied without hashing. */
const MAX_KEY_LENGTH = 4096;

export class ApiKeyStep implements AuthStep {
  readonly bearer = false;
  readonly summary: StepSummary;
  private readonly headerName: string;
  private readonly digests: readonly Buffer[];
  /** per key (index of digests): the upstream headers its metadata gives (headersFromMetadataEntry) */
  private readonly headers: readonly (readonly { name: string; value: string }[])[];

  constructor(config: ApiKeyStepConfig) {
    this.headerName = config.headerName;
    this.digests = config.keySha256.map((h) => Buffer.from(h, 'hex'));
    const fromMeta = Object.entries(config.headersFromMetadata ?? {});
    this.headers = config.keySha256.map((h) => {
      const meta = config.keyMetadata?.[h] ?? {};
      return fromMeta.flatMap(([name, entry]) => (Object.hasOwn(meta, entry) ? [{ name, value: meta[entry]! }] : []));
    });
    // the number of keys, never the keys or their digests
    this.summary = { type: config.type, headerName: config.headerName, keys: config.keySha256.length };
  }

  decideNow(_token: string, _hash: string, _now: number, hold: Hold): Outcome {
    const value = hold.request.header(this.headerName);
    if (value === undefined || value === '') {
      hold.detail = `no ${this.headerName} header`;
      return 'missing_api_key';
    }
    let match = -1;
    if (value.length <= MAX_KEY_LENGTH) {
      const digest = createHash('sha256').update(value, 'latin1').digest();
      for (let i = 0; i < this.digests.length; i++) if (timingSafeEqual(digest, this.digests[i]!)) match = i;
    }
    hold.until = 0; // not offered to the edge cache: it keys on the bearer token
    if (match >= 0) {
      // the key's metadata replaces whatever the client sent in those headers
      for (const h of this.headers[match]!) addUpstreamHeader(hold, h.name, h.value);
      return 'allow';
    }
    hold.detail = `${this.headerName} holds no known API key`;
    return 'invalid_api_key';
  }

  decide(token: string, hash: string, hold: Hold): Promise<Outcome> {
    return Promise.resolve(this.decideNow(token, hash, Date.now(), hold));
  }
}

export const apiKeyStep: StepFactory<ApiKeyStepConfig> = (config) => new ApiKeyStep(config);
