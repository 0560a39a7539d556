// The building blocks every schema shares (durations, names, references), and `notSupported`: a real
// Gloo field Legate does not implement, refused with a reason instead of the "unknown field" a typo
// gets. Feature folders build their option schemas from these (features/<name>/schema.ts), so this
// module imports nothing of Legate's.
import { z } from 'zod';

export const DURATION_PATTERN = /^(\d+(\.\d+)?)(ms|s|m|h)$/;
export const Duration = z.string().regex(DURATION_PATTERN, 'expected a duration such as "15s", "1.5s" or "250ms"');

export const Name = z.string().min(1, 'must not be empty');

/** Gloo's percentages (shadowing, faults, tracing): 0 to 100. */
export const Percentage = z.number().min(0, 'must be between 0 and 100').max(100, 'must be between 0 and 100');

export const ResourceRefSchema = z.strictObject({ name: Name, namespace: z.string().optional() });
export type ResourceRef = z.infer<typeof ResourceRefSchema>;

/** The message prefix formatIssues keeps as the whole reason of a not-supported field. */
export const NOT_SUPPORTED = 'NotSupported';

/**
 * A field Gloo has and Legate refuses: any value is an error that says so (and why), so a user who
 * relies on it (often a security control) never gets a resource that is Accepted without it.
 */
export function notSupported(reason: string): z.ZodOptional<z.ZodUnknown> {
  return z
    .unknown()
    .superRefine((_value, ctx) => {
      ctx.addIssue({ code: 'custom', message: `${NOT_SUPPORTED}: ${reason}` });
    })
    .optional();
}

/** Every key of `fields` refused with one reason (for Gloo's blocks Legate has none of). */
export function notSupportedFields<K extends string>(keys: readonly K[], reason: string): Record<K, z.ZodOptional<z.ZodUnknown>> {
  return Object.fromEntries(keys.map((k) => [k, notSupported(reason)])) as Record<K, z.ZodOptional<z.ZodUnknown>>;
}

/** A protobuf enum as Gloo's CRDs take it: by name, or by number (its position in `names`). */
export function protoEnum<const N extends readonly [string, ...string[]]>(names: N) {
  return z.union(
    [
      z.enum(names),
      z
        .number()
        .int()
        .min(0)
        .max(names.length - 1),
    ],
    {
      error: `expected one of ${names.join(', ')} (or its number, 0 to ${names.length - 1})`,
    },
  );
}
