// The admin interface takes writes (PUT /logging) without a token only on loopback; bound beyond it,
// a write needs `Authorization: Bearer <LEGATE_ADMIN_TOKEN>` and is refused when no token is set.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { adminWriteRefusal, isLoopbackHost, startAdminServer } from '../../common/admin.js';
import { createLogger } from '../../common/log.js';
import { SpanRecorder } from '../../common/trace.js';

describe('admin writes beyond loopback', () => {
  it('tells loopback hosts apart', () => {
    expect(['127.0.0.1', '127.1.2.3', '::1', 'localhost'].map(isLoopbackHost)).toEqual([true, true, true, true]);
    expect(['0.0.0.0', '::', '10.0.0.5', '', '127.0.0.1.evil'].map(isLoopbackHost)).toEqual([false, false, false, false, false]);
  });

  it('refuses writes without a configured token, and with a wrong or missing one', () => {
    expect(adminWriteRefusal('127.0.0.1', undefined, undefined)).toBeUndefined();
    expect(adminWriteRefusal('0.0.0.0', undefined, 'Bearer x')?.[0]).toBe(403);
    expect(adminWriteRefusal('0.0.0.0', 's3cret', undefined)?.[0]).toBe(401);
    expect(adminWriteRefusal('0.0.0.0', 's3cret', 'Bearer nope')?.[0]).toBe(401);
    expect(adminWriteRefusal('0.0.0.0', 's3cret', 'Bearer s3cret')).toBeUndefined();
  });

  it('a server bound to all addresses takes PUT /logging only with the token (reached over loopback)', async () => {
    const logger = createLogger('test', { level: 'error' });
    const admin = await startAdminServer({
      component: 'test',
      host: '0.0.0.0',
      port: 0,
      logger,
      registry: new Registry(),
      spans: new SpanRecorder(),
      writeToken: 'the-admin-token',
    });
    const put = (headers: Record<string, string>) =>
      fetch(`http://127.0.0.1:${admin.port}/logging`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ level: 'warn' }),
      });
    try {
      expect((await put({})).status).toBe(401);
      expect((await put({ authorization: 'Bearer wrong' })).status).toBe(401);
      expect(logger.level).toBe('error');
      expect((await put({ authorization: 'Bearer the-admin-token' })).status).toBe(200);
      expect(logger.level).toBe('warn');
      expect((await fetch(`http://127.0.0.1:${admin.port}/logging`)).status).toBe(200);
    } finally {
      await admin.stop();
    }
  });
});
