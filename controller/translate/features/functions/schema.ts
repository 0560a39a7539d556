// The Upstream types of function destinations this feature renders: AWS Lambda (`aws`, aws.proto) and Azure Functions
// (`azure`, azure.proto). The routes' DestinationSpecs are with the destinations (features/routing/schema.ts);
// controller/api/schemas.ts passes the aws one in, for an aws Upstream's destinationOverrides.
import { z } from 'zod';
import { Name, ResourceRefSchema, protoEnum } from '../../../api/primitives.js';

/** Gloo's roleArn: the role Gloo's own filter assumes through STS before signing. */
export const ROLE_ARN_NOT_SUPPORTED =
  "Envoy's aws_lambda filter (1.40) takes static credentials or a credentials-file profile in its config and assumes a " +
  'role only from the environment of the Envoy process (AWS_ROLE_ARN with a web identity token), not per Upstream; ' +
  'put credentials for the role in the secretRef Secret';

const LambdaFunctionSchema = z.strictObject({
  /** defaults to lambdaFunctionName + qualifier, as in Gloo */
  logicalName: z.string().optional(),
  /** a function name, or a full function ARN */
  lambdaFunctionName: Name,
  qualifier: z
    .string()
    .regex(/^[A-Za-z0-9$_-]*$/, 'expected a version or alias (letters, digits, $, _, -)')
    .optional(),
});
export type LambdaFunction = z.infer<typeof LambdaFunctionSchema>;

/** Gloo's aws UpstreamSpec; `destinationSpec` is the route's aws DestinationSpec schema (for destinationOverrides). */
export function awsUpstreamSchema<D extends z.ZodType>(destinationSpec: D) {
  return z.strictObject({
    region: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, 'expected an AWS region such as us-east-1'),
    secretRef: ResourceRefSchema.optional(),
    lambdaFunctions: z.array(LambdaFunctionSchema).optional(),
    roleArn: z
      .string()
      .refine((v) => v === '', `NotSupported: ${ROLE_ARN_NOT_SUPPORTED}`)
      .optional(),
    awsAccountId: z
      .string()
      .regex(/^(\d{12})?$/, 'expected a 12-digit AWS account ID')
      .optional(),
    disableRoleChaining: z
      .boolean()
      .refine((v) => !v, `NotSupported: role chaining is part of assuming roleArn, and ${ROLE_ARN_NOT_SUPPORTED}`)
      .optional(),
    destinationOverrides: destinationSpec.optional(),
    /**
     * Legate's: the Lambda API's `host:port` in place of lambda.<region>.amazonaws.com:443 (HTTPS either way), e.g. an
     * interface VPC endpoint or a local stand-in; Gloo has no such field
     */
    endpoint: z
      .string()
      .regex(/^[A-Za-z0-9.-]+:\d{1,5}$/, 'expected host:port')
      .optional(),
  });
}

export const AZURE_AUTH_LEVELS = ['Anonymous', 'Function', 'Admin'] as const;

/** Gloo's azure UpstreamSpec. */
export const AzureUpstreamSchema = z.strictObject({
  functionAppName: z.string().regex(/^[A-Za-z0-9-]+$/, 'expected a Function App name (letters, digits, -)'),
  /** a Secret with the function keys: `<functionName>` or `_master` (or Gloo's `azure` key with apiKeys) */
  secretRef: ResourceRefSchema.optional(),
  functions: z.array(z.strictObject({ functionName: Name, authLevel: protoEnum(AZURE_AUTH_LEVELS).optional() })).optional(),
});
export type AzureUpstream = z.infer<typeof AzureUpstreamSchema>;

/** The Upstream types this feature owns, for UpstreamSpecSchema. */
export function functionUpstreamTypes<D extends z.ZodType>(awsDestinationSpec: D) {
  return { aws: awsUpstreamSchema(awsDestinationSpec).optional(), azure: AzureUpstreamSchema.optional() };
}
