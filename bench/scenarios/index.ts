// The scenarios, in run order. Add a scenario by writing a Scenario object (see ../lib/types.ts) and
// listing it here; `direct` stays first, it is the baseline of every ratio.
import type { Scenario } from '../lib/types.js';
import { authCached, authUncached, authUnprotected, providerIntrospection } from './auth.js';
import { configScale } from './config-scale.js';
import { direct } from './direct.js';
import {
  graphqlLegateFlat,
  graphqlLegateNested,
  graphqlPeerFlat,
  graphqlPeerNested,
  graphqlRestDirect,
  graphqlYogaFlat,
  graphqlYogaNested,
} from './graphql.js';
import { legateRoute } from './legate-route.js';
import { staticEnvoy } from './static-envoy.js';

export const SCENARIOS: readonly Scenario[] = [
  direct,
  legateRoute,
  staticEnvoy,
  graphqlRestDirect,
  graphqlLegateFlat,
  graphqlPeerFlat,
  graphqlYogaFlat,
  graphqlLegateNested,
  graphqlPeerNested,
  graphqlYogaNested,
  authUnprotected,
  authCached,
  authUncached,
  providerIntrospection,
  configScale,
];
