// The Gloo AuthConfig step kinds Legate resolves, by their key in `configs[i]`. Adding a kind: a file here
// exporting a StepResolver (and the extauth side: extensions/extauth/steps/), and one line below.
import type { StepResolver } from './common.js';
import { resolveApiKeyAuth } from './api-key-auth.js';
import { resolveDeprecatedOAuth, resolveOAuth2 } from './oauth2.js';
import { resolveBasicAuth } from './basic-auth.js';
import { resolveLdap } from './ldap.js';
import { resolveOpaAuth } from './opa-auth.js';
import { resolveOpaServerAuth } from './opa-server-auth.js';
import { resolvePassThroughAuth } from './pass-through-auth.js';
import { resolveHmacAuth } from './hmac-auth.js';
import { resolveJwt } from './jwt.js';

export const STEP_RESOLVERS: Readonly<Record<string, { resolve: StepResolver; label: string }>> = {
  oauth2: { resolve: resolveOAuth2, label: 'oauth2' },
  apiKeyAuth: { resolve: resolveApiKeyAuth, label: 'apiKeyAuth' },
  basicAuth: { resolve: resolveBasicAuth, label: 'basicAuth' },
  ldap: { resolve: resolveLdap, label: 'ldap' },
  opaAuth: { resolve: resolveOpaAuth, label: 'opaAuth' },
  opaServerAuth: { resolve: resolveOpaServerAuth, label: 'opaServerAuth' },
  passThroughAuth: { resolve: resolvePassThroughAuth, label: 'passThroughAuth' },
  hmacAuth: { resolve: resolveHmacAuth, label: 'hmacAuth' },
  jwt: { resolve: resolveJwt, label: 'jwt' },
  oauth: { resolve: resolveDeprecatedOAuth, label: 'oauth (deprecated)' },
};
