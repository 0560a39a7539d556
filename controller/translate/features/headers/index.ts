// Headers: `headerManipulation` on virtual hosts, routes and weighted destinations (values inline or
// from header Secrets), and the route options that rewrite the Host header upstream (hostRewrite,
// autoHostRewrite, hostRewriteHeader, hostRewritePathRegex, appendXForwardedHost). Listed after
// routing: the Host rewrites are fields of the route action routing renders.
import type { Feature } from '../../feature.js';
import { headersRender } from './render.js';
import { headersBinding } from './resolve.js';

export const headersFeature: Feature = {
  name: 'headers',
  kinds: [],
  resolve: headersBinding,
  render: headersRender,
};
