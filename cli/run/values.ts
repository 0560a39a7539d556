// `legate.values.yaml` in the config directory: settings of `legate run` itself (the stand-in for
// Helm chart values): per-component log levels and extra processes such as example upstreams.
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { formatIssues } from '../../controller/api/schemas.js';
import { LOG_LEVELS } from '../../common/log.js';

const Level = z.enum(LOG_LEVELS);
const EnvoyLevel = z.enum(['trace', 'debug', 'info', 'warning', 'warn', 'error', 'critical', 'off']);

const ValuesSchema = z.strictObject({
  controller: z.strictObject({ logLevel: Level.optional() }).optional(),
  graphql: z.strictObject({ logLevel: Level.optional() }).optional(),
  extauth: z.strictObject({ logLevel: Level.optional() }).optional(),
  ratelimit: z.strictObject({ logLevel: Level.optional() }).optional(),
  console: z.strictObject({ logLevel: Level.optional() }).optional(),
  proxy: z.strictObject({ logLevel: EnvoyLevel.optional() }).optional(),
  processes: z
    .array(
      z.strictObject({
        name: z.string().regex(/^[a-z0-9-]+$/, 'lowercase letters, digits and dashes'),
        command: z.array(z.string()).min(1),
        env: z.record(z.string(), z.string()).optional(),
      }),
    )
    .optional(),
});
export type RunValues = z.infer<typeof ValuesSchema>;

export const VALUES_FILE = 'legate.values.yaml';

export function readValues(configDir: string): RunValues {
  const file = path.join(configDir, VALUES_FILE);
  if (!fs.existsSync(file)) return {};
  const parsed = ValuesSchema.safeParse(parse(fs.readFileSync(file, 'utf8')) ?? {});
  if (!parsed.success) throw new Error(`${file}: ${formatIssues('', parsed.error)}`);
  return parsed.data;
}
