// `make run` serves the README's curl examples: run examples/ as shipped (the app's port moved to a
// free one so the suite can run anywhere).
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startGateway, type Gateway } from './harness/gateway.js';
import { freePort } from './harness/util.js';

let gw: Gateway;

beforeAll(async () => {
  const appPort = await freePort();
  const files: Record<string, string> = {};
  const examples = path.join(ROOT, 'examples');
  for (const f of fs.readdirSync(examples)) {
    if (f.endsWith('.yaml')) files[f] = fs.readFileSync(path.join(examples, f), 'utf8').replaceAll('9001', String(appPort));
  }
  gw = await startGateway(files, { copy: { apps: path.join(examples, 'apps') } });
  await gw.until('/api/v1/products', (r) => r.status === 200);
});

afterAll(async () => {
  await gw?.stop();
});

describe('examples (make run)', () => {
  it('serves the product list through the discovered upstream', async () => {
    const r = await gw.request('/api/v1/products');
    expect(r.json<{ id: number; title: string }[]>().map((p) => p.id)).toEqual([1, 2, 3]);
  });

  it('serves details through a kube Service reference', async () => {
    expect((await gw.request('/details/2')).json()['pages']).toBe(154);
  });

  it('rewrites /store/ to /api/v1/', async () => {
    expect((await gw.request('/store/products')).status).toBe(200);
  });

  it('answers /hello directly and 404 elsewhere', async () => {
    expect((await gw.request('/hello')).text).toBe('hello from legate\n');
    expect((await gw.request('/nothing')).status).toBe(404);
  });

  it('lists the example resources as accepted', () => {
    const vs = gw.ctl('get', 'virtualservices');
    expect(vs.stdout).toMatch(/legate-system\s+default\s+Accepted/);
    expect(gw.ctl('get', 'upstreams').stdout).toMatch(/default-products-80\s+Accepted/);
  });
});
