// admission.k8s.io/v1 AdmissionReview in, AdmissionReview out: the request's objects as the RawResources the
// pipeline reads, the Validator's verdict as the response. Pure.
import { isKnownKind } from '../api/kinds.js';
import type { RawResource } from '../api/meta.js';
import { toRawResource, trimObject, type KubeObject } from '../source/kubernetes/convert.js';
import type { Change, Operation, Verdict } from './admission.js';

export interface AdmissionRequest {
  uid: string;
  kind: { group: string; version: string; kind: string };
  namespace?: string;
  name?: string;
  operation: Operation;
  object?: KubeObject | null;
  oldObject?: KubeObject | null;
  dryRun?: boolean;
}

export interface AdmissionReview {
  apiVersion: string;
  kind: 'AdmissionReview';
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { message: string };
  warnings?: string[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The request of an AdmissionReview body, or why it is not one. */
export function parseReview(body: unknown): AdmissionRequest | string {
  if (!isRecord(body) || body['kind'] !== 'AdmissionReview') return 'not an AdmissionReview';
  const req = body['request'];
  if (!isRecord(req) || typeof req['uid'] !== 'string' || !isRecord(req['kind']) || typeof req['operation'] !== 'string')
    return 'AdmissionReview without a request (uid, kind, operation)';
  return req as unknown as AdmissionRequest;
}

function toRaw(req: AdmissionRequest, obj: KubeObject | null | undefined): RawResource | undefined {
  if (!obj) return undefined;
  const { group, version, kind } = req.kind;
  const copy = structuredClone(obj);
  copy.metadata = {
    ...copy.metadata,
    namespace: copy.metadata?.namespace ?? req.namespace ?? 'default',
    name: copy.metadata?.name ?? req.name,
  };
  return toRawResource(trimObject(copy), group ? `${group}/${version}` : version, kind);
}

/** The change a request asks for; undefined for a kind the pipeline does not read. */
export function changeOf(req: AdmissionRequest): Change | undefined {
  if (!isKnownKind(req.kind.kind)) return undefined;
  const object = toRaw(req, req.object);
  // a delete names what goes even where the API server sends no oldObject
  const oldObject =
    toRaw(req, req.oldObject) ??
    (req.operation === 'DELETE' && req.name
      ? toRaw(req, { metadata: { name: req.name, namespace: req.namespace ?? 'default' } })
      : undefined);
  return { operation: req.operation, ...(object ? { object } : {}), ...(oldObject ? { oldObject } : {}) };
}

/** The AdmissionReview answering `req`. */
export function responseReview(apiVersion: string, req: AdmissionRequest, verdict: Verdict): AdmissionReview {
  const response: AdmissionResponse = { uid: req.uid, allowed: verdict.allowed };
  if (!verdict.allowed) {
    // a message without a code or reason: the API server and kubectl show it whole
    // ("admission webhook … denied the request: <message>"); a 422 would read "… is invalid"
    response.status = { message: verdict.message ?? 'refused' };
  }
  if (verdict.warnings.length) response.warnings = verdict.warnings.map((w) => (w.length > 1000 ? `${w.slice(0, 1000)}…` : w));
  return { apiVersion, kind: 'AdmissionReview', response };
}
