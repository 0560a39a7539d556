// The JSON envelope of every admin/API answer (spec 4.3): {status, data, error}.
import type http from 'node:http';

export interface Envelope<T> {
  status: 'ok' | 'error';
  data?: T;
  error?: string;
}

export function sendJson<T>(res: http.ServerResponse, code: number, body: Envelope<T>): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendOk<T>(res: http.ServerResponse, data: T): void {
  sendJson(res, 200, { status: 'ok', data });
}

export function sendError(res: http.ServerResponse, code: number, error: string): void {
  sendJson(res, code, { status: 'error', error });
}
