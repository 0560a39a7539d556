// Browser-facing protections: `cors` on virtual hosts and routes (Envoy's CORS filter answers
// preflights itself and adds Access-Control-* headers) and `csrf` on virtual hosts, routes and
// weighted destinations (Envoy's CSRF filter refuses a state-changing request from another origin).
import type { Feature } from '../../feature.js';
import { corsRender } from './render.js';
import { corsBinding } from './resolve.js';

export const corsFeature: Feature = {
  name: 'cors',
  kinds: [],
  resolve: corsBinding,
  render: corsRender,
};
