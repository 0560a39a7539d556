// The console server's JSON API, as the pages read it.

export interface Summary {
  kind: string;
  namespace: string;
  name: string;
  state: string;
  reason?: string;
}

export interface Ref {
  kind: string;
  namespace: string;
  name: string;
  missing?: true;
}

export interface HistoryEvent {
  at: string;
  kind: string;
  namespace: string;
  name: string;
  change: string;
  state: string;
  reason?: string;
}

export interface Detail extends Summary {
  resource: { spec?: Record<string, unknown> } & Record<string, unknown>;
  yaml: string;
  references: Ref[];
  referencedBy: Ref[];
  history: HistoryEvent[];
  endpoints?: { host: string; path: string; via: string }[];
  /** Settings consoleOptions.apiExplorerEnabled false: why there is no explorer */
  explorerDisabled?: string;
}

export interface Overview {
  console: { version: string; metrics: string };
  controller: { healthy: boolean; version?: string; source?: { description: string; problems: string[] } };
  envoy: { healthy: boolean; state?: string; version?: string };
  connections: { role: string; nodeId: string; connectedAt: string }[];
  counts: Record<string, Record<string, number>>;
}

export async function get<T>(path: string): Promise<T> {
  const res = await fetch(path, { headers: { accept: 'application/json' } });
  const body = (await res.json()) as { status: string; data?: T; error?: string };
  if (body.status !== 'ok') throw new Error(body.error ?? `${path}: ${res.status}`);
  return body.data as T;
}

export function query(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}
