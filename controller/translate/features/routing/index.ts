// Routing: what a route does (forward to upstreams or Services, answer directly, redirect) and how it
// forwards (prefix rewrite, timeout, retries). Matchers are the core's: every route has them.
import type { Feature } from '../../feature.js';
import { routingRender } from './render.js';
import { routingBinding } from './resolve.js';

export const routingFeature: Feature = {
  name: 'routing',
  kinds: [],
  resolve: routingBinding,
  render: routingRender,
};
