// Function destinations: AWS Lambda (Upstream `aws`, route destinationSpec.aws) through Envoy's aws_lambda filter, and
// Azure Functions (Upstream `azure`, destinationSpec.azure) as a rewrite of the route's path, Host and function key.
import type { Feature } from '../../feature.js';
import { functionsRender } from './render.js';
import { bindFunctionRoute, resolveFunctionUpstream } from './resolve.js';

export const functionsFeature: Feature = {
  name: 'functions',
  kinds: [],
  resolveUpstream: resolveFunctionUpstream,
  resolve(ctx) {
    return { bindRoute: (route, ir, site, sink) => bindFunctionRoute(route, ir, site, sink, ctx) };
  },
  render: functionsRender,
};
