// File source: a watched directory of YAML files (many resources per file, `---` separated).
// A file that stops parsing keeps its last good resources and reports the error; other files load.
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../../common/log.js';
import type { RawResource } from '../../api/meta.js';
import { keyOf } from '../../api/resources.js';
import { parseResourcesReusing, type DocumentMemo, type ParseError } from '../parse.js';
import type { ResourceSource, SourceSnapshot } from '../source.js';

export type { SourceSnapshot } from '../source.js';

interface FileState {
  stamp: string;
  resources: RawResource[];
  errors: ParseError[];
  /** its documents as last parsed: an edit re-parses only the documents it changed */
  memo?: DocumentMemo;
}

/**
 * Wait after a watch event before rescanning: coalesces the events of one save (a write-then-rename raises two
 * within a millisecond) while adding little to an edit's time to served; a later event rescans again (cheap:
 * unchanged files and documents are not parsed again).
 */
const WATCH_DEBOUNCE_MS = 10;

const RESOURCE_FILE = /\.(ya?ml|json)$/i;
/** Files in the directory that configure `legate run` itself, not resources. */
export const NON_RESOURCE_FILES = new Set(['legate.values.yaml']);

export class FileSource implements ResourceSource {
  private readonly files = new Map<string, FileState>();
  readonly description: string;

  constructor(
    private readonly dir: string,
    private readonly logger: Logger,
    /** how often the directory is rescanned as a backstop to fs.watch */
    private readonly pollMs = 1000,
  ) {
    this.description = `directory ${dir}`;
  }

  /**
   * Seeds each file's last good resources with those read before a restart (origin `<file>#<n>`): a
   * file that does not parse at the first scan keeps them (marked with why), one that parses replaces
   * them, one that is gone drops them.
   */
  seed(resources: readonly RawResource[]): void {
    for (const r of resources) {
      const rel = r.origin.split('#')[0]!;
      const file = path.resolve(this.dir, rel);
      if (path.relative(this.dir, file).startsWith('..') || this.files.get(file)?.stamp) continue;
      const state = this.files.get(file) ?? { stamp: '', resources: [], errors: [] };
      state.resources.push(r);
      this.files.set(file, state);
    }
  }

  /** Reads changed files and returns the merged snapshot (and whether anything changed). */
  scan(): { snapshot: SourceSnapshot; changed: boolean } {
    let changed = false;
    const seen = new Set<string>();
    for (const file of listFiles(this.dir)) {
      seen.add(file);
      let stat: fs.Stats;
      try {
        stat = fs.statSync(file);
      } catch {
        continue; // removed between listing and stat
      }
      const stamp = `${stat.mtimeMs}:${stat.size}:${stat.ino}`;
      const previous = this.files.get(file);
      if (previous?.stamp === stamp) continue;
      changed = true;
      const rel = path.relative(this.dir, file);
      let text: string;
      try {
        text = fs.readFileSync(file, 'utf8');
      } catch (err) {
        this.files.set(file, {
          stamp,
          resources: previous?.resources ?? [],
          errors: [{ origin: rel, message: `cannot read: ${String(err)}` }],
        });
        continue;
      }
      const parsed = parseSafely(text, rel, previous?.memo);
      // Bad YAML loses nothing: keep what the file held when it last parsed, marked with why.
      const why = parsed.errors[0] ? `${parsed.errors[0].origin}: ${parsed.errors[0].message}` : `${rel} does not load`;
      const resources = parsed.syntaxError
        ? (previous?.resources ?? []).map((r) => ({ ...r, loadError: `its file does not load: ${why}` }))
        : parsed.resources;
      for (const e of parsed.errors) this.logger.error('cannot load resource', { origin: e.origin, error: e.message });
      const memo = parsed.syntaxError ? previous?.memo : parsed.memo;
      this.files.set(file, { stamp, resources, errors: parsed.errors, ...(memo ? { memo } : {}) });
    }
    for (const file of [...this.files.keys()]) {
      if (!seen.has(file)) {
        this.files.delete(file);
        changed = true;
      }
    }
    return { snapshot: this.merge(), changed };
  }

  private merge(): SourceSnapshot {
    const byKey = new Map<string, RawResource>();
    const errors: ParseError[] = [];
    for (const file of [...this.files.keys()].sort()) {
      const state = this.files.get(file)!;
      errors.push(...state.errors);
      for (const r of state.resources) {
        const key = keyOf(r);
        const earlier = byKey.get(key);
        if (earlier && earlier.origin.split('#')[0] !== r.origin.split('#')[0]) {
          errors.push({
            origin: r.origin,
            message: `${r.kind} ${r.metadata.namespace}.${r.metadata.name} is also defined in ${earlier.origin}; using this one`,
          });
        }
        byKey.set(key, r);
      }
    }
    return { resources: [...byKey.values()], errors };
  }

  /** Scans now and on every change until `signal` aborts. Changes are debounced. */
  watch(signal: AbortSignal, onChange: (snapshot: SourceSnapshot) => void): void {
    const first = this.scan();
    onChange(first.snapshot);
    let timer: NodeJS.Timeout | undefined;
    const rescan = (): void => {
      timer = undefined;
      if (signal.aborted) return;
      const { snapshot, changed } = this.scan();
      if (changed) onChange(snapshot);
    };
    const soon = (): void => {
      if (!timer) timer = setTimeout(rescan, WATCH_DEBOUNCE_MS);
    };
    // One non-recursive watcher per directory: a directory watch sees files created, changed and
    // renamed into place, whereas Node's recursive mode on Linux follows file inodes and goes blind
    // to a file once an editor replaces it.
    const watchers = new Map<string, fs.FSWatcher>();
    const watchDirs = (): void => {
      if (signal.aborted) return;
      const dirs = new Set(listDirs(this.dir));
      for (const [d, w] of watchers) {
        if (!dirs.has(d)) {
          w.close();
          watchers.delete(d);
        }
      }
      for (const d of dirs) {
        if (watchers.has(d)) continue;
        try {
          const w = fs.watch(d, (event) => {
            soon();
            if (event === 'rename') watchDirs(); // a directory may have appeared or gone
          });
          w.on('error', () => {
            w.close();
            watchers.delete(d);
          });
          watchers.set(d, w);
        } catch (err) {
          this.logger.warn('cannot watch directory; polling only', { dir: d, error: err });
        }
      }
    };
    watchDirs();
    // Polling backs up the watcher (editors that replace files, network file systems).
    const poll = setInterval(soon, this.pollMs);
    signal.addEventListener('abort', () => {
      for (const w of watchers.values()) w.close();
      clearInterval(poll);
      if (timer) clearTimeout(timer);
    });
  }
}

/** parseResourcesReusing, with anything it throws turned into a load error of the file (never a crash of the watch loop). */
function parseSafely(text: string, rel: string, memo: DocumentMemo | undefined): ReturnType<typeof parseResourcesReusing> {
  try {
    return parseResourcesReusing(text, rel, memo);
  } catch (err) {
    const message = `cannot parse: ${err instanceof Error ? err.message : String(err)}`;
    return { resources: [], errors: [{ origin: rel, message }], syntaxError: true, memo: { documents: new Map() } };
  }
}

function listDirs(dir: string): string[] {
  const out = [dir];
  for (const e of safeReaddir(dir)) {
    if (e.isDirectory() && !e.name.startsWith('.')) out.push(...listDirs(path.join(dir, e.name)));
  }
  return out;
}

function safeReaddir(dir: string): fs.Dirent[] {
  try {
    return fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}

/** The resource files under `dir` (recursive; hidden and `legate run` files left out), sorted. */
export function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.name.startsWith('.')) continue;
      const full = path.join(d, e.name);
      if (e.isDirectory()) walk(full);
      else if (RESOURCE_FILE.test(e.name) && !NON_RESOURCE_FILES.has(e.name)) out.push(full);
    }
  };
  walk(dir);
  return out.sort();
}
