// The Gloo AuthConfig step kinds Legate resolves, by their key in `configs[i]`. Adding a kind: a file here
// exporting a StepResolver (and the extauth side: extensions/extauth/steps/), and one line below.
import type { StepResolver } from './common.js';
import { resolveApiKeyAuth } from './api-key-auth.js';
import { resolveOAuth2 } from './oauth2.js';

export const STEP_RESOLVERS: Readonly<Record<string, { resolve: StepResolver; label: string }>> = {
  oauth2: { resolve: resolveOAuth2, label: 'oauth2' },
  apiKeyAuth: { resolve: resolveApiKeyAuth, label: 'apiKeyAuth' },
};
