// The scenarios, in run order. Add a scenario by writing a Scenario object (see ../lib/types.ts) and
// listing it here; `direct` stays first, it is the baseline of every ratio. The two sides of a pair are
// listed next to each other (rounds rotate the order, so they stay measured one right after the other),
// and a group (LoadScenario.group) must be.
import type { Scenario } from '../lib/types.js';
import {
  authCached,
  authCachedNoEdge,
  authEdgeOpen,
  authEdgePerWorker,
  authEdgeShared,
  authJwt,
  authJwtEnvoy,
  authJwtNoEdge,
  authJwtVerify,
  authOidcSession,
  authNewTokenWorkers,
  authUncached,
  authUnprotected,
  providerIntrospection,
} from './auth.js';
import { authBasic, authLdap, authOpa, authStepsUnprotected } from './auth-steps.js';
import { accessLogJson, accessLogJson17, accessLogOff } from './access-log.js';
import { ACCESS_LOG_VARIANTS } from './access-log-variants.js';
import { tracingOff, tracingSampled } from './tracing.js';
import { statsScraped, statsUnscraped } from './stats-scrape.js';
import { configScale } from './config-scale.js';
import { delegationScale } from './delegation-scale.js';
import { hcFleet } from './hc-fleet.js';
import { kubeScale } from './kube-scale.js';
import { webhookScale } from './webhook-scale.js';
import { direct } from './direct.js';
import {
  graphqlApolloFlat,
  graphqlApolloNested,
  graphqlDataloaderNested,
  graphqlLegateFlat,
  graphqlLegateNested,
  graphqlMercuriusFlat,
  graphqlMercuriusNested,
  graphqlPeerFlat,
  graphqlPeerNested,
  graphqlRestDirect,
  graphqlYogaFlat,
  graphqlYogaNested,
} from './graphql.js';
import { legateRoute } from './legate-route.js';
import { routeOptionsPlain, routeOptionsRich } from './route-options.js';
import { ratelimitDecisions, ratelimitLocal, ratelimitPlain, ratelimitRemote } from './ratelimit.js';
import { staticEnvoy } from './static-envoy.js';
import { wasmEnvoyGraphqlOff, wasmEnvoyGraphqlOn, wasmEnvoyOff, wasmEnvoyOn } from './wasm-envoy.js';
import {
  missingTokenExtauth,
  missingTokenWasm,
  wasmAuthOff,
  wasmAuthOffC1,
  wasmAuthOn,
  wasmAuthOnC1,
  wasmGraphqlOff,
  wasmGraphqlOn,
} from './wasm.js';

export const SCENARIOS: readonly Scenario[] = [
  direct,
  legateRoute,
  staticEnvoy,
  graphqlRestDirect,
  graphqlLegateFlat,
  graphqlPeerFlat,
  graphqlYogaFlat,
  graphqlApolloFlat,
  graphqlMercuriusFlat,
  graphqlLegateNested,
  graphqlPeerNested,
  graphqlYogaNested,
  graphqlApolloNested,
  graphqlMercuriusNested,
  graphqlDataloaderNested,
  authUnprotected,
  authCached,
  authCachedNoEdge,
  authUncached,
  authJwt,
  authJwtNoEdge,
  authJwtEnvoy,
  authJwtVerify,
  authEdgeOpen,
  authEdgeShared,
  authEdgePerWorker,
  authOidcSession,
  providerIntrospection,
  authStepsUnprotected,
  authLdap,
  authOpa,
  authBasic,
  missingTokenWasm,
  missingTokenExtauth,
  wasmAuthOn,
  wasmAuthOff,
  wasmAuthOnC1,
  wasmAuthOffC1,
  wasmGraphqlOn,
  wasmGraphqlOff,
  wasmEnvoyOn,
  wasmEnvoyOff,
  wasmEnvoyGraphqlOn,
  wasmEnvoyGraphqlOff,
  ratelimitPlain,
  ratelimitRemote,
  ratelimitLocal,
  routeOptionsPlain,
  routeOptionsRich,
  accessLogOff,
  accessLogJson,
  accessLogJson17,
  ...ACCESS_LOG_VARIANTS,
  tracingOff,
  tracingSampled,
  statsUnscraped,
  statsScraped,
  configScale,
  delegationScale,
  kubeScale,
  webhookScale,
  hcFleet,
  authNewTokenWorkers,
  ratelimitDecisions,
];
