// An ADS (State of the World) client for the extension services: subscribes to one type URL as a
// role, hands every full set to `apply`, ACKs it, or NACKs it when `apply` throws, and reconnects
// with backoff. Until the first set arrives and after losing the controller, the last applied config
// stays in use (fail closed comes from the services: an unknown config denies).
import fs from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../../common/log.js';
import { loadEnvoyService, lookupService } from './grpc.js';

export interface XdsClientOptions {
  /** host:port of the controller's xDS server */
  address: string;
  role: string;
  nodeId: string;
  typeUrl: string;
  logger: Logger;
  /** Called with the full set of resources (each an Any's value). Throw to NACK (the previous set stays in use). */
  apply(resources: Uint8Array[], version: string): void;
}

interface AnyMsg {
  type_url: string;
  value: Buffer;
}

interface DiscoveryResponseMsg {
  version_info: string;
  resources: AnyMsg[];
  type_url: string;
  nonce: string;
}

type AdsStream = grpc.ClientDuplexStream<Record<string, unknown>, DiscoveryResponseMsg>;

export class XdsClient {
  private client: grpc.Client | undefined;
  private stream: AdsStream | undefined;
  private stopped = false;
  private backoffMs = 100;
  private acceptedVersion = '';
  private timer: NodeJS.Timeout | undefined;
  connected = false;
  /** Number of sets applied (for health/readiness). */
  applied = 0;

  constructor(private readonly options: XdsClientOptions) {}

  start(): void {
    const Ads = lookupService(
      loadEnvoyService('envoy/service/discovery/v3/ads.proto'),
      'envoy.service.discovery.v3.AggregatedDiscoveryService',
    );
    this.client = new Ads(this.options.address, xdsCredentials(process.env['LEGATE_XDS_TLS']), {
      'grpc.keepalive_time_ms': 30000,
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 2000,
    });
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.stream?.cancel();
    this.client?.close();
  }

  private node(): Record<string, unknown> {
    return {
      id: this.options.nodeId,
      cluster: this.options.role,
      // protobufjs' built-in Struct is camelCase
      metadata: { fields: { role: { stringValue: this.options.role } } },
      user_agent_name: 'legate',
    };
  }

  private connect(): void {
    if (this.stopped || !this.client) return;
    const log = this.options.logger;
    const method = (this.client as unknown as Record<string, (...args: unknown[]) => AdsStream>)['StreamAggregatedResources'];
    if (!method) throw new Error('StreamAggregatedResources missing from the ADS client');
    const stream = method.call(this.client);
    this.stream = stream;
    let gotResponse = false;
    stream.on('data', (res: DiscoveryResponseMsg) => {
      if (!gotResponse) {
        gotResponse = true;
        this.connected = true;
        this.backoffMs = 100;
        log.info('connected to the controller', { address: this.options.address, role: this.options.role });
      }
      this.onResponse(stream, res);
    });
    const retry = (reason: string): void => {
      if (this.stream !== stream) return;
      this.stream = undefined;
      if (this.connected) log.warn('lost the controller; keeping the last config', { reason });
      this.connected = false;
      if (this.stopped) return;
      this.timer = setTimeout(() => this.connect(), this.backoffMs);
      this.backoffMs = Math.min(this.backoffMs * 2, 5000);
    };
    stream.on('error', (err: grpc.ServiceError) => retry(err.details || err.message));
    stream.on('end', () => retry('stream ended'));
    stream.write({ node: this.node(), type_url: this.options.typeUrl, resource_names: [], version_info: this.acceptedVersion });
  }

  private onResponse(stream: AdsStream, res: DiscoveryResponseMsg): void {
    const log = this.options.logger;
    try {
      const resources: Uint8Array[] = [];
      for (const any of res.resources ?? []) {
        if (any.type_url !== this.options.typeUrl) throw new Error(`unexpected resource type ${any.type_url}`);
        resources.push(any.value);
      }
      this.options.apply(resources, res.version_info);
      this.acceptedVersion = res.version_info;
      this.applied++;
      stream.write({
        node: this.node(),
        type_url: res.type_url,
        version_info: res.version_info,
        response_nonce: res.nonce,
        resource_names: [],
      });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      log.error('rejecting config from the controller', { version: res.version_info, error: message });
      stream.write({
        node: this.node(),
        type_url: res.type_url,
        version_info: this.acceptedVersion,
        response_nonce: res.nonce,
        resource_names: [],
        error_detail: { code: 3, message },
      });
    }
  }
}

/**
 * Credentials for the xDS connection: plaintext, or mutual TLS when `dir` (LEGATE_XDS_TLS, which
 * `legate run --xds-tls` sets) holds `ca.crt` (the controller's certificate must chain to it) and this
 * client's `tls.crt` and `tls.key`, as a Kubernetes TLS Secret mounts them.
 */
export function xdsCredentials(dir: string | undefined): grpc.ChannelCredentials {
  if (!dir) return grpc.credentials.createInsecure();
  const read = (name: string): Buffer => fs.readFileSync(path.join(dir, name));
  return grpc.credentials.createSsl(read('ca.crt'), read('tls.key'), read('tls.crt'));
}
