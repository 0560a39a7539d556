// The last accepted version of each resource, kept on disk (`legate controller --accepted-file`, which
// `legate run` points at <state-dir>/accepted.json) so that "keep last good" survives a restart: a
// resource that is rejected when the controller starts falls back to the version accepted before the
// restart, and its status says so. Secrets are never written: they are read from the source each time.
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../common/log.js';
import { resourceKey, type RawResource } from '../api/meta.js';
import { validateResource, type LegateResource } from '../api/resources.js';

const FORMAT = 1;

interface StoredFile {
  format: number;
  resources: RawResource[];
}

/** What `status.reason` says of a resource served from the restored version. */
export const RESTORED_NOTE = '(serving the last accepted version, restored from the state directory at start)';

/**
 * Reads the stored versions. Each is validated again (a newer controller may have a stricter schema):
 * only those that still pass are restored. A missing file is an empty store; a damaged one is logged
 * and ignored.
 */
export function loadAccepted(file: string, logger: Logger): Map<string, LegateResource> {
  const out = new Map<string, LegateResource>();
  let stored: StoredFile;
  try {
    stored = JSON.parse(fs.readFileSync(file, 'utf8')) as StoredFile;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      logger.warn('cannot read the last accepted resources; starting without', { file, error: err });
    return out;
  }
  if (stored?.format !== FORMAT || !Array.isArray(stored.resources)) {
    logger.warn('the last accepted resources are in an unknown format; starting without', { file });
    return out;
  }
  let dropped = 0;
  for (const raw of stored.resources) {
    const result = validateResource(raw);
    if (!result.ok || raw.kind === 'Secret') {
      dropped++;
      continue;
    }
    out.set(resourceKey(raw.kind, raw.metadata.namespace, raw.metadata.name), result.resource);
  }
  logger.info('restored the last accepted resources', { file, resources: out.size, ...(dropped ? { dropped } : {}) });
  return out;
}

/**
 * Writes the accepted versions when they change (by identity: the pipeline hands back the very same
 * objects for what did not change), at most once per `delayMs`, write-then-rename, mode 0600.
 */
export class AcceptedWriter {
  private saved: ReadonlyMap<string, LegateResource> = new Map();
  private pending: ReadonlyMap<string, LegateResource> | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly file: string,
    private readonly logger: Logger,
    initial: ReadonlyMap<string, LegateResource> = new Map(),
    private readonly delayMs = 200,
  ) {
    this.saved = initial;
  }

  update(accepted: ReadonlyMap<string, LegateResource>): void {
    if (sameEntries(accepted, this.pending ?? this.saved)) return;
    this.pending = accepted;
    this.timer ??= setTimeout(() => this.flush(), this.delayMs);
  }

  /** Writes what is pending now (also on stop). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const accepted = this.pending;
    if (!accepted) return;
    this.pending = undefined;
    // as read (a version kept because its file stopped loading is written without that mark)
    const resources = [...accepted.values()].filter((r) => r.kind !== 'Secret').map(({ raw: { loadError: _, ...raw } }) => raw);
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      fs.mkdirSync(path.dirname(this.file), { recursive: true });
      fs.writeFileSync(tmp, JSON.stringify({ format: FORMAT, resources } satisfies StoredFile), { mode: 0o600 });
      fs.renameSync(tmp, this.file);
      this.saved = accepted;
    } catch (err) {
      this.logger.error('cannot write the last accepted resources', { file: this.file, error: err });
      fs.rmSync(tmp, { force: true });
    }
  }
}

function sameEntries<K, V>(a: ReadonlyMap<K, V>, b: ReadonlyMap<K, V>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}
