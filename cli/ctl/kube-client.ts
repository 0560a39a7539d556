// legatectl's way to the Kubernetes API server: @kubernetes/client-node's KubeConfig (kubeconfig
// files, contexts, tokens, client certificates, exec and OIDC plugins, in-cluster) applied to plain
// node:https requests. Plain requests, because legatectl needs what the generated clients cannot
// give: JSON exactly as the API server sends it (debug yaml writes it out), the pod proxy with the
// proxied request's own query string (`/stats?filter=…`), and the pod log as a stream.
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import * as k8s from '@kubernetes/client-node';
import { CliError } from './errors.js';
import { defaultKubeconfig } from './kube-defaults.js';

export interface KubeTarget {
  /** --kubeconfig */
  kubeconfig?: string | undefined;
  /** --kube-context */
  context?: string | undefined;
}

/** An answer of the API server that is not a success: its Status message, HTTP code and reason. */
export class KubeApiError extends CliError {
  constructor(
    message: string,
    readonly code: number,
    readonly reason: string | undefined,
  ) {
    super(message);
  }
}

type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

interface RequestOptions {
  timeoutMs?: number;
  accept?: string;
  /** a request body (writes: server-side apply, update) and its type */
  body?: string;
  contentType?: string;
}

export interface KubeResponse {
  status: number;
  contentType: string;
  text: string;
}

/** The Status object the API server answers errors with. */
interface KubeStatus {
  kind: 'Status';
  apiVersion: 'v1';
  message?: string;
  reason?: string;
  code?: number;
}

export function asKubeStatus(contentType: string, text: string): KubeStatus | undefined {
  if (!contentType.startsWith('application/json')) return undefined;
  try {
    const body = JSON.parse(text) as Partial<KubeStatus>;
    return body.kind === 'Status' && body.apiVersion === 'v1' ? (body as KubeStatus) : undefined;
  } catch {
    return undefined;
  }
}

export class KubeClient {
  /** the API server's URL, without a trailing slash */
  readonly server: string;
  readonly context: string;
  /** where the configuration came from: a file, KUBECONFIG=…, or the in-cluster service account */
  readonly source: string;

  private constructor(
    private readonly config: k8s.KubeConfig,
    source: string,
    private readonly note: string | undefined,
  ) {
    this.source = source;
    this.context = config.getCurrentContext();
    this.server = (config.getCurrentCluster()?.server ?? '').replace(/\/+$/, '');
  }

  /** `note`: why this cluster, said with every error about reaching it */
  static load(target: KubeTarget, note?: string): KubeClient {
    const config = new k8s.KubeConfig();
    let source: string;
    try {
      if (target.kubeconfig) {
        if (!fs.existsSync(target.kubeconfig)) throw new CliError(`--kubeconfig ${target.kubeconfig}: no such file`);
        config.loadFromFile(target.kubeconfig);
        source = target.kubeconfig;
      } else {
        const found = defaultKubeconfig();
        if (!found) {
          throw new CliError(
            'no kubeconfig found (KUBECONFIG is unset, ~/.kube/config does not exist, not in a pod); pass --kubeconfig PATH',
          );
        }
        if (found === 'in-cluster service account') config.loadFromCluster();
        else config.loadFromDefault();
        source = found;
      }
    } catch (err) {
      if (err instanceof CliError) throw err;
      throw new CliError(`cannot read the kubeconfig: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (target.context) {
      const names = config.getContexts().map((c) => c.name);
      if (!names.includes(target.context)) {
        throw new CliError(`--kube-context ${target.context}: no such context in ${source} (it has: ${names.join(', ') || 'none'})`);
      }
      config.setCurrentContext(target.context);
    }
    if (!config.getCurrentContext() && source !== 'in-cluster service account') {
      const names = config.getContexts().map((c) => c.name);
      throw new CliError(`${source} has no current context; pass --kube-context NAME (one of: ${names.join(', ') || 'none'})`);
    }
    if (!config.getCurrentCluster()?.server)
      throw new CliError(`${source}: the context ${config.getCurrentContext()} names no cluster server`);
    return new KubeClient(config, source, note);
  }

  /** One line for messages: which cluster, through which context and file. */
  describe(): string {
    return `${this.server} (context ${this.context || 'in-cluster'} of ${this.source}${this.note ? `; ${this.note}` : ''})`;
  }

  /** Sends a request; `pathAndQuery` is sent as given (callers encode). Resolves with any HTTP status. */
  async request(method: Method, pathAndQuery: string, options: RequestOptions = {}): Promise<KubeResponse> {
    const { res, done } = await this.open(method, pathAndQuery, options);
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    await done;
    return {
      status: res.statusCode ?? 0,
      contentType: String(res.headers['content-type'] ?? ''),
      text: Buffer.concat(chunks).toString('utf8'),
    };
  }

  /** GET of an API object or list; an answer other than 2xx becomes a KubeApiError with the server's message. */
  async json<T>(pathAndQuery: string): Promise<T> {
    const res = await this.request('GET', pathAndQuery);
    if (res.status >= 200 && res.status < 300) return JSON.parse(res.text) as T;
    throw this.apiError(res, `GET ${pathAndQuery}`);
  }

  apiError(res: KubeResponse, what: string): KubeApiError {
    const status = asKubeStatus(res.contentType, res.text);
    const message = status?.message ?? (res.text.trim().slice(0, 300) || `HTTP ${res.status}`);
    return new KubeApiError(`${what}: ${message}`, res.status, status?.reason);
  }

  /** GET whose body is written out as it arrives (a followed pod log) until the server ends it. */
  async stream(pathAndQuery: string, write: (text: string) => void): Promise<void> {
    const { res, done } = await this.open('GET', pathAndQuery, { timeoutMs: 0, accept: '*/*' });
    if ((res.statusCode ?? 0) >= 300) {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      await done;
      const text = Buffer.concat(chunks).toString('utf8');
      throw this.apiError(
        { status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), text },
        `GET ${pathAndQuery}`,
      );
    }
    res.setEncoding('utf8');
    res.on('data', (c: string) => write(c));
    await done;
  }

  private async open(
    method: Method,
    pathAndQuery: string,
    options: RequestOptions,
  ): Promise<{ res: http.IncomingMessage; done: Promise<void> }> {
    const url = new URL(this.server + pathAndQuery);
    const opts: https.RequestOptions = { method, headers: { accept: options.accept ?? 'application/json, */*' } };
    try {
      await this.config.applyToHTTPSOptions(opts);
    } catch (err) {
      throw new CliError(`cannot authenticate to ${this.describe()}: ${err instanceof Error ? err.message : String(err)}`);
    }
    const plain = url.protocol === 'http:';
    if (plain) delete opts.agent; // an https.Agent cannot carry plain HTTP
    const timeoutMs = options.timeoutMs ?? 15_000;
    return new Promise((resolve, reject) => {
      const req = (plain ? http : https).request(url, opts, (res) => {
        const done = new Promise<void>((end, fail) => {
          res.once('end', () => end());
          res.once('error', fail);
          res.once('close', () => end());
        });
        resolve({ res, done });
      });
      if (timeoutMs > 0) req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs / 1000} s`)));
      req.once('error', (err) => reject(new CliError(`cannot reach the Kubernetes API server ${this.describe()}: ${err.message}`)));
      if (options.body !== undefined) {
        req.setHeader('content-type', options.contentType ?? 'application/json');
        req.setHeader('content-length', Buffer.byteLength(options.body));
        req.end(options.body);
      } else {
        if (method !== 'GET') req.setHeader('content-length', 0);
        req.end();
      }
    });
  }
}
